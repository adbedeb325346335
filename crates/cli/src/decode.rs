//! Decoding captured frames into their tunnel layers, for `nvo decode`.
//!
//! Every header is parsed by the code the data path uses: standard headers by smoltcp's `wire`
//! (`nvo_wire::std_wire`; 802.1Q tags and IPv6 extension headers are walked here), tunnel
//! headers by `nvo_wire`. Which UDP ports mean which tunnel is a [`Ports`] table, with the
//! IANA defaults. A header that does not parse ends the packet's decoding with a [`Malformed`]
//! record naming the layer and the reason; the next packet is decoded as usual.

use std::net::{Ipv4Addr, Ipv6Addr};

use nvo_wire::geneve::{GeneveOptions, GenevePacket, GeneveRepr};
use nvo_wire::gre::{GrePacket, GreRepr};
use nvo_wire::nsh::{NshPacket, NshRepr};
use nvo_wire::overlay::{OverlayPacket, OverlayRepr};
use nvo_wire::std_wire::{EthernetFrame, Ipv4Packet, Ipv6Packet, TcpPacket, UdpPacket};
use nvo_wire::stt::{SttPacket, SttRepr, SttSegmentPacket};
use nvo_wire::vxlan::{VxlanPacket, VxlanRepr};
use nvo_wire::vxlan_gpe::{NextProtocol, VxlanGpePacket, VxlanGpeRepr};
use nvo_wire::{ip_proto, EtherType, Mac};
use serde::Serialize;

use crate::capture::LinkType;

/// Tunnels nested deeper than this are reported as malformed rather than followed.
const MAX_TUNNEL_DEPTH: usize = 8;

/// Which transport ports carry which tunnel.
#[derive(Debug, Clone)]
pub struct Ports {
    /// UDP destination ports decoded as VXLAN (RFC 7348; 8472 is the Linux default).
    pub vxlan: Vec<u16>,
    /// UDP destination ports decoded as VXLAN-GPE.
    pub vxlan_gpe: Vec<u16>,
    /// UDP destination ports decoded as Geneve.
    pub geneve: Vec<u16>,
    /// UDP destination ports decoded as nvo's overlay routing header.
    pub overlay: Vec<u16>,
    /// TCP destination ports decoded as STT.
    pub stt: Vec<u16>,
}

impl Default for Ports {
    fn default() -> Self {
        use nvo_wire::ports;
        Ports {
            vxlan: vec![ports::VXLAN, ports::VXLAN_LINUX_LEGACY],
            vxlan_gpe: vec![ports::VXLAN_GPE],
            geneve: vec![ports::GENEVE],
            overlay: vec![ports::OVERLAY],
            stt: vec![ports::STT],
        }
    }
}

/// One decoded header.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub enum Layer {
    Ethernet {
        src: String,
        dst: String,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        vlans: Vec<u16>,
        ethertype: u16,
    },
    LinuxSll {
        protocol: u16,
    },
    Arp,
    Ipv4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ttl: u8,
        protocol: u8,
    },
    Ipv6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop_limit: u8,
        next_header: u8,
    },
    Udp {
        src_port: u16,
        dst_port: u16,
    },
    Tcp {
        src_port: u16,
        dst_port: u16,
    },
    Vxlan {
        vni: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        group_policy_id: Option<u16>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        dont_learn: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        policy_applied: bool,
    },
    VxlanGpe {
        vni: u32,
        next_protocol: String,
        oam: bool,
    },
    Nsh {
        spi: u32,
        si: u8,
        ttl: u8,
        md_type: u8,
        next_protocol: String,
        oam: bool,
    },
    Geneve {
        vni: u32,
        protocol: u16,
        oam: bool,
        critical: bool,
        options: Vec<GeneveOptionView>,
    },
    Gre {
        protocol: u16,
        #[serde(skip_serializing_if = "Option::is_none")]
        key: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        sequence: Option<u32>,
    },
    Nvgre {
        vsid: u32,
        flow_id: u8,
    },
    Stt {
        frame_id: u32,
        frame_len: u16,
        fragment_offset: u16,
        #[serde(skip_serializing_if = "Option::is_none")]
        context_id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mss: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        vlan: Option<u16>,
    },
    Overlay {
        app: String,
        ttl: u8,
        flags: u8,
        vni: u32,
        flow_hash: u32,
        dst_node: u32,
        src_node: u32,
    },
    /// A payload nvo does not decode further (an ethertype, IP protocol or port it does not know).
    Data {
        protocol: String,
        len: usize,
    },
}

