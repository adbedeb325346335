"""nvo's other Ethernet encapsulation profiles as scenarios, and their report section.

Each profile is the `nvo` scenario (two nvods, veth ports, one network, VNI 100) with the
network's `encap:` set to the profile; nvod picks the tenant MTU (underlay MTU minus the
profile's overhead) and the scenario reads it back from c1's eth0 after `nvo lab up`. Two
families: on nvod's userspace path (`nvo-<profile>`, against the `nvo` scenario, which is the
vxlan profile) and on its kernel datapath (`nvo-ebpf-<profile>`, against `nvo-ebpf`) — every
profile the eBPF programs carry (STT is not one: a network with it runs in userspace). Every
profile scenario is measured with the same metrics as the others and reported as ratios to
native routing, to the kernel's VXLAN and to the same datapath's VXLAN, measured in the same
run.
"""

from .scenarios import Nvo, NvoEbpf

# (profile, what it is): every Ethernet profile nvod ships besides vxlan.
PROFILES = [
    ("vxlan-gbp", "VXLAN with the Group Based Policy extension (group 100), UDP 4789"),
    ("vxlan-gpe", "VXLAN-GPE, Next Protocol Ethernet, UDP 4790"),
    ("geneve", "Geneve without options, UDP 6081"),
    ("nvgre", "NVGRE: GRE (IP protocol 47) with the VSID in the key"),
    ("overlay", "nvo's routed overlay header (20 bytes: node IDs, TTL, flow hash), UDP 60002"),
    ("usertun", "a profile defined at run time (`profiles:` in the lab topology): an 8-byte "
                "header on UDP 7777 with a magic, a 24-bit VNI and a byte of flow entropy"),
    ("stt", "STT: TCP-like segments (IP protocol 6, port 7471) carrying frames up to 64 KiB "
            "whole, written whole by nvod to a TUN for the kernel's TCP segmentation "
            "(`stt_offload = \"auto\"`) and reassembled by the receiving nvod"),
]
PARAMS = {"vxlan-gbp": "{group: 100}"}
# User-defined profiles: their `profiles:` section in the lab topology.
DEFINED = {"usertun": """\
profiles:
  - {name: usertun, udp_port: 7777, template: "4e01 0000 0000 0000",
     matches: [{offset: 0, mask: "ffff", value: "4e01"}], vni: {offset: 4, len: 3},
     entropy: {offset: 7, len: 1}, payload: ethernet}
"""}
# The profiles the kernel datapath carries.
EBPF_PROFILES = [(p, what) for p, what in PROFILES if p != "stt"]


class Family:
    """The profiles on one datapath: scenario keys in report order (`base` is the vxlan one)."""

    def __init__(self, base, title, profiles):
        self.base, self.title = base, title
        self.keys = [base] + [f"{base}-{p}" for p, _ in profiles]
        self.labels = {base: "vxlan"} | {f"{base}-{p}": p for p, _ in profiles}
        self.bases = ["native", "kernel", base]


FAMILIES = [Family("nvo", "nvod's userspace path", PROFILES),
            Family("nvo-ebpf", "nvod's kernel (eBPF) datapath", EBPF_PROFILES)]
KEYS = [k for f in FAMILIES for k in f.keys]
LABELS = {k: v for f in FAMILIES for k, v in f.labels.items()}
# Every profile against native, the kernel's VXLAN and its datapath's VXLAN (x ÷ x left out).
PAIRS = [(k, b) for f in FAMILIES for k in f.keys for b in f.bases if k != b]


def _scenario(parent, profile, what):
    class Profile(parent):
        key = f"{parent.key}-{profile}"
        encap = profile
        params = PARAMS.get(profile)
        profiles = DEFINED.get(profile)
        title = f"{parent.key} ({profile})"
        description = (f"as {parent.key}, with the network's `encap: {profile}`: {what}; the "
                       "tenant MTU is nvod's choice (underlay MTU minus the profile's overhead)")

    Profile.__name__ = Profile.__qualname__ = \
        f"{parent.__name__}_{profile.replace('-', '_')}"
    return Profile


SCENARIOS = [_scenario(Nvo, p, what) for p, what in PROFILES] + \
    [_scenario(NvoEbpf, p, what) for p, what in EBPF_PROFILES]


def measured(doc, family=None):
    """The profile scenarios (vxlan included) of `family` (default: all) with samples in `doc`."""
    keys = family.keys if family else KEYS
    return [k for k in keys if doc["samples"].get(k)]


def _cell(r):
    return f"**{r['ratio']:.2f}** ({r['lo']:.2f}–{r['hi']:.2f})" if r else "—"


def render(doc, mlist):
    """The report's section on the profiles (empty when no profile scenario was measured)."""
    families = [f for f in FAMILIES if any(k != f.base for k in measured(doc, f))]
    if not families:
        return []
    out = ["", "## nvo's encapsulation profiles relative to native routing and the kernel's VXLAN",
           "",
           "Every Ethernet profile nvod ships, each in its own scenario (the `nvo` or `nvo-ebpf` "
           "scenario with the network's `encap:` set to it), measured in this run with the same "
           "metrics. Ratios of medians, range in brackets; *vxlan* is the `nvo` (userspace) or "
           "`nvo-ebpf` (kernel datapath) scenario itself."]
    # The nvo scenario's nvods are under nvod_memory, every other one under nvod_memory_profiles.
    mem = {"nvo": doc.get("nvod_memory") or {}} | (doc.get("nvod_memory_profiles") or {})
    for fam in families:
        keys = measured(doc, fam)
        heads = " | ".join(fam.labels[k] for k in keys)
        mtus = [doc["scenarios"].get(k, {}).get("tenant_mtu") for k in keys]
        out += ["", f"### On {fam.title}", "", "| | " + heads + " |", "|---|" + "---|" * len(keys),
                "| tenant MTU | " + " | ".join(str(m or "?") for m in mtus) + " |"]
        for base in (b for b in fam.bases if doc["samples"].get(b)):
            own = f" (this datapath's VXLAN)" if base == fam.base else ""
            out += ["", f"**÷ {base}**{own}", "",
                    "| metric | better | " + heads + " |", "|---|---|" + "---|" * len(keys)]
            for m in (m for m in mlist if m.ratio):
                rs = doc["ratios"].get(m.key, {})
                cells = ["1" if k == base else _cell(rs.get(f"{k}/{base}")) for k in keys]
                out.append(f"| {m.label} | {m.better} | " + " | ".join(cells) + " |")
        if any(mem.get(k) for k in keys):
            cells = []
            for k in keys:
                hosts = mem.get(k) or {}
                rss = [h["rss_kib"] for h in hosts.values() if h.get("rss_kib")]
                cells.append(f"{max(rss) / 1024:.1f} MiB" if rss else "—")
            out += ["", "nvod's VmRSS after the runs (the larger of the two hosts): "
                    + ", ".join(f"{fam.labels[k]} {c}" for k, c in zip(keys, cells)) + "."]
    return out


__all__ = ["FAMILIES", "KEYS", "LABELS", "PAIRS", "PROFILES", "SCENARIOS", "measured", "render"]
