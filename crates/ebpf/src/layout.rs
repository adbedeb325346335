//! The map layouts shared with the programs: one `#[repr(C)]` struct per struct of
//! `bpf/layout.h`, field for field, with the same sizes asserted on both sides, and the
//! constants the programs and nvod agree on.
//!
//! Byte order as in the header: addresses, ports (except `nvo_tmpl.port` and transport keys)
//! and MACs in network order, everything else in host order. An IPv4 address fills the first
//! four bytes of a 16-byte address; the rest stays zero.

#![allow(missing_docs)] // the fields are documented in bpf/layout.h, next to the C side

use std::net::Ipv4Addr;

/// Tunnel header bytes the kernel path pushes.
pub const MAX_TMPL: usize = 64;
/// Receive matches per profile.
pub const MAX_MATCHES: usize = 4;
/// Bytes one match tests.
pub const MATCH_LEN: usize = 8;
/// Receive key bytes.
pub const KEY_LEN: usize = 8;
/// Profiles tried on one transport.
pub const MAX_ORDER: usize = 8;
/// Entries of the profile array.
pub const MAX_PROFILES: usize = 64;
/// Flood remotes one frame is replicated to in the kernel.
pub const MAX_FLOOD: usize = 256;
/// Local ports one flood reaches in the kernel; a network with more floods in userspace.
pub const MAX_NET_PORTS: usize = 64;
/// Frame bytes a punt record carries.
pub const PUNT_MAX: usize = 65536;
/// Drop counter slots (codes 1..63; bpf/layout.h `NVO_DROP_SLOTS`).
pub const DROP_SLOTS: usize = 64;
/// Entries of the entropy source-port table.
pub const MAX_ENTROPY: usize = 16384;
/// Locators of one relay next hop.
pub const RELAY_LOCS: usize = 8;
/// Bytes in front of a ring record's frame.
pub const RECORD_HEAD: usize = 48;

pub const CFG_TRACE: u32 = 1;
pub const CFG_DF: u32 = 2;
pub const CFG_TTL_INHERIT: u32 = 4;
pub const CFG_TOS_INHERIT: u32 = 8;

pub const PORT_VETH: u32 = 1;
pub const PORT_USERSPACE: u32 = 2;
pub const PORT_TAPPED: u32 = 4;

pub const TRANSPORT_UDP: u8 = 1;
pub const TRANSPORT_IP: u8 = 2;
pub const TRANSPORT_VXLAN: u32 = 1;

pub const NET_LEARN_PORTS: u32 = 1;
pub const NET_BUM_HEAD_END: u32 = 2;
pub const NET_BUM_GROUP: u32 = 4;
pub const NET_BUM_USER: u32 = 8;
pub const NET_REMOTE_TMPL: u32 = 16;
pub const NET_SUPPRESS: u32 = 32;
pub const NET_KNOWN_ONLY: u32 = 64;
pub const NET_LEARN_TUNNELS: u32 = 128;

pub const DEST_PORT: u8 = 1;
pub const DEST_REMOTE: u8 = 2;
pub const DEST_NODE: u8 = 3;

pub const ORIGIN_STATIC: u8 = 1;
pub const ORIGIN_LEARNED: u8 = 2;
pub const ORIGIN_EVPN: u8 = 3;

pub const KEY_LOCAL: u32 = 1;
pub const KEY_PASS: u32 = 2;

pub const PROF_VALID: u32 = 1;
pub const PROF_LEN_FIELD: u32 = 2;
pub const PROF_PAYLOAD_FIELD: u32 = 4;
pub const PROF_DONT_LEARN: u32 = 8;
pub const PROF_KERNEL_MATCH: u32 = 16;
pub const PROF_KEY: u32 = 32;

pub const EVENT_LEARN: u32 = 1;
pub const EVENT_IDENTITY: u32 = 2;

pub const PUNT_PORT: u32 = 1;
pub const PUNT_DELIVER: u32 = 2;
pub const PUNT_ENCAP: u32 = 3;
pub const PUNT_ANSWERED: u32 = 4;

