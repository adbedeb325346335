//! The built-in profiles against nvo_wire (itself checked against scapy and tshark):
//! `header()` writes the bytes nvo_wire's emitters write for the same values, and `decap()`
//! reads nvo_wire-built packets and scapy's vectors (tests/vectors/*.json) to the right profile,
//! VNI, header length and payload.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr};

use nvo_encap::builtin::{self, ids};
use nvo_encap::engine::{Decap, DecapError, Engine, EngineError, Limits, Target};
use nvo_encap::profile::{Payload, ProfileId, Transport};
use nvo_wire::geneve::{emit_options, GeneveOption, GenevePacket, GeneveRepr};
use nvo_wire::gre::{GrePacket, GreRepr};
use nvo_wire::overlay::{Application, OverlayPacket, OverlayRepr};
use nvo_wire::stt::{SttFlags, SttPacket, SttRepr};
use nvo_wire::vxlan::{Gbp, VxlanPacket, VxlanRepr};
use nvo_wire::vxlan_gpe::{NextProtocol, VxlanGpePacket, VxlanGpeRepr};
use serde::Deserialize;

const REMOTE: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
const VNIS: [u32; 4] = [0, 1, 0x12_3456, 0xff_ffff];
const ENTROPIES: [u16; 3] = [0, 0x00a5, 0xbeef];

fn engine() -> Engine {
    Engine::new(Limits::default())
}

fn header(e: &mut Engine, id: ProfileId, vni: u32, entropy: u16) -> Vec<u8> {
    e.header(id, vni, REMOTE, entropy, 100).unwrap().to_vec()
}

