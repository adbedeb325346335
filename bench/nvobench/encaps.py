"""nvo's other Ethernet encapsulation profiles as scenarios, and their report section.

Each profile is the `nvo` scenario (two nvods, veth ports, one network, VNI 100) with the
network's `encap:` set to the profile; nvod picks the tenant MTU (underlay MTU minus the
profile's overhead) and the scenario reads it back from c1's eth0 after `nvo lab up`. The
plain `nvo` scenario is the `vxlan` profile. Every profile scenario is measured with the same
metrics as the others and reported as ratios to native routing, to the kernel's VXLAN and to
nvo's own VXLAN, measured in the same run.
"""

from .scenarios import Nvo

# (profile, what it is): every Ethernet profile nvod ships besides vxlan.
PROFILES = [
    ("vxlan-gbp", "VXLAN with the Group Based Policy extension (group 100), UDP 4789"),
    ("vxlan-gpe", "VXLAN-GPE, Next Protocol Ethernet, UDP 4790"),
    ("geneve", "Geneve without options, UDP 6081"),
    ("nvgre", "NVGRE: GRE (IP protocol 47) with the VSID in the key"),
    ("overlay", "nvo's routed overlay header (20 bytes: node IDs, TTL, flow hash), UDP 60002"),
    ("stt", "STT: TCP-like segments (IP protocol 6, port 7471) carrying frames up to 64 KiB "
            "whole, segmented by nvod and reassembled by the receiving nvod"),
]
PARAMS = {"vxlan-gbp": "{group: 100}"}

# The nvo scenarios in report order; "nvo" is the vxlan profile.
KEYS = ["nvo"] + [f"nvo-{p}" for p, _ in PROFILES]
LABELS = {"nvo": "vxlan"} | {f"nvo-{p}": p for p, _ in PROFILES}
BASES = ["native", "kernel", "nvo"]
# Every profile against native, the kernel's VXLAN and nvo's VXLAN (nvo ÷ nvo is left out).
PAIRS = [(k, b) for k in KEYS for b in BASES if k != b]


def _scenario(profile, what):
    class Profile(Nvo):
        key = f"nvo-{profile}"
        encap = profile
        params = PARAMS.get(profile)
        title = f"nvo ({profile})"
        description = (f"as nvo, with the network's `encap: {profile}`: {what}; the tenant "
                       "MTU is nvod's choice (underlay MTU minus the profile's overhead)")

    Profile.__name__ = Profile.__qualname__ = f"Nvo_{profile.replace('-', '_')}"
    return Profile


SCENARIOS = [_scenario(p, what) for p, what in PROFILES]


def measured(doc):
    """The nvo scenarios (vxlan and the profiles) that have samples in `doc`."""
    return [k for k in KEYS if doc["samples"].get(k)]


def _cell(r):
    return f"**{r['ratio']:.2f}** ({r['lo']:.2f}–{r['hi']:.2f})" if r else "—"


def render(doc, mlist):
    """The report's section on the profiles (empty when no profile scenario was measured)."""
    keys = measured(doc)
    if not any(k != "nvo" for k in keys):
        return []
    out = ["", "## nvo's encapsulation profiles relative to native routing and the kernel's VXLAN",
           "",
           "Every Ethernet profile nvod ships, each in its own scenario (the `nvo` scenario "
           "with the network's `encap:` set to it), measured in this run with the same metrics. "
           "Ratios of medians, range in brackets; *vxlan* is the `nvo` scenario.", ""]
    heads = " | ".join(LABELS[k] for k in keys)
    mtus = [doc["scenarios"].get(k, {}).get("tenant_mtu") for k in keys]
    out += ["| | " + heads + " |", "|---|" + "---|" * len(keys),
            "| tenant MTU | " + " | ".join(str(m or "?") for m in mtus) + " |"]
    for base in (b for b in BASES if doc["samples"].get(b)):
        out += ["", f"**÷ {base}**" + (" (nvo's own VXLAN)" if base == "nvo" else ""), "",
                "| metric | better | " + heads + " |", "|---|---|" + "---|" * len(keys)]
        for m in (m for m in mlist if m.ratio):
            rs = doc["ratios"].get(m.key, {})
            cells = ["1" if k == base else _cell(rs.get(f"{k}/{base}")) for k in keys]
            out.append(f"| {m.label} | {m.better} | " + " | ".join(cells) + " |")
    # The nvo scenario's nvods are under nvod_memory, the profiles' under nvod_memory_profiles.
    mem = {"nvo": doc.get("nvod_memory") or {}} | (doc.get("nvod_memory_profiles") or {})
    if any(mem.values()):
        cells = []
        for k in keys:
            hosts = mem.get(k) or {}
            rss = [h["rss_kib"] for h in hosts.values() if h.get("rss_kib")]
            cells.append(f"{max(rss) / 1024:.1f} MiB" if rss else "—")
        out += ["", "nvod's VmRSS after the runs (the larger of the two hosts): "
                + ", ".join(f"{LABELS[k]} {c}" for k, c in zip(keys, cells)) + "."]
    return out


__all__ = ["BASES", "KEYS", "LABELS", "PAIRS", "PROFILES", "SCENARIOS", "measured", "render"]
