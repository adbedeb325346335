//! The differential fixture: the programs (BPF_PROG_RUN) against the userspace pipeline.
//!
//! ```text
//!   namespace nvo-dN-PID (entered by the test thread)
//!     ul0 10.9.0.1/24 ── ul1             the underlay: nvo_underlay attached; neighbours
//!                                         10.9.0.2..5 permanent, so next hops resolve
//!     p1..p8 ── p1c..p8c                 ports: nvo_port attached; the far ends are up but
//!                                         have no address and send nothing
//! ```
//!
//! Two pipelines get the same commands: `reference` sees every frame (the userspace datapath),
//! `mirrored` only what the kernel reports or punts (nvod on the kernel path). After each frame
//! the kernel's outputs — the trace ring's copies in order, its verdict and drop reason — are
//! compared with what the reference's actions make of the frame, byte for byte; at the end
//! their FDBs and counters must agree too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use nvo_ebpf::layout;
use nvo_ebpf::{Kernel, Mirror, NodeSettings, PortInfo, Sizes};
use nvo_encap::engine::{DecapError, Engine, Target};
use nvo_encap::profile::{Payload, ProfileId, Transport};
use nvo_io::netns::{enter, unique_name, NamedNetns, NetnsGuard};
use nvo_pipeline::{
    Action, Actions, Counters, Decapsulated, DropReason, FdbDest, Limits, NetworkSpec, Pipeline,
    PortId, ProfileTag, Vni,
};

pub const LOCATOR: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
pub const R2: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
pub const R3: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 3);
pub const R4: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 4);
pub const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
pub const MULTICAST_TTL: u8 = 8;
pub const SOURCE_PORTS: u16 = 16;

/// The MAC of a remote's neighbour entry.
pub fn remote_mac(r: Ipv4Addr) -> [u8; 6] {
    [2, 0, 0, 0, 9, r.octets()[3]]
}

/// What the kernel sent for a frame, in order, as the trace ring recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Port(u32, Vec<u8>),
    Underlay(Vec<u8>),
}

/// What a frame became: copies out, and the final word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Result {
    pub outs: Vec<Out>,
    pub drop: Option<u16>,
    pub punted: bool,
    /// The pipeline answered (ARP/ND suppression).
    pub replied: bool,
}

pub struct Fixture {
    _guard: NetnsGuard,
    _ns: NamedNetns,
    pub mirror: Mirror,
    pub reference: Pipeline,
    pub ref_engine: Engine,
    pub mirrored: Pipeline,
    pub engine: Engine,
    pub ports: Vec<PortInfo>,
    pub ul_mac: [u8; 6],
    pub now: Instant,
    actions: Actions,
    /// Frames the kernel handed to nvod to deliver to a port it serves itself (a TAP, a VLAN
    /// circuit), as (port, frame), in order.
    pub delivered: Vec<(u32, Vec<u8>)>,
}

fn ip(ns: &NamedNetns, args: &[&str]) {
    ns.ip(args).unwrap_or_else(|e| panic!("ip {args:?}: {e}"));
}

