//! The engine's tables: receive selection (vxlan vs vxlan-gbp), key binding rules, limits,
//! template caching and invalidation, per-packet patches, profile add/remove rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nvo_encap::builtin::ids;
use nvo_encap::engine::{DecapError, Engine, EngineError, Limits, Target};
use nvo_encap::profile::{
    ByteField, HeaderLen, Match, Param, Patch, Payload, Profile, ProfileError, ProfileId, Transport,
};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
const B: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

fn params(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

/// A small user profile: 8-byte header on UDP 7777, magic 0x7e at byte 0, VNI at 4..7,
/// a 16-bit length at 2..4 and an 8-bit sequence number at byte 1.
fn mytun() -> Profile {
    Profile {
        name: "mytun".into(),
        transport: Transport::Udp(7777),
        template: vec![0x7e, 0, 0, 0, 0, 0, 0, 0],
        vni: Some(ByteField::new(4, 3)),
        key: None,
        entropy: Some(ByteField::new(7, 1)),
        matches: vec![Match::new(0, &[0xff], &[0x7e])],
        header_len: HeaderLen::Fixed(8),
        payload: Payload::Ethernet,
        payload_field: None,
        params: vec![],
        patches: vec![
            Patch::Length {
                field: ByteField::new(2, 2),
                adjust: -4,
            },
            Patch::Sequence {
                field: ByteField::new(1, 1),
            },
        ],
        dont_learn: None,
        hop: None,
    }
}

#[test]
fn gbp_bit_selects_vxlan_gbp_and_plain_vxlan_networks_still_receive_it() {
    let mut e = Engine::new(Limits::default());
    e.bind_local(ids::VXLAN, 10, &[]).unwrap();
    e.bind_local(ids::VXLAN_GBP, 20, &[]).unwrap();
    let plain = [0x08, 0, 0, 0, 0, 0, 10, 0];
    let gbp_d = [0x88, 0x40, 0x12, 0x34, 0, 0, 20, 0];
    let got = e.decap(Transport::Udp(4789), &gbp_d).unwrap();
    assert_eq!(
        (got.profile, got.target),
        (ids::VXLAN_GBP, Target::Local { vni: 20 })
    );
    assert!(got.dont_learn);
    let got = e.decap(Transport::Udp(4789), &plain).unwrap();
    assert_eq!((got.profile, got.dont_learn), (ids::VXLAN, false));
    // A G-bit packet for a plain VXLAN network: reserved bits are ignored (RFC 7348 §5).
    let to_plain = [0x88, 0x40, 0x12, 0x34, 0, 0, 10, 0];
    let got = e.decap(Transport::Udp(4789), &to_plain).unwrap();
    assert_eq!((got.profile, got.dont_learn), (ids::VXLAN, false));
    // A plain packet for the GBP network: vxlan-gbp's G match fails, vxlan has no such key.
    let plain_to_gbp = [0x08, 0, 0, 0, 0, 0, 20, 0];
    assert_eq!(
        e.decap(Transport::Udp(4789), &plain_to_gbp),
        Err(DecapError::UnknownKey)
    );
    // No I bit: nothing on the port matches.
    assert_eq!(
        e.decap(Transport::Udp(4789), &[0x80, 0, 0, 0, 0, 0, 10, 0]),
        Err(DecapError::NoMatch)
    );
    assert_eq!(
        e.decap(Transport::Udp(4789), &[0x08]),
        Err(DecapError::Truncated)
    );
    assert_eq!(
        e.decap(Transport::Udp(1), &plain),
        Err(DecapError::NoProfile)
    );
}

#[test]
fn bind_rules() {
    let mut e = Engine::new(Limits::default());
    assert!(matches!(
        e.bind_local(ids::VXLAN, 1 << 24, &[]),
        Err(EngineError::VniTooWide {
            vni: 16_777_216,
            max: 0xff_ffff,
            ..
        })
    ));
    assert!(matches!(
        e.bind_local(ids::VXLAN, 1, &params(&[("group", 1)])),
        Err(EngineError::UnknownParam { .. })
    ));
    assert!(matches!(
        e.bind_local(ids::VXLAN_GBP, 1, &params(&[("group", 70_000)])),
        Err(EngineError::ParamTooWide {
            value: 70_000,
            max: 65_535,
            ..
        })
    ));
    assert_eq!(
        e.bind_local(ProfileId(999), 1, &[]),
        Err(EngineError::UnknownId(ProfileId(999)))
    );
    // ipip has one (empty) key: a second network cannot take it.
    e.bind_local(ids::IPIP, 5, &[]).unwrap();
    e.bind_local(ids::IPIP, 5, &[]).unwrap();
    assert!(matches!(
        e.bind_local(ids::IPIP, 6, &[]),
        Err(EngineError::KeyTaken { .. })
    ));
    // Raw keys: the key field's length; they replace (a next hop changing).
    assert!(matches!(
        e.bind_key(ids::VXLAN, &[0, 1], Target::Local { vni: 1 }),
        Err(EngineError::KeyLength {
            expected: 3,
            got: 2,
            ..
        })
    ));
    e.bind_key(ids::VXLAN, &[0, 0, 7], Target::Forward { remote: A })
        .unwrap();
    e.bind_key(ids::VXLAN, &[0, 0, 7], Target::Forward { remote: B })
        .unwrap();
    let got = e
        .decap(Transport::Udp(4789), &[8, 0, 0, 0, 0, 0, 7, 0])
        .unwrap();
    assert_eq!(got.target, Target::Forward { remote: B });
    e.unbind_key(ids::VXLAN, &[0, 0, 7]);
    assert_eq!(
        e.decap(Transport::Udp(4789), &[8, 0, 0, 0, 0, 0, 7, 0]),
        Err(DecapError::UnknownKey)
    );
    assert_eq!(e.transports(), vec![Transport::Ip(4)]);
    e.unbind_local(ids::IPIP, 6); // not its network: nothing happens
    assert_eq!(e.transports(), vec![Transport::Ip(4)]);
    e.unbind_local(ids::IPIP, 5);
    assert!(e.transports().is_empty());
}

#[test]
fn a_profile_keyed_by_something_else_binds_raw_keys() {
    // NSH over UDP, keyed by SPI and SI (RFC 8300 §2.3), forwarding to the next hop.
    let mut e = Engine::new(Limits::default());
    let nsh = Profile {
        name: "nsh-udp".into(),
        transport: Transport::Udp(6633),
        template: vec![0x0f, 0xc2, 0x01, 0x03, 0, 0, 0, 0xff],
        vni: None,
        key: Some(ByteField::new(4, 4)),
        entropy: None,
        matches: vec![Match::new(0, &[0xc0], &[0x00])],
        header_len: HeaderLen::Field {
            offset: 1,
            mask: 0x3f,
            scale: 4,
            base: 0,
        },
        payload: Payload::Ethernet,
        payload_field: None,
        params: vec![
            Param {
                name: "spi".into(),
                field: ByteField::new(4, 3),
            },
            Param {
                name: "si".into(),
                field: ByteField::new(7, 1),
            },
        ],
        patches: vec![],
        dont_learn: None,
        hop: None,
    };
    // Length 2 words = 8 bytes: base 0 + 2 * 4 (byte 1 = 0xc2: TTL low bits, length 2).
    let id = e.add_profile(nsh).unwrap();
    assert_eq!(
        e.bind_local(id, 1, &[]),
        Err(EngineError::KeyNotVni("nsh-udp".into()))
    );
    e.bind_key(id, &[0, 0, 42, 255], Target::Forward { remote: A })
        .unwrap();
    let packet = [0x0f, 0xc2, 0x01, 0x03, 0, 0, 42, 255, 0x45];
    let got = e.decap(Transport::Udp(6633), &packet).unwrap();
    assert_eq!(
        (got.target, got.header_len),
        (Target::Forward { remote: A }, 8)
    );
    e.set_params(id, 0, Some(A), &params(&[("spi", 42), ("si", 254)]))
        .unwrap();
    assert_eq!(
        e.header(id, 0, A, 0, 0).unwrap(),
        &[0x0f, 0xc2, 1, 3, 0, 0, 42, 254]
    );
    assert!(matches!(
        e.remove_profile("nsh-udp"),
        Err(EngineError::InUse { keys: 1, .. })
    ));
    e.unbind_key(id, &[0, 0, 42, 255]);
    e.remove_profile("nsh-udp").unwrap();
    assert_eq!(
        e.decap(Transport::Udp(6633), &packet),
        Err(DecapError::NoProfile)
    );
}

#[test]
fn limits_are_enforced() {
    let limits = Limits {
        max_profiles: 11,
        max_keys: 2,
        max_templates: 2,
    };
    let mut e = Engine::new(limits);
    e.add_profile(mytun()).unwrap(); // 10 built-ins + 1
    let other = Profile {
        name: "other".into(),
        ..mytun()
    };
    assert_eq!(
        e.add_profile(other),
        Err(EngineError::TableFull {
            table: "profile",
            limit: 11
        })
    );
    e.bind_local(ids::VXLAN, 1, &[]).unwrap();
    e.bind_local(ids::VXLAN, 2, &[]).unwrap();
    e.bind_local(ids::VXLAN, 2, &[]).unwrap(); // rebinding is not growth
    assert_eq!(
        e.bind_local(ids::VXLAN, 3, &[]),
        Err(EngineError::TableFull {
            table: "key",
            limit: 2
        })
    );
    // A full template cache evicts, counts it, and keeps sending.
    for vni in 0..5 {
        assert_eq!(e.header(ids::VXLAN, vni, A, 0, 0).unwrap()[6], vni as u8);
    }
    let stats = e.stats().templates;
    assert_eq!((stats.entries, stats.builds, stats.evictions), (2, 5, 3));
}

#[test]
fn templates_are_cached_and_dropped_when_their_inputs_change() {
    let mut e = Engine::new(Limits::default());
    e.bind_local(ids::VXLAN_GBP, 7, &params(&[("group", 0x100)]))
        .unwrap();
    let group = |e: &mut Engine, to| {
        let h = e.header(ids::VXLAN_GBP, 7, to, 0, 0).unwrap();
        u16::from_be_bytes([h[2], h[3]])
    };
    assert_eq!((group(&mut e, A), group(&mut e, B)), (0x100, 0x100));
    assert_eq!(e.stats().templates.builds, 2);
    assert_eq!(group(&mut e, A), 0x100);
    assert_eq!(e.stats().templates.builds, 2, "cached");
    // A destination's value overrides the network's, for that destination only.
    e.set_params(ids::VXLAN_GBP, 7, Some(B), &params(&[("group", 0x200)]))
        .unwrap();
    assert_eq!((group(&mut e, A), group(&mut e, B)), (0x100, 0x200));
    // The network's value changes: every template of the network is rebuilt.
    e.set_params(ids::VXLAN_GBP, 7, None, &params(&[("group", 0x300)]))
        .unwrap();
    assert_eq!((group(&mut e, A), group(&mut e, B)), (0x300, 0x200));
    // Unbinding drops the network's parameters and templates.
    e.unbind_local(ids::VXLAN_GBP, 7);
    assert_eq!(e.stats().templates.entries, 0);
    assert_eq!((group(&mut e, A), group(&mut e, B)), (0, 0));
    assert_eq!(
        e.decap(Transport::Udp(4789), &[0x88, 0, 0, 0, 0, 0, 7, 0]),
        Err(DecapError::UnknownKey)
    );
}

#[test]
fn length_and_sequence_patches() {
    let mut e = Engine::new(Limits::default());
    let id = e.add_profile(mytun()).unwrap();
    let h = e.header(id, 0x0a0b0c, A, 0x1234, 100).unwrap().to_vec();
    // length = 100 + 8 - 4, sequence 0, entropy low byte.
    assert_eq!(h, [0x7e, 0, 0, 104, 0x0a, 0x0b, 0x0c, 0x34]);
    let seqs: Vec<u8> = (0..300)
        .map(|_| e.header(id, 0x0a0b0c, A, 0, 0).unwrap()[1])
        .collect();
    assert_eq!(&seqs[..3], &[1, 2, 3]);
    assert_eq!(seqs[254], 255);
    assert_eq!(seqs[255], 0, "wraps at the field's width");
    // Another destination has its own counter.
    assert_eq!(e.header(id, 0x0a0b0c, B, 0, 0).unwrap()[1], 0);
    assert!(matches!(
        e.header(id, 1, A, 0, 70_000),
        Err(EngineError::LengthOverflow {
            value: 70_004,
            max: 65_535,
            ..
        })
    ));
    // Round trip: what header() writes, decap() reads.
    e.bind_local(id, 0x0a0b0c, &[]).unwrap();
    let got = e.decap(Transport::Udp(7777), &h).unwrap();
    assert_eq!(
        (got.profile, got.target),
        (id, Target::Local { vni: 0x0a0b0c })
    );
}

#[test]
fn add_and_remove_rules() {
    let mut e = Engine::new(Limits::default());
    assert_eq!(
        e.add_profile(Profile {
            name: "vxlan".into(),
            ..mytun()
        }),
        Err(EngineError::DuplicateName("vxlan".into()))
    );
    assert!(matches!(
        e.add_profile(Profile {
            transport: Transport::Ip(6),
            ..mytun()
        }),
        Err(EngineError::TransportTaken { by: "stt", .. })
    ));
    assert_eq!(
        e.add_profile(Profile {
            transport: Transport::Ip(17),
            ..mytun()
        }),
        Err(EngineError::ReservedTransport(Transport::Ip(17)))
    );
    assert!(matches!(
        e.add_profile(Profile {
            name: "My Tun".into(),
            ..mytun()
        }),
        Err(EngineError::Invalid(ProfileError::Name(_)))
    ));
    assert_eq!(
        e.remove_profile("vxlan"),
        Err(EngineError::BuiltIn("vxlan".into()))
    );
    assert_eq!(
        e.remove_profile("nope"),
        Err(EngineError::UnknownProfile("nope".into()))
    );
    // A user profile on a built-in's port is tried after the built-ins.
    let on_4789 = Profile {
        name: "vxlan-variant".into(),
        transport: Transport::Udp(4789),
        matches: vec![Match::new(0, &[0xff], &[0x7e])],
        ..mytun()
    };
    let id = e.add_profile(on_4789).unwrap();
    e.bind_local(id, 5, &[]).unwrap();
    let got = e
        .decap(Transport::Udp(4789), &[0x7e, 0, 0, 0, 0, 0, 5, 0])
        .unwrap();
    assert_eq!(got.profile, id);
    e.unbind_local(id, 5);
    e.remove_profile("vxlan-variant").unwrap();
    assert_eq!(e.id("vxlan-variant"), None);
    // The freed slot is reused.
    assert_eq!(e.add_profile(mytun()).unwrap(), id);
}
