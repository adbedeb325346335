//! Untrusted input never panics the engine: random bytes on every transport, random profiles
//! (validation refuses or the engine copes), and header() → decap() agree for every built-in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr};

use nvo_encap::builtin::{self, ids};
use nvo_encap::engine::{Engine, Limits, Target};
use nvo_encap::profile::{
    ByteField, HeaderLen, Match, Param, Patch, Payload, PayloadField, Profile, Transport,
};
use proptest::prelude::*;

const REMOTE: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

/// An engine with every built-in bound to a few VNIs, so decap reaches the key lookup.
fn bound_engine() -> Engine {
    let mut e = Engine::new(Limits::default());
    for (id, _) in builtin::all().iter().enumerate() {
        let id = nvo_encap::profile::ProfileId(id as u16);
        for vni in [0, 1, 0x0008_0000] {
            let _ = e.bind_local(id, vni, &[]);
        }
    }
    e
}

fn transports() -> Vec<Transport> {
    let mut t: Vec<Transport> = builtin::all().iter().map(|p| p.transport).collect();
    t.push(Transport::Udp(9));
    t
}

fn field() -> impl Strategy<Value = ByteField> {
    (0u16..40, 0u8..10).prop_map(|(o, l)| ByteField::new(o, l))
}

fn a_match() -> impl Strategy<Value = Match> {
    (0u16..40, prop::collection::vec(any::<(u8, u8)>(), 0..4)).prop_map(|(offset, mv)| Match {
        offset,
        mask: mv.iter().map(|(m, _)| *m).collect(),
        value: mv.iter().map(|(m, v)| m & v).collect(),
    })
}

/// Mostly valid profiles: written fields laid out one after another inside the template, the
/// header length rule consistent with it; sometimes one field replaced by an arbitrary one.
fn profile() -> impl Strategy<Value = Profile> {
    let slots = prop::collection::vec((0u16..3, 1u8..=4, any::<bool>()), 7);
    let bytes = prop::collection::vec(any::<u8>(), 48);
    let variable = prop::option::of((0usize..64, 1u8..=255, 1u8..8));
    let corrupt = prop::option::weighted(0.2, (0usize..7, field()));
    (
        (slots, 0u16..8, bytes, variable, corrupt),
        (
            prop::collection::vec(a_match(), 0..3),
            prop::option::of(field()),
            prop::option::of(a_match()),
            -50i32..50,
            any::<u64>(),
        ),
    )
        .prop_map(|((slots, extra, bytes, variable, corrupt), rest)| {
            let (matches, key, dont_learn, adjust, payload_value) = rest;
            let mut pos = 0u16;
            let mut fields: Vec<Option<ByteField>> = slots
                .iter()
                .map(|&(gap, len, present)| {
                    pos += gap;
                    let f = ByteField::new(pos, len);
                    pos += u16::from(len);
                    present.then_some(f)
                })
                .collect();
            if let Some((slot, f)) = corrupt {
                fields[slot] = Some(f);
            }
            let len = usize::from(pos + extra);
            let mut template = bytes[..len].to_vec();
            let header_len = match variable {
                Some((at, mask, scale)) if len > 0 => {
                    let at = at % len;
                    template[at] &= !mask;
                    HeaderLen::Field {
                        offset: at as u16,
                        mask,
                        scale,
                        base: len as u16,
                    }
                }
                _ => HeaderLen::Fixed(len as u16),
            };
            let inside = |m: Match| Match {
                offset: if len > 0 {
                    m.offset % len as u16
                } else {
                    m.offset
                },
                ..m
            };
            let mut patches = Vec::new();
            patches.extend(fields[5].map(|field| Patch::Length { field, adjust }));
            patches.extend(fields[6].map(|field| Patch::Sequence { field }));
            Profile {
                name: "fuzz".into(),
                transport: Transport::Udp(9),
                template,
                vni: fields[0],
                key,
                entropy: fields[1],
                matches: matches.into_iter().map(inside).collect(),
                header_len,
                payload: Payload::Ethernet,
                payload_field: fields[2].map(|field| PayloadField {
                    field,
                    ethernet: Some(payload_value & field.max_value()),
                    ipv4: None,
                    ipv6: None,
                    nsh: None,
                }),
                params: [fields[3], fields[4]]
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, field)| Param {
                        name: format!("p{i}"),
                        field,
                    })
                    .collect(),
                patches,
                dont_learn: dont_learn.map(inside),
                hop: None,
            }
        })
}

proptest! {
    #[test]
    fn random_bytes_never_panic_decap(packet in prop::collection::vec(any::<u8>(), 0..80)) {
        let e = bound_engine();
        for t in transports() {
            if let Ok(d) = e.decap(t, &packet) {
                prop_assert!(d.header_len <= packet.len());
            }
        }
    }

    #[test]
    fn header_then_decap_round_trips(
        vni in 0u32..=0xff_ffff,
        entropy: u16,
        inner_len in 0usize..9000,
    ) {
        let mut e = Engine::new(Limits::default());
        for id in [ids::VXLAN, ids::VXLAN_GBP, ids::VXLAN_GPE, ids::GENEVE, ids::NVGRE,
                   ids::OVERLAY, ids::STT] {
            e.bind_local(id, vni, &[]).unwrap();
            let transport = e.profile(id).unwrap().transport;
            let h = e.header(id, vni, REMOTE, entropy, inner_len).unwrap().to_vec();
            let d = e.decap(transport, &h).unwrap();
            prop_assert_eq!((d.profile, d.target), (id, Target::Local { vni }));
            prop_assert_eq!((d.header_len, d.payload), (h.len(), Payload::Ethernet));
        }
    }

    #[test]
    fn random_profiles_are_refused_or_work(
        p in profile(),
        packet in prop::collection::vec(any::<u8>(), 0..60),
        vni: u32,
        entropy: u16,
        inner_len in 0usize..70_000,
    ) {
        let mut e = Engine::new(Limits::default());
        let valid = p.validate().is_ok();
        let added = e.add_profile(p);
        prop_assert_eq!(valid, added.is_ok());
        if let Ok(id) = added {
            let _ = e.bind_local(id, vni, &[]);
            if let Ok(d) = e.decap(Transport::Udp(9), &packet) {
                prop_assert!(d.header_len <= packet.len());
            }
            if let Ok(h) = e.header(id, vni, REMOTE, entropy, inner_len) {
                let h = h.to_vec();
                if let Ok(d) = e.decap(Transport::Udp(9), &h) {
                    prop_assert_eq!(d.header_len, h.len());
                }
            }
        }
    }
}
