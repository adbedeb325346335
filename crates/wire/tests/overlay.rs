//! nvo's overlay header against Wireshark: the Lua dissector shipped in dissectors/ reads back
//! every field nvo writes and hands the payload to Wireshark's own Ethernet, IPv4 and IPv6
//! dissectors; the sample that tests/vectors/gen_scapy.py builds (overlay_sample()) parses to
//! the values it packed. scapy has no layer for this header (nvo defines it), so there is no
//! tests/vectors/overlay.json.

// Helpers outside #[test] functions fail the test by panicking, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_wire::overlay::{Application, OverlayPacket, OverlayRepr, HEADER_LEN};
use nvo_wire::std_wire::{
    EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, Ipv6Address,
    Ipv6Packet, Ipv6Repr, UdpPacket,
};
use proptest::prelude::*;

/// The UDP payload of an Ethernet/IPv4/UDP frame sent to `dport`.
fn udp_payload_to(frame: &[u8], dport: u16) -> Option<Vec<u8>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Udp {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    (udp.dst_port() == dport).then(|| udp.payload().to_vec())
}

/// The `-X` argument that loads dissectors/nvo_overlay.lua.
fn lua_arg() -> String {
    format!("lua_script:{}", overlay_dissector().display())
}

#[test]
fn scapy_sample_parses_to_packed_values() {
    let frames = read_pcap(&repo_root().join("samples/tunnels.pcap"));
    let payload = frames
        .iter()
        .find_map(|f| udp_payload_to(f, nvo_wire::ports::OVERLAY))
        .expect("samples/tunnels.pcap holds gen_scapy.py's overlay_sample()");
    let p = OverlayPacket::new_checked(&payload[..]).unwrap();
    // struct.pack("!BBBBIIII", 1, 7, 16, 0, (1000 << 8), 0xCAFEF00D, 3, 1)
    let packed = OverlayRepr {
        app: Application::Ethernet,
        ttl: 16,
        flags: 0,
        vni: 1000,
        flow_hash: 0xcafe_f00d,
        dst_node: 3,
        src_node: 1,
    };
    assert_eq!(OverlayRepr::parse(&p), Ok(packed));
    // inner_ether(): from 52:54:00:aa:bb:01 to 52:54:00:aa:bb:02.
    assert_eq!(&p.payload()[..6], &[0x52, 0x54, 0, 0xaa, 0xbb, 0x02]);
    assert_eq!(&p.payload()[6..12], &[0x52, 0x54, 0, 0xaa, 0xbb, 0x01]);

    let mut out = [0u8; HEADER_LEN];
    packed
        .emit(&mut OverlayPacket::new_unchecked(&mut out[..]))
        .unwrap();
    assert_eq!(&out[..], &payload[..HEADER_LEN]);

    // The dissector reads the same values out of the committed capture.
    let sample = vec![frames
        .iter()
        .find(|f| udp_payload_to(f, nvo_wire::ports::OVERLAY).is_some())
        .unwrap()
        .clone()];
    let rows = tshark_fields("overlay-sample", &sample, &FIELDS, &["-X", &lua_arg()]);
    assert_row(&packed, &rows[0]);
    assert!(rows[0][9].contains("52:54:00:aa:bb:01"), "{:?}", rows[0]);
}

const FIELDS: [&str; 12] = [
    "nvo.version",
    "nvo.app",
    "nvo.ttl",
    "nvo.flags",
    "nvo.vni",
    "nvo.reserved",
    "nvo.flow_hash",
    "nvo.dst_node",
    "nvo.src_node",
    "eth.src",
    "ip.src",
    "ipv6.src",
];

fn assert_row(r: &OverlayRepr, row: &[String]) {
    let ctx = format!("{r}: {row:?}");
    assert_eq!(tshark_num(&row[0]), 1, "version {ctx}");
    assert_eq!(tshark_num(&row[1]), u64::from(u8::from(r.app)), "app {ctx}");
    assert_eq!(tshark_num(&row[2]), u64::from(r.ttl), "ttl {ctx}");
    assert_eq!(tshark_num(&row[3]), u64::from(r.flags), "flags {ctx}");
    assert_eq!(tshark_num(&row[4]), u64::from(r.vni), "vni {ctx}");
    assert_eq!(tshark_num(&row[5]), 0, "reserved {ctx}");
    assert_eq!(
        tshark_num(&row[6]),
        u64::from(r.flow_hash),
        "flow hash {ctx}"
    );
    assert_eq!(tshark_num(&row[7]), u64::from(r.dst_node), "dst node {ctx}");
    assert_eq!(tshark_num(&row[8]), u64::from(r.src_node), "src node {ctx}");
}

