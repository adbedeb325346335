#!/usr/bin/python3
"""Writes the README's performance section from a benchmark report, so that every figure in the
README comes from a run, with its date and machine.

Usage: bench/readme.py [REPORT.md] [README.md]
  REPORT.md  default bench/results/latest.md (written by bench/run.py)
  README.md  default README.md; the text between the markers
             <!-- bench:begin --> and <!-- bench:end --> is replaced.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def section(md, heading):
    """The body of a '## heading' section (up to the next '## ')."""
    m = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    if not m:
        sys.exit(f"readme.py: the report has no '## {heading}' section")
    return m.group(1).strip()


def main():
    report = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/results/latest.md"
    readme = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "README.md"
    md = report.read_text()
    title = md.splitlines()[0].lstrip("# ").strip()
    lead = section(md, "nvo relative to")
    table = "\n".join(l for l in lead.splitlines() if l.startswith("|"))
    machine = section(md, "Machine and noise")
    keep = [l for l in machine.splitlines() if l.startswith(("- **Machine:**", "- **When:**", "- **Noise:**"))]
    rel = report.relative_to(ROOT) if report.is_absolute() and ROOT in report.parents else report
    body = "\n".join([
        BEGIN,
        f"From `{rel}` ({title}); regenerate with `make bench && bench/readme.py`.",
        "",
        table,
        "",
        *keep,
        "",
        f"The report has the absolute figures, the method and the plots.",
        END,
    ])
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"readme.py: {readme} lacks the {BEGIN} ... {END} markers")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    readme.write_text(text[:start] + body + text[end:])
    print(f"readme.py: {readme} performance section written from {report}")


if __name__ == "__main__":
    main()