impl Fixture {
    /// The namespace, the programs loaded and attached; no network yet.
    pub fn new(tag: &str) -> Fixture {
        let ns =
            NamedNetns::create(&unique_name(tag)).expect("ip netns add (run the tests as root)");
        ip(&ns, &["link", "set", "lo", "up"]);
        ip(
            &ns,
            &["link", "add", "ul0", "type", "veth", "peer", "name", "ul1"],
        );
        ip(&ns, &["addr", "add", "10.9.0.1/24", "dev", "ul0"]);
        ip(&ns, &["link", "set", "ul0", "up"]);
        // The far ends are up (so copies sent to them are delivered, not refused) but quiet: no
        // addresses, no IPv6 autoconfiguration, so nothing comes back into the programs.
        ip(&ns, &["link", "set", "ul1", "addrgenmode", "none"]);
        ip(&ns, &["link", "set", "ul1", "up"]);
        for r in [R2, R3, R4, Ipv4Addr::new(10, 9, 0, 5)] {
            let mac = remote_mac(r)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":");
            ip(
                &ns,
                &[
                    "neigh",
                    "add",
                    &r.to_string(),
                    "lladdr",
                    &mac,
                    "dev",
                    "ul0",
                    "nud",
                    "permanent",
                ],
            );
        }
        let mut ports = Vec::new();
        let guard = enter(ns.name()).unwrap();
        for i in 1..=8u32 {
            let (p, c) = (format!("p{i}"), format!("p{i}c"));
            ip(
                &ns,
                &["link", "add", &p, "type", "veth", "peer", "name", &c],
            );
            ip(&ns, &["link", "set", &c, "addrgenmode", "none"]);
            ip(&ns, &["link", "set", &c, "up"]);
            ip(&ns, &["link", "set", &p, "up"]);
            let ifindex = nvo_io::iface::interface(&p).unwrap().ifindex;
            ports.push(PortInfo {
                id: PortId(i),
                vni: Vni(0),
                name: p,
                ifindex: Some(ifindex),
                veth: true,
                tapped: false,
            });
        }
        let underlay = nvo_io::iface::holding(LOCATOR).unwrap();
        let ul_mac = underlay.mac;
        let sizes = Sizes::from_limits(&Limits::default(), &Default::default(), 1 << 16);
        let kernel = Kernel::load(&sizes).unwrap_or_else(|e| panic!("{e}"));
        let settings = NodeSettings {
            locator: IpAddr::V4(LOCATOR),
            underlay: Some(underlay),
            vxlan_port: 4789,
            source_ports: (0..SOURCE_PORTS).map(|i| 49152 + i).collect(),
            ttl: 64,
            ttl_inherit: false,
            tos: 0,
            tos_inherit: false,
            df: true,
            multicast_ttl: MULTICAST_TTL,
            trace: true,
        };
        let mirror = Mirror::new(kernel, settings).unwrap_or_else(|e| panic!("{e}"));
        // As nvod does (nvo_datapath): the pipeline asks the programs' connection table on a
        // miss.
        let mut mirrored = Pipeline::new(Limits::default());
        mirrored.set_external_flows(Some(mirror.kernel_flows()));
        Fixture {
            _guard: guard,
            _ns: ns,
            mirror,
            reference: Pipeline::new(Limits::default()),
            ref_engine: Engine::new(Default::default()),
            mirrored,
            engine: Engine::new(Default::default()),
            ports,
            ul_mac,
            now: Instant::now(),
            actions: Actions::new(),
            delivered: Vec::new(),
        }
    }

    /// Runs `f` on both pipelines (and engines), then syncs the kernel.
    pub fn both(&mut self, f: impl Fn(&mut Pipeline, &mut Engine)) {
        f(&mut self.reference, &mut self.ref_engine);
        f(&mut self.mirrored, &mut self.engine);
        self.sync();
    }

    pub fn sync(&mut self) {
        self.mirror
            .sync(&mut self.mirrored, &self.engine, &self.ports, self.now);
    }

    /// A network on `profile` with `flood` remotes and ports `ports`, in both pipelines.
    pub fn network(
        &mut self,
        vni: u32,
        profile: &str,
        flood: &[Ipv4Addr],
        ports: &[u32],
        params: &[(&str, u64)],
    ) {
        self.network_spec(NetworkSpec::new(Vni(vni)), profile, flood, ports, params);
    }

    /// [`Fixture::network`] from a spec (its profile is set from `profile`).
    pub fn network_spec(
        &mut self,
        spec: NetworkSpec,
        profile: &str,
        flood: &[Ipv4Addr],
        ports: &[u32],
        params: &[(&str, u64)],
    ) {
        let vni = spec.vni.0;
        let params: Vec<(String, u64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let flood = flood.to_vec();
        let profile = profile.to_string();
        self.both(|p, e| {
            let id = e.id(&profile).unwrap();
            let mut spec = spec;
            spec.profile = ProfileTag(id.0);
            p.add_network(spec).unwrap();
            for r in &flood {
                p.flood_add(Vni(vni), IpAddr::V4(*r)).unwrap();
            }
            e.bind_local(id, vni, &params).unwrap();
        });
        for &port in ports {
            self.ports[port as usize - 1].vni = Vni(vni);
            self.both(|p, _| p.add_port(PortId(port), Vni(vni)).unwrap());
        }
    }

    pub fn ifindex(&self, port: u32) -> u32 {
        self.ports[port as usize - 1].ifindex.unwrap()
    }

    /// Drains the kernel's rings into the mirrored pipeline as nvod does: learn reports applied,
    /// punted frames run through it. Returns whether a frame was punted (handed over for the
    /// pipeline to decide).
    fn settle(&mut self) -> bool {
        self.mirror.drain_events(&mut self.mirrored, self.now);
        let mut punted = Vec::new();
        self.mirror
            .drain_punts(|hdr, frame| punted.push((*hdr, frame.to_vec())));
        for (hdr, frame) in &punted {
            let mut actions = Actions::new();
            match hdr.kind {
                layout::PUNT_PORT => {
                    self.mirrored
                        .from_port(PortId(hdr.port_id), frame, self.now, &mut actions)
                }
                layout::PUNT_ANSWERED => {
                    self.mirrored.from_port_answered(
                        PortId(hdr.port_id),
                        frame,
                        self.now,
                        &mut actions,
                    );
                    assert!(actions.is_empty(), "an answered request is not forwarded");
                }
                layout::PUNT_DELIVER => self.delivered.push((hdr.port_id, frame.clone())),
                k => panic!("only frames from and to ports are punted here, not kind {k}"),
            }
        }
        self.sync();
        // A request the kernel answered was not handed over: it counts as sent, not punted.
        punted.iter().any(|(h, _)| h.kind == layout::PUNT_PORT)
    }

    fn kernel_result(&mut self, run: nvo_ebpf::testrun::Run) -> Result {
        let outs = self
            .mirror
            .drain_trace()
            .into_iter()
            .map(|(t, bytes)| match t.kind {
                layout::TRACE_PORT => Out::Port(t.target, bytes),
                _ => Out::Underlay(bytes),
            })
            .collect();
        let drop = (run.verdict[0] == layout::VERDICT_DROP).then_some(run.verdict[2] as u16);
        let punted = run.verdict[0] == layout::VERDICT_PUNT;
        Result {
            outs,
            drop,
            punted,
            replied: false,
        }
    }

    /// A frame from port `port`: (the kernel's result, the reference's).
    pub fn port_frame(&mut self, port: u32, frame: &[u8]) -> (Result, Result) {
        let run = self
            .mirror
            .kernel()
            .run("nvo_port", frame, self.ifindex(port), 0)
            .unwrap();
        let mut kernel = self.kernel_result(run);
        kernel.punted |= self.settle();
        let mut actions = std::mem::take(&mut self.actions);
        self.reference
            .from_port(PortId(port), frame, self.now, &mut actions);
        let expected = self.expected(frame, &actions);
        self.actions = actions;
        (kernel, expected)
    }

    /// A tunnel packet (IPv4 and on) from the underlay: (the kernel's, the reference's).
    pub fn tunnel_packet_in(&mut self, packet: &[u8]) -> (Result, Result) {
        let mut frame = vec![0u8; 14];
        frame[..6].copy_from_slice(&self.ul_mac);
        frame[6..12].copy_from_slice(&remote_mac(R2));
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(packet);
        let ifindex = nvo_io::iface::interface("ul0").unwrap().ifindex;
        let run = self
            .mirror
            .kernel()
            .run("nvo_underlay", &frame, ifindex, 0)
            .unwrap();
        let passed = run.verdict[0] == layout::VERDICT_PASS && run.retval == 0;
        let mut kernel = self.kernel_result(run);
        self.settle();
        let expected = self.reference_underlay(packet);
        if passed {
            // Left to the host stack, i.e. to nvod's socket: the mirrored pipeline takes it.
            kernel = self.mirrored_underlay(packet);
        }
        (kernel, expected)
    }

    /// Runs the IPv4 tunnel `packet` through `engine` and `pipeline` as nvod does; the inner
    /// frame, empty when the packet was dropped.
    fn decap(
        engine: &Engine,
        pipeline: &mut Pipeline,
        packet: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) -> Vec<u8> {
        let ihl = usize::from(packet[0] & 0xf) * 4;
        let src = IpAddr::V4(Ipv4Addr::new(
            packet[12], packet[13], packet[14], packet[15],
        ));
        let (transport, off) = if packet[9] == 17 {
            let port = u16::from_be_bytes([packet[ihl + 2], packet[ihl + 3]]);
            (Transport::Udp(port), ihl + 8)
        } else {
            (Transport::Ip(packet[9]), ihl)
        };
        let payload = &packet[off..];
        match engine.decap(transport, payload) {
            Err(e) => {
                let vxlan = transport == Transport::Udp(4789);
                let reason = match e {
                    DecapError::UnknownKey => DropReason::UnknownVni,
                    DecapError::Truncated if vxlan => DropReason::MalformedVxlan,
                    DecapError::NoMatch if vxlan => DropReason::VxlanFlags,
                    _ => DropReason::MalformedTunnel,
                };
                pipeline.drop_underlay(payload.len(), reason, actions);
                Vec::new()
            }
            Ok(d) => match (d.target, d.payload) {
                (Target::Local { vni }, Payload::Ethernet) => {
                    let dec = Decapsulated {
                        src,
                        vni: Vni(vni),
                        profile: ProfileTag(d.profile.0),
                        dont_learn: d.dont_learn,
                        src_node: None,
                    };
                    let inner = &payload[d.header_len..];
                    // What nvod's gbp::read takes from a VXLAN-GBP header for the policy.
                    let tag = (d.profile == nvo_encap::builtin::ids::VXLAN_GBP).then(|| {
                        nvo_pipeline::policy::GroupTag {
                            group: u16::from_be_bytes([payload[2], payload[3]]),
                            applied: payload[1] & 0x08 != 0,
                        }
                    });
                    pipeline.from_decapsulated_tagged(dec, tag, payload.len(), inner, now, actions);
                    inner.to_vec()
                }
                _ => {
                    pipeline.drop_underlay(payload.len(), DropReason::ProfileMismatch, actions);
                    Vec::new()
                }
            },
        }
    }

    fn reference_underlay(&mut self, packet: &[u8]) -> Result {
        let mut actions = std::mem::take(&mut self.actions);
        let frame = Fixture::decap(
            &self.ref_engine,
            &mut self.reference,
            packet,
            self.now,
            &mut actions,
        );
        let r = self.expected(&frame, &actions);
        self.actions = actions;
        r
    }

    /// A tunnel packet the programs leave to the host stack (a UDP-GSO batch, an inner
    /// 802.1Q frame) reaching nvod's socket: the mirrored pipeline takes it without the kernel
    /// seeing it. (The pipeline's, the reference's.)
    pub fn socket_packet_in(&mut self, packet: &[u8]) -> (Result, Result) {
        let expected = self.reference_underlay(packet);
        (self.mirrored_underlay(packet), expected)
    }

    fn mirrored_underlay(&mut self, packet: &[u8]) -> Result {
        let mut actions = Actions::new();
        let frame = Fixture::decap(
            &self.engine,
            &mut self.mirrored,
            packet,
            self.now,
            &mut actions,
        );
        let r = self.expected_with(&frame, &actions, false);
        self.sync();
        r
    }

    fn expected(&mut self, frame: &[u8], actions: &Actions) -> Result {
        self.expected_with(frame, actions, true)
    }

    /// What a userspace datapath would send for `actions` on `frame`, with the outer headers
    /// the kernel path writes (nvod's socket settings: DF, TTL 64, TOS 0, UDP checksum 0).
    fn expected_with(&mut self, frame: &[u8], actions: &Actions, reference: bool) -> Result {
        let mut outs = Vec::new();
        let mut drop = None;
        let mut punted = false;
        let mut replied = false;
        for a in actions.iter() {
            match *a {
                Action::Deliver { port } => outs.push(Out::Port(port.0, frame.to_vec())),
                Action::Encap {
                    remote,
                    vni,
                    entropy,
                    profile,
                } => {
                    let engine = if reference {
                        &mut self.ref_engine
                    } else {
                        &mut self.engine
                    };
                    let IpAddr::V4(r) = remote else {
                        panic!("v4 only")
                    };
                    let mut bytes = outer(
                        engine,
                        &self.ul_mac,
                        r,
                        vni.0,
                        entropy,
                        ProfileId(profile.0),
                        frame,
                    );
                    // The identity policy's tag, as nvod's gbp::tagged writes it.
                    if let Some(t) = actions.group() {
                        if ProfileId(profile.0) == nvo_encap::builtin::ids::VXLAN_GBP {
                            let at = 14 + 20 + 8;
                            bytes[at + 1] = if t.applied {
                                bytes[at + 1] | 0x08
                            } else {
                                bytes[at + 1] & !0x08
                            };
                            bytes[at + 2..at + 4].copy_from_slice(&t.group.to_be_bytes());
                        }
                    }
                    outs.push(Out::Underlay(bytes));
                }
                Action::Drop(reason) => drop = Some(reason.code()),
                // An answer the pipeline builds (ARP/ND suppression, ICMP too-big): the kernel
                // answers ARP itself, and hands the rest over (then nothing is compared).
                Action::Reply { port, len } => {
                    let p = if reference {
                        &self.reference
                    } else {
                        &self.mirrored
                    };
                    outs.push(Out::Port(port.0, p.scratch()[..len].to_vec()));
                    replied = true;
                }
                Action::EncapNode { .. } | Action::EncapL3 { .. } | Action::SendIla { .. } => {
                    punted = true
                }
            }
        }
        Result {
            outs,
            drop,
            punted: punted || (replied && drop.is_some()),
            replied,
        }
    }

    pub fn counters(&self) -> (Counters, Counters) {
        let mut mirrored = self.mirrored.counters();
        self.mirror.add_counters(&mut mirrored);
        (mirrored, self.reference.counters())
    }

    pub fn fdb(&self, vni: u32) -> (Vec<nvo_pipeline::FdbView>, Vec<nvo_pipeline::FdbView>) {
        let strip = |v: Vec<nvo_pipeline::FdbView>| -> Vec<nvo_pipeline::FdbView> {
            v.into_iter()
                .map(|mut e| {
                    e.age = std::time::Duration::ZERO;
                    e
                })
                .collect()
        };
        (
            strip(self.mirrored.fdb_entries(Vni(vni), self.now).unwrap()),
            strip(self.reference.fdb_entries(Vni(vni), self.now).unwrap()),
        )
    }

    pub fn static_remote(&mut self, vni: u32, mac: [u8; 6], r: Ipv4Addr) {
        self.both(|p, _| {
            p.fdb_add_static(
                Vni(vni),
                nvo_pipeline::Mac(mac),
                FdbDest::Remote(IpAddr::V4(r)),
            )
            .unwrap()
        });
    }
}