/// A Geneve option as shown by the decoder.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GeneveOptionView {
    class: u16,
    #[serde(rename = "type")]
    kind: u8,
    len: usize,
}

/// Why decoding stopped early.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Malformed {
    /// The header that failed to parse.
    pub layer: &'static str,
    /// What was wrong with it.
    pub reason: String,
}

/// Everything known about one frame.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Decoded {
    /// Headers from the outermost in.
    pub layers: Vec<Layer>,
    /// Set when a header failed to parse; `layers` then holds what came before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<Malformed>,
}

impl Decoded {
    /// Whether any tunnel header was found.
    pub fn is_tunnel(&self) -> bool {
        self.layers.iter().any(Layer::is_tunnel)
    }
}

impl Layer {
    fn is_tunnel(&self) -> bool {
        matches!(
            self,
            Layer::Vxlan { .. }
                | Layer::VxlanGpe { .. }
                | Layer::Nsh { .. }
                | Layer::Geneve { .. }
                | Layer::Gre { .. }
                | Layer::Nvgre { .. }
                | Layer::Stt { .. }
                | Layer::Overlay { .. }
        )
    }
}

/// Decodes one captured frame.
pub fn decode(link: LinkType, data: &[u8], ports: &Ports) -> Decoded {
    let mut d = Decoder {
        ports,
        layers: Vec::new(),
        depth: 0,
    };
    let result = match link {
        LinkType::Ethernet => d.ethernet(data),
        LinkType::LinuxSll => d.linux_sll(data, 16, 14),
        LinkType::LinuxSll2 => d.linux_sll(data, 20, 0),
        LinkType::RawIp => d.raw_ip(data),
        LinkType::Other(n) => Err(malformed("link", format!("unsupported link type {n}"))),
    };
    Decoded {
        layers: d.layers,
        malformed: result.err(),
    }
}

fn malformed(layer: &'static str, reason: impl ToString) -> Malformed {
    Malformed {
        layer,
        reason: reason.to_string(),
    }
}

type Step = Result<(), Malformed>;

fn truncated(len: usize, needed: usize) -> String {
    format!("truncated: {len} bytes, header needs {needed}")
}

/// Walks IPv6 extension headers (RFC 8200 §4: hop-by-hop, routing, fragment, destination
/// options; RFC 4302 AH) to the upper-layer header: its number, its bytes, and whether the
/// packet is a fragment (a fragment header with an offset or More Fragments set).
fn ipv6_extensions(mut next: u8, mut rest: &[u8]) -> Result<(u8, &[u8], bool), Malformed> {
    const HOP_BY_HOP: u8 = 0;
    const ROUTING: u8 = 43;
    const FRAGMENT: u8 = 44;
    const AH: u8 = 51;
    const DEST_OPTS: u8 = 60;
    let mut fragmented = false;
    // At most one of each kind is allowed, destination options twice (RFC 8200 §4.1).
    for _ in 0..6 {
        let len = match next {
            HOP_BY_HOP | ROUTING | DEST_OPTS => rest.get(1).map(|&l| (usize::from(l) + 1) * 8),
            FRAGMENT => Some(8),
            AH => rest.get(1).map(|&l| (usize::from(l) + 2) * 4),
            _ => return Ok((next, rest, fragmented)),
        };
        let Some(header) = len.and_then(|l| rest.get(..l)) else {
            return Err(malformed(
                "ipv6",
                format!("truncated extension header {next}"),
            ));
        };
        if next == FRAGMENT {
            let offset_flags = u16::from_be_bytes([header[2], header[3]]);
            fragmented |= offset_flags & 0xfff9 != 0;
        }
        next = header[0];
        rest = &rest[header.len()..];
    }
    Err(malformed("ipv6", "more than six extension headers"))
}

struct Decoder<'p> {
    ports: &'p Ports,
    layers: Vec<Layer>,
    depth: usize,
}