const INNER_V4_SRC: Ipv4Address = Ipv4Address::new(10, 1, 0, 1);
const INNER_V6_SRC: Ipv6Address = Ipv6Address::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);

/// An IPv4 or IPv6 packet (protocol 253, experimental) from the inner source addresses.
fn inner_ip(v6: bool) -> Vec<u8> {
    let data = b"nvo-overlay";
    if v6 {
        let ip = Ipv6Repr {
            src_addr: INNER_V6_SRC,
            dst_addr: Ipv6Address::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
            next_header: IpProtocol::Unknown(253),
            payload_len: data.len(),
            hop_limit: 64,
        };
        let mut buf = vec![0u8; ip.buffer_len() + data.len()];
        let mut p = Ipv6Packet::new_unchecked(&mut buf[..]);
        ip.emit(&mut p);
        p.payload_mut().copy_from_slice(data);
        buf
    } else {
        let ip = Ipv4Repr {
            src_addr: INNER_V4_SRC,
            dst_addr: Ipv4Address::new(10, 1, 0, 2),
            next_header: IpProtocol::Unknown(253),
            payload_len: data.len(),
            hop_limit: 64,
        };
        let mut buf = vec![0u8; ip.buffer_len() + data.len()];
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
        ip.emit(&mut p, &Default::default());
        p.payload_mut().copy_from_slice(data);
        p.fill_checksum();
        buf
    }
}

fn overlay_frame(r: &OverlayRepr, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; r.buffer_len() + payload.len()];
    let mut p = OverlayPacket::new_unchecked(&mut buf[..]);
    r.emit(&mut p).unwrap();
    p.payload_mut().copy_from_slice(payload);
    udp_frame(50040, dport, &buf)
}

fn cases() -> Vec<(OverlayRepr, Vec<u8>)> {
    let ethernet = inner_frame([0x52, 0x54, 0, 0, 0, 0x31], [0x52, 0x54, 0, 0, 0, 0x32]);
    let base = OverlayRepr {
        app: Application::Ethernet,
        ttl: 16,
        flags: 0,
        vni: 1000,
        flow_hash: 0xcafe_f00d,
        dst_node: 3,
        src_node: 1,
    };
    vec![
        (base, ethernet.clone()),
        (
            OverlayRepr {
                ttl: 255,
                flags: 0xa5,
                vni: 0xff_ffff,
                flow_hash: u32::MAX,
                dst_node: u32::MAX,
                src_node: 0,
                ..base
            },
            ethernet,
        ),
        (
            OverlayRepr {
                app: Application::Ipv4,
                ttl: 1,
                vni: 1,
                flow_hash: 0,
                dst_node: 0x0102_0304,
                src_node: 0x0a0b_0c0d,
                ..base
            },
            inner_ip(false),
        ),
        (
            OverlayRepr {
                app: Application::Ipv6,
                ttl: 0,
                flags: 1,
                vni: 0x12_3456,
                dst_node: 7,
                src_node: 8,
                ..base
            },
            inner_ip(true),
        ),
        (
            OverlayRepr {
                app: Application::Unknown(99),
                vni: 42,
                ..base
            },
            b"opaque".to_vec(),
        ),
    ]
}

#[test]
fn lua_dissector_reads_what_nvo_emits() {
    let cases = cases();
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|(r, payload)| overlay_frame(r, nvo_wire::ports::OVERLAY, payload))
        .collect();
    let rows = tshark_fields("overlay", &frames, &FIELDS, &["-X", &lua_arg()]);
    for ((r, _), row) in cases.iter().zip(&rows) {
        assert_row(r, row);
        // The payload went to the dissector the application names, and only to it.
        let inner_eth = row[9].contains("52:54:00:00:00:31");
        let inner_v4 = row[10].contains("10.1.0.1");
        let inner_v6 = row[11].contains("fd00::1");
        let expected = match r.app {
            Application::Ethernet => (true, false, false),
            Application::Ipv4 => (false, true, false),
            Application::Ipv6 => (false, false, true),
            Application::Unknown(_) => (false, false, false),
        };
        assert_eq!((inner_eth, inner_v4, inner_v6), expected, "{r}: {row:?}");
    }
}