/// The tunnel packet, from the outer Ethernet header on, that carries `frame` to `remote`.
pub fn outer(
    engine: &mut Engine,
    ul_mac: &[u8; 6],
    remote: Ipv4Addr,
    vni: u32,
    entropy: u16,
    profile: ProfileId,
    frame: &[u8],
) -> Vec<u8> {
    let transport = engine.profile(profile).unwrap().transport;
    let header = engine
        .header(profile, vni, IpAddr::V4(remote), entropy, frame.len())
        .unwrap()
        .to_vec();
    let group = remote.is_multicast();
    let mut out = Vec::new();
    if group {
        let o = remote.octets();
        out.extend_from_slice(&[0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]);
    } else {
        out.extend_from_slice(&remote_mac(remote));
    }
    out.extend_from_slice(ul_mac);
    out.extend_from_slice(&[0x08, 0x00]);
    let udp = matches!(transport, Transport::Udp(_));
    let l4 = if udp { 8 } else { 0 };
    let total = 20 + l4 + header.len() + frame.len();
    let proto = match transport {
        Transport::Udp(_) => 17,
        Transport::Ip(p) => p,
    };
    let ttl = if group { MULTICAST_TTL } else { 64 };
    let mut iph = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        ttl,
        proto,
        0,
        0,
    ];
    iph.extend_from_slice(&LOCATOR.octets());
    iph.extend_from_slice(&remote.octets());
    let sum = checksum(&iph);
    iph[10..12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&iph);
    if let Transport::Udp(port) = transport {
        let sport = 49152 + entropy % SOURCE_PORTS;
        let len = (8 + header.len() + frame.len()) as u16;
        out.extend_from_slice(&sport.to_be_bytes());
        out.extend_from_slice(&port.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
    }
    out.extend_from_slice(&header);
    out.extend_from_slice(frame);
    out
}

pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A tunnel packet from `src` to the locator: IPv4, UDP (or raw), the header, the frame.
pub fn tunnel_packet(
    engine: &mut Engine,
    src: Ipv4Addr,
    profile: &str,
    vni: u32,
    frame: &[u8],
) -> Vec<u8> {
    let id = engine.id(profile).unwrap();
    let transport = engine.profile(id).unwrap().transport;
    let header = engine
        .header(id, vni, IpAddr::V4(src), 7, frame.len())
        .unwrap()
        .to_vec();
    raw_tunnel_packet(src, transport, &header, frame)
}

/// The same with a header given as bytes (malformed ones included).
pub fn raw_tunnel_packet(
    src: Ipv4Addr,
    transport: Transport,
    header: &[u8],
    frame: &[u8],
) -> Vec<u8> {
    let udp = matches!(transport, Transport::Udp(_));
    let l4 = if udp { 8 } else { 0 };
    let total = 20 + l4 + header.len() + frame.len();
    let proto = match transport {
        Transport::Udp(_) => 17,
        Transport::Ip(p) => p,
    };
    let mut out = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ];
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&LOCATOR.octets());
    let sum = checksum(&out);
    out[10..12].copy_from_slice(&sum.to_be_bytes());
    if let Transport::Udp(port) = transport {
        out.extend_from_slice(&50000u16.to_be_bytes());
        out.extend_from_slice(&port.to_be_bytes());
        out.extend_from_slice(&((8 + header.len() + frame.len()) as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0]);
    }
    out.extend_from_slice(header);
    out.extend_from_slice(frame);
    out
}

/// An Ethernet frame carrying IPv4 UDP between two hosts.
pub fn udp_frame(
    dst: [u8; 6],
    src: [u8; 6],
    sport: u16,
    dport: u16,
    payload_len: usize,
) -> Vec<u8> {
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(src, dst)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(sport, dport)
        .write(&mut v, &vec![0xab; payload_len])
        .unwrap();
    v
}

/// An Ethernet frame carrying IPv6 TCP.
pub fn tcp6_frame(dst: [u8; 6], src: [u8; 6], sport: u16) -> Vec<u8> {
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(src, dst)
        .ipv6(
            [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            64,
        )
        .tcp(sport, 80, 1, 65535)
        .write(&mut v, b"hello")
        .unwrap();
    v
}

/// An ARP request.
pub fn arp_request(src: [u8; 6], sender: [u8; 4], target: [u8; 4]) -> Vec<u8> {
    let mut v = vec![0xff; 6];
    v.extend_from_slice(&src);
    v.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    v.extend_from_slice(&src);
    v.extend_from_slice(&sender);
    v.extend_from_slice(&[0; 6]);
    v.extend_from_slice(&target);
    v.resize(60, 0);
    v
}