pub const VERDICT_PASS: u32 = 0;
pub const VERDICT_DROP: u32 = 1;
pub const VERDICT_PORT: u32 = 2;
pub const VERDICT_REMOTE: u32 = 3;
pub const VERDICT_FLOOD: u32 = 4;
pub const VERDICT_PUNT: u32 = 5;

pub const TRACE_PORT: u32 = 1;
pub const TRACE_UNDERLAY: u32 = 2;
pub const TRACE_RELAY: u32 = 3;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    pub underlay_ifindex: u32,
    pub locator: [u8; 4],
    pub flags: u32,
    pub entropy_ports: u16,
    pub ttl: u8,
    pub tos: u8,
    pub multicast_ttl: u8,
    pub underlay_mac: [u8; 6],
    pub pad: u8,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Port {
    pub port_id: u32,
    pub vni: u32,
    pub ifindex: u32,
    pub slot: u32,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tmpl {
    pub bytes: [u8; MAX_TMPL],
    pub len: u8,
    pub entropy_off: u8,
    pub entropy_len: u8,
    pub transport: u8,
    pub port: u16,
    pub protocol: u8,
    pub pad: u8,
}

impl Default for Tmpl {
    fn default() -> Tmpl {
        Tmpl {
            bytes: [0; MAX_TMPL],
            len: 0,
            entropy_off: 0,
            entropy_len: 0,
            transport: 0,
            port: 0,
            protocol: 0,
            pad: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Network {
    pub slot: u32,
    pub flags: u32,
    pub mtu: u16,
    pub profile: u16,
    pub flood_count: u32,
    pub port_count: u32,
    pub group: [u8; 4],
    pub refresh_ns: u64,
    pub tmpl: Tmpl,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NetIndex {
    pub vni: u32,
    pub index: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Remote {
    pub addr: [u8; 16],
}

impl Remote {
    /// An IPv4 address as the programs hold it.
    pub fn v4(ip: Ipv4Addr) -> Remote {
        let mut addr = [0u8; 16];
        addr[..4].copy_from_slice(&ip.octets());
        Remote { addr }
    }

    /// The IPv4 address in the first four bytes.
    pub fn ipv4(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.addr[0], self.addr[1], self.addr[2], self.addr[3])
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NextHop {
    pub ifindex: u32,
    pub smac: [u8; 6],
    pub dmac: [u8; 6],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RemoteKey {
    pub vni: u32,
    pub addr: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FdbKey {
    pub vni: u32,
    pub mac: [u8; 6],
    pub pad: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FdbEntry {
    pub dest: u8,
    pub origin: u8,
    pub pad: u16,
    pub port_id: u32,
    pub remote: [u8; 16],
    pub reported_ns: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Key {
    pub profile: u16,
    pub len: u8,
    pub pad: u8,
    pub bytes: [u8; KEY_LEN],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyTarget {
    pub kind: u32,
    pub vni: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Match {
    pub offset: u16,
    pub len: u8,
    pub pad: u8,
    pub mask: [u8; MATCH_LEN],
    pub value: [u8; MATCH_LEN],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Profile {
    pub flags: u32,
    pub min_len: u16,
    pub len_base: u16,
    pub len_offset: u16,
    pub len_mask: u8,
    pub len_scale: u8,
    pub match_count: u8,
    pub key_len: u8,
    pub key_offset: u16,
    pub payload_offset: u16,
    pub payload_len: u8,
    pub pad: u8,
    /// With a payload field: its value for Ethernet. Without one: non-zero when the profile
    /// carries Ethernet.
    pub payload_ethernet: u64,
    pub payload_known: [u64; 3],
    pub payload_known_mask: u8,
    pub pad2: [u8; 7],
    pub matches: [Match; MAX_MATCHES],
    pub dont_learn: Match,
    pub kernel: Match,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransportKey {
    pub kind: u8,
    pub pad: u8,
    pub value: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transport {
    pub count: u32,
    pub profiles: [u16; MAX_ORDER],
    pub flags: u32,
}

/// `add`, summing two copies of a counter struct field by field (one CPU's into a total).
macro_rules! summed {
    ($t:ty { $($field:ident),* $(,)? }) => {
        impl $t {
            /// Adds `other`'s counts to these.
            pub fn add(&mut self, other: &Self) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

summed!(NetCounters {
    rx_port_frames,
    rx_underlay_frames,
    delivered,
    encap_unicast,
    encap_flood,
    learn_limit,
    learn_limit_port,
    learn_limit_remote,
    learn_local_conflict,
});
summed!(PortCounters {
    rx_frames,
    rx_bytes,
    tx_frames,
    tx_bytes,
    drops,
    learn_limit,
});
summed!(NodeCounters {
    rx_packets,
    rx_bytes,
    tx_packets,
    tx_bytes,
    tx_errors,
    relayed,
    punted,
    punt_lost,
    events_lost,
    passed,
});

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    pub rx_port_frames: u64,
    pub rx_underlay_frames: u64,
    pub delivered: u64,
    pub encap_unicast: u64,
    pub encap_flood: u64,
    pub learn_limit: u64,
    pub learn_limit_port: u64,
    pub learn_limit_remote: u64,
    pub learn_local_conflict: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub learn_limit: u64,
}

/// `struct nvo_vtep_key`: a remote VTEP of a network.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VtepKey {
    pub vni: u32,
    /// IPv4, network order (the octets as they are).
    pub addr: [u8; 4],
}

/// `struct nvo_vtep`: whether the network knows the remote, and its learning budget.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vtep {
    pub budget: i64,
    pub known: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
    pub relayed: u64,
    pub punted: u64,
    pub punt_lost: u64,
    pub events_lost: u64,
    pub passed: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NeighKey {
    pub vni: u32,
    pub ip: [u8; 4],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Neigh {
    pub mac: [u8; 6],
    pub pad: u16,
    pub port_id: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RelayKey {
    pub dst: u32,
    pub app: u8,
    pub pad: [u8; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayLoc {
    pub addr: [u8; 4],
    pub weight: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relay {
    pub count: u32,
    pub total: u32,
    pub locs: [RelayLoc; RELAY_LOCS],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayConfig {
    pub port: u16,
    pub sports: u16,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Event {
    pub kind: u32,
    pub vni: u32,
    pub mac: [u8; 6],
    pub dest: u8,
    pub pad: u8,
    pub port_id: u32,
    pub remote: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Punt {
    pub kind: u32,
    pub port_id: u32,
    pub vni: u32,
    pub len: u32,
    pub remote: [u8; 16],
    pub gso_size: u16,
    pub entropy: u16,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trace {
    pub kind: u32,
    pub target: u32,
    pub len: u32,
    pub pad: u32,
}

/// `struct nvo_monitor`: a record of the `monitor` ring (a drop, a flood or a trace), followed
/// by `captured` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MonitorRecord {
    /// `MONITOR_DROP`, `MONITOR_FLOOD` or `MONITOR_TRACE`.
    pub kind: u32,
    /// A drop's code, a flood's copies, a trace's `TRACE_PORT`, `TRACE_UNDERLAY` or `TRACE_RELAY`.
    pub arg: u32,
    pub ifindex: u32,
    pub len: u32,
    pub captured: u32,
    /// Flood, trace: the network.
    pub vni: u32,
    /// Trace: the port id, or the remote's IPv4 address (network order, as the maps hold it).
    pub target: u32,
    pub pad: u32,
}

/// `NVO_MONITOR_DROP` and co.: a [`MonitorRecord`]'s kind.
pub const MONITOR_DROP: u32 = 0;
pub const MONITOR_FLOOD: u32 = 1;
pub const MONITOR_TRACE: u32 = 2;

/// `NVO_MONITOR_ON_*`: the bits of the `monitor_on` flag.
pub const MONITOR_ON_EVENTS: u32 = 1;
pub const MONITOR_ON_TRACES: u32 = 2;

/// `NVO_MONITOR_CAPTURE`: the most bytes of a dropped packet a monitor record carries.
pub const MONITOR_CAPTURE: usize = 128;

/// `NVO_MONITOR_RATE`: records a second each CPU writes at most (a burst of as many).
pub const MONITOR_RATE: u32 = 1000;

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<MonitorRecord>() == 32);
    assert!(size_of::<Config>() == 24);
    assert!(size_of::<Port>() == 20);
    assert!(size_of::<Tmpl>() == 72);
    assert!(size_of::<Network>() == 104);
    assert!(size_of::<NetIndex>() == 8);
    assert!(size_of::<Remote>() == 16);
    assert!(size_of::<NextHop>() == 16);
    assert!(size_of::<RemoteKey>() == 20);
    assert!(size_of::<FdbKey>() == 12);
    assert!(size_of::<FdbEntry>() == 32);
    assert!(size_of::<Key>() == 12);
    assert!(size_of::<KeyTarget>() == 8);
    assert!(size_of::<Match>() == 20);
    assert!(size_of::<Profile>() == 184);
    assert!(size_of::<TransportKey>() == 4);
    assert!(size_of::<Transport>() == 24);
    assert!(size_of::<NetCounters>() == 72);
    assert!(size_of::<PortCounters>() == 48);
    assert!(size_of::<VtepKey>() == 8);
    assert!(size_of::<Vtep>() == 16);
    assert!(size_of::<NodeCounters>() == 80);
    assert!(size_of::<NeighKey>() == 8);
    assert!(size_of::<Neigh>() == 12);
    assert!(size_of::<RelayKey>() == 8);
    assert!(size_of::<Relay>() == 72);
    assert!(size_of::<RelayConfig>() == 8);
    assert!(size_of::<Event>() == 36);
    assert!(size_of::<Punt>() == 40);
    assert!(size_of::<Trace>() == 16);
};

macro_rules! pod {
    ($($t:ty),+ $(,)?) => {
        $(
            // SAFETY: a #[repr(C)] struct of integers and integer arrays, every bit pattern
            // valid, padding spelled out as fields: what aya::Pod requires.
            unsafe impl aya::Pod for $t {}
        )+
    };
}

pod!(
    VtepKey,
    Vtep,
    Config,
    Port,
    Tmpl,
    Network,
    NetIndex,
    Remote,
    NextHop,
    RemoteKey,
    FdbKey,
    FdbEntry,
    Key,
    KeyTarget,
    Profile,
    TransportKey,
    Transport,
    NetCounters,
    PortCounters,
    NodeCounters,
    RelayKey,
    Relay,
    RelayConfig,
    NeighKey,
    Neigh,
);

/// Reads a `#[repr(C)]` record of plain integers from the start of `bytes` (a ring record).
pub(crate) fn read_record<T: aya::Pod + Default>(bytes: &[u8]) -> Option<T> {
    let size = std::mem::size_of::<T>();
    let src = bytes.get(..size)?;
    let mut out = T::default();
    // SAFETY: T is Pod (every bit pattern is a valid T) and `src` holds exactly size_of::<T>()
    // bytes; the copy is unaligned-safe byte by byte into a properly aligned T.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), (&mut out as *mut T).cast::<u8>(), size);
    }
    Some(out)
}

pod!(Event, Punt, Trace, MonitorRecord);

// Identity policy (bpf/policy_maps.h).

/// Rules of one network the kernel scans: the pipeline's bound (nvo_policy::rules::MAX_RULES),
/// scanned by bpf_loop, whose verification does not grow with it.
pub const MAX_RULES: usize = 4096;
/// Port ranges of one rule the kernel tests; a rule with more leaves its network to nvod.
pub const RULE_PORTS: usize = 8;
/// Group memberships (rule sides naming a group, selected groups) of one network.
pub const MAX_MEMBERS: usize = 16_384;
/// Rule entries over all networks (`pol_rules`, `pol_rule_hits`).
pub const RULE_SLOTS: u32 = 65536;
/// Membership entries over all networks (`pol_members`).
pub const MEMBER_SLOTS: u32 = 262_144;
pub const NET_POLICY: u32 = 256;
pub const NET_GBP: u32 = 512;
pub const PORT_GROUP_SHIFT: u32 = 16;
pub const POL_SELECT_ALL: u32 = 1;
pub const RULE_ALLOW: u8 = 1;
pub const RULE_ANY_FROM: u8 = 2;
pub const RULE_ANY_TO: u8 = 4;
pub const RULE_ANY_PROTO: u8 = 8;
pub const SIDE_FROM: u8 = 0;
pub const SIDE_TO: u8 = 1;
pub const SIDE_SELECTED: u8 = 2;
pub const IDENT_LABEL: u32 = 1;
pub const IDENT_EVPN: u32 = 2;
/// A policy tag (a punted encapsulation's `port_id`): set, the A bit, the group below.
pub const TAG_ON: u32 = 1 << 31;
pub const TAG_APPLIED: u32 = 1 << 16;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolNet {
    pub rules: u32,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RuleKey {
    pub vni: u32,
    pub index: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rule {
    pub flags: u8,
    pub proto: u8,
    pub nports: u8,
    pub pad: u8,
    pub ports: [u16; RULE_PORTS * 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MemberKey {
    pub vni: u32,
    pub rule: u16,
    pub side: u8,
    pub pad: u8,
    pub group: u16,
    pub pad2: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct IdentKey {
    pub vni: u32,
    pub family: u32,
    pub ip: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ident {
    pub label: u16,
    pub evpn: u16,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub vni: u32,
    pub proto: u8,
    pub family: u8,
    pub sport: u16,
    pub dport: u16,
    pub pad: u16,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flow {
    pub last_ns: u64,
    pub idle_ns: u64,
}

/// One network's policy verdicts on one CPU, generated with its conversion to the pipeline's
/// counters from one list of fields (pol_counters.rs).
pub use crate::pol_counters::PolCounters;

/// An address as the policy maps key it: IPv4 in the first four bytes, family 4 or 6.
pub fn ident_key(vni: u32, ip: std::net::IpAddr) -> IdentKey {
    let mut k = IdentKey {
        vni,
        ..IdentKey::default()
    };
    match ip {
        std::net::IpAddr::V4(v4) => {
            k.family = 4;
            k.ip[..4].copy_from_slice(&v4.octets());
        }
        std::net::IpAddr::V6(v6) => {
            k.family = 6;
            k.ip = v6.octets();
        }
    }
    k
}

const _: () = {
    use std::mem::size_of;
    assert!(size_of::<PolNet>() == 8);
    assert!(size_of::<RuleKey>() == 8);
    assert!(size_of::<Rule>() == 36);
    assert!(size_of::<MemberKey>() == 12);
    assert!(size_of::<IdentKey>() == 24);
    assert!(size_of::<Ident>() == 8);
    assert!(size_of::<FlowKey>() == 44);
    assert!(size_of::<Flow>() == 16);
    assert!(size_of::<PolCounters>() == 72);
};

pod!(
    PolNet,
    RuleKey,
    Rule,
    MemberKey,
    IdentKey,
    Ident,
    FlowKey,
    Flow,
    PolCounters
);

#[cfg(test)]
mod tests {
    use nvo_pipeline::DropReason;

    /// bpf/drop_reasons.h names every DropReason with its code, and nothing else.
    #[test]
    fn drop_reasons_match_the_pipeline() {
        let header = include_str!("../bpf/drop_reasons.h");
        let mut seen = Vec::new();
        for line in header.lines() {
            let Some(rest) = line.strip_prefix("#define NVO_DROP_") else {
                continue;
            };
            if rest.starts_with("REASONS_H") {
                continue; // the include guard
            }
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(code)) = (parts.next(), parts.next()) else {
                panic!("unreadable line {line:?}");
            };
            let code: u16 = code.parse().unwrap();
            let reason = DropReason::from_code(code)
                .unwrap_or_else(|| panic!("{name} = {code} is no DropReason"));
            assert_eq!(reason.name().to_uppercase(), name, "code {code}");
            seen.push(reason);
        }
        assert_eq!(seen, DropReason::ALL.to_vec());
        const { assert!(DropReason::COUNT < super::DROP_SLOTS) };
    }

    /// The drop counter map (bpf/maps.h, sized by bpf/layout.h) has the slots nvod reads.
    #[test]
    fn drop_slots_match_the_programs() {
        let header = include_str!("../bpf/layout.h");
        let slots = header
            .lines()
            .find_map(|l| l.strip_prefix("#define NVO_DROP_SLOTS "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok());
        assert_eq!(slots, Some(super::DROP_SLOTS));
    }
}
