#!/usr/bin/env python3
"""Fails when two files of a crate import each other (issue 14: the module graph reads top-down),
or when a source file is longer than 800 lines without saying why at its top (a line
`//! Longer than 800 lines: <reason>` in its first 30 lines).

A file imports another when it names a path into it: `crate::a::b::…`, `super::…` or
`self::…` resolved to the longest prefix that is a module file of the same crate (`a/b.rs`,
`a/b/mod.rs`). Comment lines are skipped (doc links are not imports). A module and its own
children are one unit: a parent declares its children with `mod`, and a child may use its
parent's items, so plain `child::…` paths inside the parent are not counted.

Usage: scripts/check_imports.py [ROOT]   (exit status 1 and the pairs when there are any)
"""

import pathlib
import re
import sys

PATH = re.compile(r"\b(crate|super(?:::super)*|self)::([A-Za-z0-9_:]+)")


def modules(src):
    """{module path (tuple): file} of one crate's src/."""
    out = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("lib", "main", "mod"):
            parts = parts[:-1]
        out[tuple(parts)] = f
    return out


def imports(path, f, mods):
    """The module files `f` (module `path`) names."""
    text = "\n".join(l for l in f.read_text().splitlines() if not l.lstrip().startswith("//"))
    is_dir_module = f.name in ("mod.rs", "lib.rs", "main.rs")
    parent = list(path) if is_dir_module else list(path[:-1])
    found = set()
    for m in PATH.finditer(text):
        head, rest = m.group(1), m.group(2).split("::")
        if head == "crate":
            base = []
        elif head == "self":
            base = list(path)
        else:
            ups = head.count("super")
            base = parent[: len(parent) - (ups - 1)] if ups > 1 else parent
        segs = base + rest
        for k in range(len(segs), -1, -1):
            t = tuple(segs[:k])
            if t in mods:
                if mods[t] != f:
                    found.add(t)
                break
    return found


def circles(root):
    out = []
    for crate in sorted((root / "crates").iterdir()):
        src = crate / "src"
        if not src.is_dir():
            continue
        mods = modules(src)
        edges = {p: imports(p, f, mods) for p, f in mods.items()}
        for a, targets in edges.items():
            for b in targets:
                related = a[: len(b)] == b or b[: len(a)] == a  # parent and child
                if a < b and a in edges.get(b, ()) and not related:
                    out.append((crate.name, mods[a].relative_to(crate), mods[b].relative_to(crate)))
    return out


MAX_LINES = 800
REASON = "//! Longer than 800 lines:"


def long_files(root):
    """Source files over MAX_LINES lines that do not say why."""
    out = []
    for f in sorted((root / "crates").glob("*/src/**/*.rs")):
        lines = f.read_text().splitlines()
        if len(lines) > MAX_LINES and not any(l.startswith(REASON) for l in lines[:30]):
            out.append((f.relative_to(root), len(lines)))
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = circles(root)
    for crate, a, b in found:
        print(f"crates/{crate}: {a} and {b} import each other")
    if found:
        print(f"{len(found)} two-file import circle(s): move what both need where it belongs "
              "(a third module, the caller, or the lower one of the two)")
    long = long_files(root)
    for f, n in long:
        print(f"{f}: {n} lines; split it, or say why at its top ({REASON} …)")
    if found or long:
        return 1
    print(f"no two-file import circles, no file over {MAX_LINES} lines without a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