fn params(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

#[test]
fn every_builtin_is_valid_and_has_its_id() {
    let e = engine();
    for (i, p) in builtin::all().iter().enumerate() {
        p.validate()
            .unwrap_or_else(|err| panic!("{}: {err}", p.name));
        assert_eq!(e.id(&p.name), Some(ProfileId(i as u16)));
        assert!(builtin::is_builtin(&p.name));
    }
    assert_eq!(e.id("vxlan"), Some(ids::VXLAN));
    assert_eq!(e.id("stt"), Some(ids::STT));
}

#[test]
fn vxlan_and_gbp_headers_are_nvo_wire_s() {
    let mut e = engine();
    for vni in VNIS {
        let mut want = [0u8; 8];
        VxlanRepr { vni, gbp: None }
            .emit(&mut VxlanPacket::new_unchecked(&mut want[..]))
            .unwrap();
        assert_eq!(header(&mut e, ids::VXLAN, vni, 0xbeef), want);

        let group = (vni as u16) ^ 0x5a5a;
        e.set_params(
            ids::VXLAN_GBP,
            vni,
            None,
            &params(&[("group", group.into())]),
        )
        .unwrap();
        let gbp = Gbp {
            dont_learn: false,
            policy_applied: false,
            group_policy_id: group,
        };
        VxlanRepr {
            vni,
            gbp: Some(gbp),
        }
        .emit(&mut VxlanPacket::new_unchecked(&mut want[..]))
        .unwrap();
        assert_eq!(header(&mut e, ids::VXLAN_GBP, vni, 7), want);
    }
}

#[test]
fn gpe_geneve_nvgre_stt_headers_are_nvo_wire_s() {
    let mut e = engine();
    for vni in VNIS {
        let mut want = [0u8; 8];
        let gpe = VxlanGpeRepr {
            vni,
            next_protocol: NextProtocol::Ethernet,
            oam: false,
            bum: false,
        };
        gpe.emit(&mut VxlanGpePacket::new_unchecked(&mut want[..]))
            .unwrap();
        assert_eq!(header(&mut e, ids::VXLAN_GPE, vni, 1), want);

        let geneve = GeneveRepr {
            oam: false,
            critical: false,
            protocol: 0x6558,
            vni,
            options: &[],
        };
        geneve
            .emit(&mut GenevePacket::new_unchecked(&mut want[..]))
            .unwrap();
        assert_eq!(header(&mut e, ids::GENEVE, vni, 1), want);

        for entropy in ENTROPIES {
            GreRepr::nvgre(vni, entropy as u8)
                .emit(&mut GrePacket::new_unchecked(&mut want[..]))
                .unwrap();
            assert_eq!(header(&mut e, ids::NVGRE, vni, entropy), want, "vsid {vni}");
        }

        let mut stt = [0u8; 18];
        SttRepr {
            flags: SttFlags::default(),
            l4_offset: 0,
            mss: 0,
            vlan: None,
            context_id: vni.into(),
        }
        .emit(&mut SttPacket::new_unchecked(&mut stt[..]))
        .unwrap();
        assert_eq!(header(&mut e, ids::STT, vni, 9), stt);
    }
    assert!(header(&mut e, ids::IPIP, 5, 1).is_empty());
    assert!(header(&mut e, ids::IP6IP6, 5, 1).is_empty());
}

/// An L3 network on vxlan-gpe carries both families: each packet's header announces its own
/// (Next Protocol 1 or 2, nvo_wire's bytes), whatever the cached template sent last, and a
/// header without a payload says the network's. ipip cannot announce IPv6.
#[test]
fn gpe_headers_announce_each_packets_family() {
    let mut e = engine();
    e.set_payload(ids::VXLAN_GPE, 7, Payload::Ipv4).unwrap();
    let gpe = |next_protocol| {
        let mut want = [0u8; 8];
        VxlanGpeRepr {
            vni: 7,
            next_protocol,
            oam: false,
            bum: false,
        }
        .emit(&mut VxlanGpePacket::new_unchecked(&mut want[..]))
        .unwrap();
        want
    };
    let carrying = |e: &mut Engine, payload| {
        e.header_carrying(ids::VXLAN_GPE, 7, REMOTE, (1, 100), payload)
            .unwrap()
            .to_vec()
    };
    assert_eq!(
        carrying(&mut e, Some(Payload::Ipv6)),
        gpe(NextProtocol::Ipv6)
    );
    assert_eq!(carrying(&mut e, None), gpe(NextProtocol::Ipv4));
    assert_eq!(
        carrying(&mut e, Some(Payload::Ipv6)),
        gpe(NextProtocol::Ipv6)
    );
    assert_eq!(
        header(&mut e, ids::VXLAN_GPE, 7, 1),
        gpe(NextProtocol::Ipv4)
    );
    assert_eq!(
        carrying(&mut e, Some(Payload::Ipv4)),
        gpe(NextProtocol::Ipv4)
    );
    assert!(matches!(
        e.header_carrying(ids::IPIP, 0, REMOTE, (1, 100), Some(Payload::Ipv6)),
        Err(EngineError::PayloadNotCarried { .. })
    ));
    assert!(e
        .header_carrying(ids::IP6IP6, 0, REMOTE, (1, 100), Some(Payload::Ipv6))
        .unwrap()
        .is_empty());
}

#[test]
fn overlay_header_is_nvo_wire_s_with_params_and_default_ttl() {
    let mut e = engine();
    e.bind_local(ids::OVERLAY, 300, &params(&[("src_node", 11)]))
        .unwrap();
    e.set_params(
        ids::OVERLAY,
        300,
        Some(REMOTE),
        &params(&[("dst_node", 22)]),
    )
    .unwrap();
    for entropy in ENTROPIES {
        let mut want = [0u8; 20];
        OverlayRepr {
            app: Application::Ethernet,
            ttl: 64,
            flags: 0,
            vni: 300,
            flow_hash: entropy.into(),
            dst_node: 22,
            src_node: 11,
        }
        .emit(&mut OverlayPacket::new_unchecked(&mut want[..]))
        .unwrap();
        assert_eq!(header(&mut e, ids::OVERLAY, 300, entropy), want);
    }
    // A destination's ttl overrides the default written in the template.
    e.set_params(
        ids::OVERLAY,
        300,
        Some(REMOTE),
        &params(&[("dst_node", 22), ("ttl", 5)]),
    )
    .unwrap();
    assert_eq!(header(&mut e, ids::OVERLAY, 300, 0)[2], 5);
}

/// Header followed by an inner frame.
fn packet(header: &[u8]) -> Vec<u8> {
    let mut p = header.to_vec();
    p.extend_from_slice(&[
        0x52, 0x54, 0, 0xaa, 0xbb, 0x02, 0x52, 0x54, 0, 0xaa, 0xbb, 0x01,
    ]);
    p.extend_from_slice(&[0x88, 0xb5, 0, 0, 0, 0]);
    p
}

fn expect(profile: ProfileId, vni: u32, header_len: usize, payload: Payload) -> Decap {
    Decap {
        profile,
        target: Target::Local { vni },
        header_len,
        payload,
        dont_learn: false,
    }
}

#[test]
fn decap_reads_nvo_wire_packets() {
    let mut e = engine();
    for id in [
        ids::VXLAN,
        ids::VXLAN_GPE,
        ids::GENEVE,
        ids::NVGRE,
        ids::OVERLAY,
        ids::STT,
    ] {
        e.bind_local(id, 0x12_3456, &[]).unwrap();
    }
    e.bind_local(ids::IPIP, 9, &[]).unwrap();
    e.bind_local(ids::IP6IP6, 10, &[]).unwrap();
    let cases: Vec<(Transport, ProfileId, Vec<u8>)> = [
        ids::VXLAN,
        ids::VXLAN_GPE,
        ids::GENEVE,
        ids::NVGRE,
        ids::OVERLAY,
        ids::STT,
    ]
    .into_iter()
    .map(|id| {
        let t = e.profile(id).unwrap().transport;
        (t, id, header(&mut e, id, 0x12_3456, 77))
    })
    .collect();
    for (transport, id, h) in cases {
        let got = e.decap(transport, &packet(&h)).unwrap();
        assert_eq!(
            got,
            expect(id, 0x12_3456, h.len(), Payload::Ethernet),
            "{id}"
        );
        // One byte short of the header: truncated, whatever the protocol.
        assert_eq!(
            e.decap(transport, &h[..h.len() - 1]),
            Err(DecapError::Truncated),
            "{id}"
        );
    }
    let v4 = [0x45u8; 20];
    assert_eq!(
        e.decap(Transport::Ip(4), &v4),
        Ok(expect(ids::IPIP, 9, 0, Payload::Ipv4))
    );
    assert_eq!(
        e.decap(Transport::Ip(41), &v4),
        Ok(expect(ids::IP6IP6, 10, 0, Payload::Ipv6))
    );
}

#[test]
fn decap_skips_geneve_options_and_reads_gpe_next_protocol() {
    let mut e = engine();
    e.bind_local(ids::GENEVE, 300, &[]).unwrap();
    e.bind_local(ids::VXLAN_GPE, 77, &[]).unwrap();
    let mut opts = [0u8; 64];
    let n = emit_options(
        &[
            GeneveOption {
                class: 0x0102,
                kind: 0x10,
                data: &[1, 2, 3, 4],
            },
            GeneveOption {
                class: 0xffff,
                kind: 1,
                data: &[0; 8],
            },
        ],
        &mut opts,
    )
    .unwrap();
    let mut buf = [0u8; 8 + 64];
    let repr = GeneveRepr {
        oam: false,
        critical: false,
        protocol: 0x86dd,
        vni: 300,
        options: &opts[..n],
    };
    repr.emit(&mut GenevePacket::new_unchecked(&mut buf[..]))
        .unwrap();
    let h = &buf[..repr.buffer_len()];
    assert_eq!(
        e.decap(Transport::Udp(6081), &packet(h)),
        Ok(expect(ids::GENEVE, 300, 8 + n, Payload::Ipv6))
    );
    // The options run past the end of the packet.
    assert_eq!(
        e.decap(Transport::Udp(6081), &h[..10]),
        Err(DecapError::Truncated)
    );
    for (next, payload) in [
        (NextProtocol::Ipv4, Some(Payload::Ipv4)),
        (NextProtocol::Ipv6, Some(Payload::Ipv6)),
        (NextProtocol::Nsh, Some(Payload::Nsh)),
        (NextProtocol::Mpls, None),
    ] {
        let mut h = [0u8; 8];
        VxlanGpeRepr {
            vni: 77,
            next_protocol: next,
            oam: false,
            bum: false,
        }
        .emit(&mut VxlanGpePacket::new_unchecked(&mut h[..]))
        .unwrap();
        let got = e.decap(Transport::Udp(4790), &packet(&h));
        match payload {
            Some(p) => assert_eq!(got, Ok(expect(ids::VXLAN_GPE, 77, 8, p))),
            None => assert_eq!(got, Err(DecapError::UnknownPayload)),
        }
    }
}

// ---- scapy vectors ----

#[derive(Debug, Deserialize)]
struct Vector {
    name: String,
    frame: String,
    header_offset: usize,
    fields: serde_json::Value,
}

#[derive(Debug, Deserialize)]
struct VectorFile {
    source: String,
    vectors: Vec<Vector>,
}

fn scapy_vectors(proto: &str) -> Vec<Vector> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors")
        .join(format!("{proto}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let file: VectorFile = serde_json::from_str(&text).unwrap();
    assert!(file.source.starts_with("scapy "), "{}", path.display());
    assert!(!file.vectors.is_empty());
    file.vectors
}

impl Vector {
    fn header(&self) -> Vec<u8> {
        let frame: Vec<u8> = (0..self.frame.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&self.frame[i..i + 2], 16).unwrap())
            .collect();
        frame[self.header_offset..].to_vec()
    }
    fn u64(&self, f: &str) -> u64 {
        self.fields[f].as_u64().unwrap()
    }
    fn bool(&self, f: &str) -> bool {
        self.fields[f].as_bool().unwrap()
    }
}

#[test]
fn scapy_vxlan_vectors_pick_vxlan_or_gbp() {
    let mut e = engine();
    for v in scapy_vectors("vxlan") {
        let vni = v.u64("vni") as u32;
        let gbp = v.bool("gbp");
        let id = if gbp { ids::VXLAN_GBP } else { ids::VXLAN };
        e.bind_local(id, vni, &[]).unwrap();
        let got = e.decap(Transport::Udp(4789), &v.header()).unwrap();
        let dont_learn = gbp && v.bool("dont_learn");
        assert_eq!(
            got,
            Decap {
                dont_learn,
                ..expect(id, vni, 8, Payload::Ethernet)
            },
            "{}",
            v.name
        );
        e.unbind_local(id, vni);
    }
}

#[test]
fn scapy_gpe_geneve_nvgre_vectors() {
    let mut e = engine();
    for v in scapy_vectors("vxlan_gpe") {
        let vni = v.u64("vni") as u32;
        e.bind_local(ids::VXLAN_GPE, vni, &[]).unwrap();
        let payload = match v.u64("next_protocol") {
            1 => Payload::Ipv4,
            2 => Payload::Ipv6,
            3 => Payload::Ethernet,
            _ => Payload::Nsh,
        };
        assert_eq!(
            e.decap(Transport::Udp(4790), &v.header()),
            Ok(expect(ids::VXLAN_GPE, vni, 8, payload)),
            "{}",
            v.name
        );
    }
    for v in scapy_vectors("geneve") {
        let vni = v.u64("vni") as u32;
        e.bind_local(ids::GENEVE, vni, &[]).unwrap();
        let got = e.decap(Transport::Udp(6081), &v.header());
        if v.bool("critical") || v.bool("oam") {
            // RFC 8926 §3.4/§3.5: control packets and unknown critical options are not forwarded.
            assert_eq!(got, Err(DecapError::NoMatch), "{}", v.name);
            continue;
        }
        let payload = match v.u64("protocol") {
            0x6558 => Payload::Ethernet,
            0x0800 => Payload::Ipv4,
            _ => Payload::Ipv6,
        };
        // The header is 8 bytes and its options (Opt Len, in 4-byte words), which decap skips.
        let len = 8 + usize::from(v.header()[0] & 0x3f) * 4;
        assert_eq!(
            got,
            Ok(expect(ids::GENEVE, vni, len, payload)),
            "{}",
            v.name
        );
    }
    for v in scapy_vectors("nvgre") {
        let got = e.decap(Transport::Ip(47), &v.header());
        if v.bool("checksum_present") || !v.bool("key_present") {
            // Not NVGRE as RFC 7637 §3.2 sends it: the key is not at bytes 4..8, or absent.
            assert_eq!(got, Err(DecapError::NoMatch), "{}", v.name);
            continue;
        }
        let vsid = v.u64("vsid") as u32;
        assert_eq!(got, Err(DecapError::UnknownKey), "{}", v.name);
        e.bind_local(ids::NVGRE, vsid, &[]).unwrap();
        assert_eq!(
            e.decap(Transport::Ip(47), &v.header()),
            Ok(expect(ids::NVGRE, vsid, 8, Payload::Ethernet)),
            "{}",
            v.name
        );
    }
}