impl Decoder<'_> {
    fn ethernet(&mut self, data: &[u8]) -> Step {
        let eth = EthernetFrame::new_checked(data)
            .map_err(|_| malformed("ethernet", truncated(data.len(), 14)))?;
        let mut ethertype = EtherType::from(eth.ethertype());
        let mut rest = eth.payload();
        let mut vlans = Vec::new();
        // 802.1Q and 802.1ad tags, and the pre-standard 0x9100 QinQ TPID.
        while ethertype.is_vlan_tag() || ethertype == EtherType::Unknown(0x9100) {
            let [tci0, tci1, t0, t1, ..] = *rest else {
                return Err(malformed("802.1q", truncated(rest.len(), 4)));
            };
            vlans.push(u16::from_be_bytes([tci0, tci1]) & 0x0fff);
            ethertype = EtherType::from(u16::from_be_bytes([t0, t1]));
            rest = &rest[4..];
        }
        self.layers.push(Layer::Ethernet {
            src: Mac::from(eth.src_addr()).to_string(),
            dst: Mac::from(eth.dst_addr()).to_string(),
            vlans,
            ethertype: ethertype.value(),
        });
        self.ethertype(ethertype.value(), rest)
    }

    fn linux_sll(&mut self, data: &[u8], header_len: usize, proto_at: usize) -> Step {
        let Some(proto) = data.get(proto_at..proto_at + 2) else {
            return Err(malformed(
                "linux_sll",
                format!("{} bytes, header needs {header_len}", data.len()),
            ));
        };
        let Some(rest) = data.get(header_len..) else {
            return Err(malformed(
                "linux_sll",
                format!("{} bytes, header needs {header_len}", data.len()),
            ));
        };
        let protocol = u16::from_be_bytes([proto[0], proto[1]]);
        self.layers.push(Layer::LinuxSll { protocol });
        self.ethertype(protocol, rest)
    }

    fn raw_ip(&mut self, data: &[u8]) -> Step {
        match data.first().map(|b| b >> 4) {
            Some(4) => self.ipv4(data),
            Some(6) => self.ipv6(data),
            _ => Err(malformed(
                "ip",
                "raw link type but no IPv4/IPv6 version nibble",
            )),
        }
    }

    fn ethertype(&mut self, ethertype: u16, rest: &[u8]) -> Step {
        match EtherType::from(ethertype) {
            EtherType::Ipv4 => self.ipv4(rest),
            EtherType::Ipv6 => self.ipv6(rest),
            EtherType::Arp => {
                self.layers.push(Layer::Arp);
                Ok(())
            }
            EtherType::Nsh => self.tunnel(|d| d.nsh(rest)),
            other => self.data(format!("ethertype {:#06x}", other.value()), rest),
        }
    }

    fn data(&mut self, protocol: String, rest: &[u8]) -> Step {
        self.layers.push(Layer::Data {
            protocol,
            len: rest.len(),
        });
        Ok(())
    }

    fn ipv4(&mut self, data: &[u8]) -> Step {
        if data.first().map(|b| b >> 4) != Some(4) {
            return Err(malformed("ipv4", "version is not 4"));
        }
        let ip = Ipv4Packet::new_checked(data).map_err(|_| {
            malformed(
                "ipv4",
                "truncated: header or total length longer than the packet",
            )
        })?;
        let proto = u8::from(ip.next_header());
        self.layers.push(Layer::Ipv4 {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            ttl: ip.hop_limit(),
            protocol: proto,
        });
        if ip.more_frags() || ip.frag_offset() != 0 {
            return self.data("ipv4 fragment".into(), ip.payload());
        }
        self.ip_payload(proto, ip.payload())
    }

    fn ipv6(&mut self, data: &[u8]) -> Step {
        if data.first().map(|b| b >> 4) != Some(6) {
            return Err(malformed("ipv6", "version is not 6"));
        }
        let ip = Ipv6Packet::new_checked(data).map_err(|_| {
            malformed(
                "ipv6",
                "truncated: header or payload length longer than the packet",
            )
        })?;
        let (next_header, payload, fragmented) =
            ipv6_extensions(u8::from(ip.next_header()), ip.payload())?;
        self.layers.push(Layer::Ipv6 {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            hop_limit: ip.hop_limit(),
            next_header,
        });
        if fragmented {
            return self.data("ipv6 fragment".into(), payload);
        }
        self.ip_payload(next_header, payload)
    }

    fn ip_payload(&mut self, proto: u8, rest: &[u8]) -> Step {
        match proto {
            ip_proto::UDP => self.udp(rest),
            ip_proto::TCP => self.tcp(rest),
            ip_proto::GRE => self.tunnel(|d| d.gre(rest)),
            ip_proto::IPIP => self.tunnel(|d| d.ipv4(rest)),
            ip_proto::IPV6 => self.tunnel(|d| d.ipv6(rest)),
            other => self.data(format!("ip protocol {other}"), rest),
        }
    }

    fn udp(&mut self, data: &[u8]) -> Step {
        let udp = UdpPacket::new_checked(data).map_err(|_| {
            malformed(
                "udp",
                "truncated: header or length field longer than the packet",
            )
        })?;
        let dport = udp.dst_port();
        self.layers.push(Layer::Udp {
            src_port: udp.src_port(),
            dst_port: dport,
        });
        let rest = udp.payload();
        let p = self.ports;
        if p.vxlan.contains(&dport) {
            self.tunnel(|d| d.vxlan(rest))
        } else if p.vxlan_gpe.contains(&dport) {
            self.tunnel(|d| d.vxlan_gpe(rest))
        } else if p.geneve.contains(&dport) {
            self.tunnel(|d| d.geneve(rest))
        } else if p.overlay.contains(&dport) {
            self.tunnel(|d| d.overlay(rest))
        } else {
            self.data(format!("udp port {dport}"), rest)
        }
    }

    fn tcp(&mut self, data: &[u8]) -> Step {
        let tcp = TcpPacket::new_checked(data)
            .map_err(|_| malformed("tcp", "truncated: header longer than the packet"))?;
        let dport = tcp.dst_port();
        if self.ports.stt.contains(&dport) {
            return self.tunnel(|d| d.stt(data));
        }
        self.layers.push(Layer::Tcp {
            src_port: tcp.src_port(),
            dst_port: dport,
        });
        self.data(format!("tcp port {dport}"), tcp.payload())
    }

    /// Runs a tunnel decoder one nesting level deeper, refusing runaway nesting.
    fn tunnel(&mut self, f: impl FnOnce(&mut Self) -> Step) -> Step {
        if self.depth >= MAX_TUNNEL_DEPTH {
            return Err(malformed(
                "tunnel",
                format!("more than {MAX_TUNNEL_DEPTH} nested tunnels"),
            ));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn vxlan(&mut self, data: &[u8]) -> Step {
        let p = VxlanPacket::new_checked(data).map_err(|e| malformed("vxlan", e))?;
        let r = VxlanRepr::parse(&p).map_err(|e| malformed("vxlan", e))?;
        let gbp = r.gbp.unwrap_or_default();
        self.layers.push(Layer::Vxlan {
            vni: r.vni,
            group_policy_id: r.gbp.map(|g| g.group_policy_id),
            dont_learn: gbp.dont_learn,
            policy_applied: gbp.policy_applied,
        });
        self.ethernet(p.payload())
    }

    fn vxlan_gpe(&mut self, data: &[u8]) -> Step {
        let p = VxlanGpePacket::new_checked(data).map_err(|e| malformed("vxlan-gpe", e))?;
        let r = VxlanGpeRepr::parse(&p).map_err(|e| malformed("vxlan-gpe", e))?;
        self.layers.push(Layer::VxlanGpe {
            vni: r.vni,
            next_protocol: format!("{:?}", r.next_protocol).to_lowercase(),
            oam: r.oam,
        });
        self.next_protocol(r.next_protocol, p.payload())
    }

    fn next_protocol(&mut self, next: NextProtocol, rest: &[u8]) -> Step {
        match next {
            NextProtocol::Ethernet => self.ethernet(rest),
            NextProtocol::Ipv4 => self.ipv4(rest),
            NextProtocol::Ipv6 => self.ipv6(rest),
            NextProtocol::Nsh => self.tunnel(|d| d.nsh(rest)),
            other => self.data(format!("next protocol {other:?}").to_lowercase(), rest),
        }
    }

    fn nsh(&mut self, data: &[u8]) -> Step {
        let p = NshPacket::new_checked(data).map_err(|e| malformed("nsh", e))?;
        let r = NshRepr::parse(&p).map_err(|e| malformed("nsh", e))?;
        self.layers.push(Layer::Nsh {
            spi: r.spi,
            si: r.si,
            ttl: r.ttl,
            md_type: p.md_type().into(),
            next_protocol: format!("{:?}", r.next_protocol).to_lowercase(),
            oam: r.oam,
        });
        self.next_protocol(r.next_protocol, p.payload())
    }

    fn geneve(&mut self, data: &[u8]) -> Step {
        let p = GenevePacket::new_checked(data).map_err(|e| malformed("geneve", e))?;
        let r = GeneveRepr::parse(&p).map_err(|e| malformed("geneve", e))?;
        let mut options = Vec::new();
        for o in GeneveOptions::new(r.options) {
            let o = o.map_err(|e| malformed("geneve option", e))?;
            options.push(GeneveOptionView {
                class: o.class,
                kind: o.kind,
                len: o.data.len(),
            });
        }
        self.layers.push(Layer::Geneve {
            vni: r.vni,
            protocol: r.protocol,
            oam: r.oam,
            critical: r.critical,
            options,
        });
        self.ethertype_payload(r.protocol, p.payload())
    }

    /// A payload named by an ethertype, where 0x6558 (Transparent Ethernet Bridging) means an
    /// Ethernet frame follows (Geneve, GRE).
    fn ethertype_payload(&mut self, protocol: u16, rest: &[u8]) -> Step {
        if protocol == 0x6558 {
            self.ethernet(rest)
        } else {
            self.ethertype(protocol, rest)
        }
    }

    fn gre(&mut self, data: &[u8]) -> Step {
        let p = GrePacket::new_checked(data).map_err(|e| malformed("gre", e))?;
        let r = GreRepr::parse(&p).map_err(|e| malformed("gre", e))?;
        match r.as_nvgre() {
            Some(k) => self.layers.push(Layer::Nvgre {
                vsid: k.vsid,
                flow_id: k.flow_id,
            }),
            None => self.layers.push(Layer::Gre {
                protocol: r.protocol,
                key: r.key,
                sequence: r.sequence,
            }),
        }
        self.ethertype_payload(r.protocol, p.payload())
    }

    fn stt(&mut self, data: &[u8]) -> Step {
        let seg = SttSegmentPacket::new_checked(data).map_err(|e| malformed("stt segment", e))?;
        let mut layer = Layer::Stt {
            frame_id: seg.frame_id(),
            frame_len: seg.frame_len(),
            fragment_offset: seg.fragment_offset(),
            context_id: None,
            mss: None,
            vlan: None,
        };
        if seg.fragment_offset() != 0 {
            // Only the first segment carries the STT header; later ones are raw frame bytes.
            self.layers.push(layer);
            return self.data("stt continuation".into(), seg.payload());
        }
        let p = SttPacket::new_checked(seg.payload()).map_err(|e| malformed("stt", e))?;
        let r = SttRepr::parse(&p).map_err(|e| malformed("stt", e))?;
        if let Layer::Stt {
            context_id,
            mss,
            vlan,
            ..
        } = &mut layer
        {
            *context_id = Some(r.context_id);
            *mss = Some(r.mss);
            *vlan = p.vlan_present().then(|| p.vlan_id());
        }
        self.layers.push(layer);
        let inner = p.payload();
        if usize::from(seg.frame_len()) > seg.payload().len() {
            // The frame continues in later segments: decode what this one holds.
            return self.ethernet_prefix(inner);
        }
        self.ethernet(inner)
    }

    /// Decodes the start of a frame whose tail is in other segments: the Ethernet addresses are
    /// there even when the IP packet is not whole.
    fn ethernet_prefix(&mut self, data: &[u8]) -> Step {
        let eth = EthernetFrame::new_checked(data)
            .map_err(|_| malformed("ethernet", truncated(data.len(), 14)))?;
        self.layers.push(Layer::Ethernet {
            src: Mac::from(eth.src_addr()).to_string(),
            dst: Mac::from(eth.dst_addr()).to_string(),
            vlans: Vec::new(),
            ethertype: u16::from(eth.ethertype()),
        });
        self.data("segmented frame".into(), eth.payload())
    }

    fn overlay(&mut self, data: &[u8]) -> Step {
        use nvo_wire::overlay::Application;
        let p = OverlayPacket::new_checked(data).map_err(|e| malformed("overlay", e))?;
        let r = OverlayRepr::parse(&p).map_err(|e| malformed("overlay", e))?;
        self.layers.push(Layer::Overlay {
            app: format!("{:?}", r.app).to_lowercase(),
            ttl: r.ttl,
            flags: r.flags,
            vni: r.vni,
            flow_hash: r.flow_hash,
            dst_node: r.dst_node,
            src_node: r.src_node,
        });
        match r.app {
            Application::Ethernet => self.ethernet(p.payload()),
            Application::Ipv4 => self.ipv4(p.payload()),
            Application::Ipv6 => self.ipv6(p.payload()),
            Application::Unknown(n) => self.data(format!("overlay application {n}"), p.payload()),
        }
    }
}