#[test]
fn lua_dissector_port_preference() {
    let (r, payload) = cases().swap_remove(0);
    let frames = vec![overlay_frame(&r, 60010, &payload)];
    let lua = lua_arg();
    let default = tshark_fields("overlay-port-default", &frames, &FIELDS, &["-X", &lua]);
    assert_eq!(
        default[0][4], "",
        "port 60010 is not the overlay's by default"
    );
    let moved = tshark_fields(
        "overlay-port-pref",
        &frames,
        &FIELDS,
        &["-X", &lua, "-o", "nvo.udp_port:60010"],
    );
    assert_row(&r, &moved[0]);
}

#[test]
fn lua_dissector_flags_malformed_headers() {
    let (r, payload) = cases().swap_remove(0);
    let good = overlay_frame(&r, nvo_wire::ports::OVERLAY, &payload);
    let mut bad_version = overlay_frame(&r, nvo_wire::ports::OVERLAY, &payload);
    let header_at = 14 + 20 + 8;
    bad_version[header_at] = 2;
    let short = udp_frame(
        50040,
        nvo_wire::ports::OVERLAY,
        &[1, 7, 16, 0, 0, 0, 1, 0, 0, 0],
    );
    let header_only = overlay_frame(&r, nvo_wire::ports::OVERLAY, &[]);
    let frames = vec![good, bad_version, short, header_only];
    let rows = tshark_fields(
        "overlay-malformed",
        &frames,
        &[
            "nvo.version",
            "_ws.expert.message",
            "_ws.expert.group",
            "eth.src",
        ],
        &["-X", &lua_arg()],
    );
    assert_eq!(
        rows[0][1], "",
        "a good header has no expert info: {:?}",
        rows[0]
    );
    // Each bad header gets one expert item, in the Malformed group (PI_MALFORMED).
    let malformed = |row: &[String], msg: &str| {
        assert!(row[1].contains(msg), "{row:?}");
        assert_eq!(tshark_num(&row[2]), 0x0700_0000, "{row:?}");
    };
    malformed(&rows[1], "Unknown overlay version 2");
    assert_eq!(tshark_num(&rows[1][0]), 2);
    assert!(
        !rows[1][3].contains("52:54:00:00:00:31"),
        "payload of a bad version dissected"
    );
    malformed(&rows[2], "shorter than 20 bytes (10)");
    // A header with no payload is fine (and no Lua error either).
    assert_eq!(
        (rows[3][0].as_str(), rows[3][1].as_str()),
        ("1", ""),
        "{:?}",
        rows[3]
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(mut p) = OverlayPacket::new_checked(bytes.clone()) {
            let _ = (p.version(), p.app(), p.ttl(), p.flags(), p.vni(), p.reserved());
            let _ = (p.flow_hash(), p.dst_node(), p.src_node());
            let before = p.ttl();
            match p.decrement_ttl() {
                Some(t) => prop_assert_eq!(t, before - 1),
                None => prop_assert_eq!(before, 0),
            }
        }
        if let Ok(p) = OverlayPacket::new_checked(&bytes[..]) {
            prop_assert_eq!(p.payload().len(), bytes.len() - HEADER_LEN);
            if let Ok(r) = OverlayRepr::parse(&p) {
                let _ = r.to_string();
                prop_assert_eq!(bytes[0], 1);
            }
        }
    }

    #[test]
    fn valid_reprs_round_trip(
        app in any::<u8>(),
        ttl in any::<u8>(),
        flags in any::<u8>(),
        vni in 0u32..=0xff_ffff,
        flow_hash in any::<u32>(),
        dst_node in any::<u32>(),
        src_node in any::<u32>(),
        payload in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let repr = OverlayRepr {
            app: app.into(),
            ttl,
            flags,
            vni,
            flow_hash,
            dst_node,
            src_node,
        };
        let mut buf = vec![0xffu8; repr.buffer_len() + payload.len()];
        let mut p = OverlayPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        let p = OverlayPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(OverlayRepr::parse(&p).unwrap(), repr);
        prop_assert_eq!(u8::from(repr.app), app);
        prop_assert_eq!(p.payload(), &payload[..]);
    }
}
