//! Meters in the flow table (meters.rs): `meter:N` sends a frame through meter N's bucket
//! before the rule's other actions; one bucket however many rules name it; a frame over the
//! rate is dropped as `qos_policed` and counted on the meter; rules naming a missing meter are
//! refused, and a meter in use cannot be deleted.
//!
//! ```text
//!   port P1 ─┐
//!   port P2 ─┼─ network 100 ── remotes r1, r2
//!   port P3 ─┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_flow::syntax::parse;
use nvo_pipeline::meters::{meter_profile, MeterError, MAX_METERS};
use nvo_pipeline::{Action, Actions, DropReason, FlowError, FlowVerdict, Pipeline, PortId};

fn rule(text: &str) -> nvo_flow::syntax::Flow {
    parse(text, &|_| None).unwrap()
}

fn run(p: &mut Pipeline, port: PortId, f: &[u8], now: Instant) -> (FlowVerdict, Actions) {
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let v = p.from_port_flows(port, f, &mut out, now, &mut a);
    (v, a)
}

/// 8 Mbit/s (1 MB/s), a burst of 10 000 bytes.
fn metered(rules: &[&str]) -> Pipeline {
    let mut p = setup();
    p.set_meter(1, Some(meter_profile(8_000_000, 10_000)))
        .unwrap();
    for r in rules {
        p.flow_insert(rule(r), Instant::now()).unwrap();
    }
    p
}

#[test]
fn a_frame_over_the_rate_is_dropped_and_counted_under_it_goes_on() {
    let mut p = metered(&["priority=100,udp,tp_dst=5201,actions=meter:1,output:2"]);
    let t0 = Instant::now();
    // 958-byte payload: 1000-byte frames; the burst holds ten.
    let f = udp4(mac(2), mac(1), (40000, 5201), 958);
    assert_eq!(f.len(), 1000);
    for _ in 0..10 {
        let (v, a) = run(&mut p, P1, &f, t0);
        assert!(!v.normal);
        assert_eq!(a.as_slice(), [Action::Deliver { port: P2 }]);
    }
    let (_, a) = run(&mut p, P1, &f, t0);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::QosPoliced)]);
    // 1 ms later, 1000 bytes of tokens: one more passes.
    let (_, a) = run(&mut p, P1, &f, t0 + Duration::from_millis(1));
    assert_eq!(a.as_slice(), [Action::Deliver { port: P2 }]);
    let c = p.meter_counters();
    assert_eq!(c.len(), 1);
    let (n, profile, counted) = c[0];
    assert_eq!((n, profile.rate, profile.burst), (1, 8_000_000, 10_000));
    assert_eq!(
        (counted.conformed_frames, counted.conformed_bytes),
        (11, 11_000)
    );
    assert_eq!((counted.policed_frames, counted.policed_bytes), (1, 1000));
    let all = p.counters();
    assert_eq!(all.drops.get(DropReason::QosPoliced), 1);
    assert_eq!(all.ports[&P1].drops, 1, "the drop counts on its port");
    // Frames the rule does not match meet no meter.
    let other = udp4(mac(2), mac(1), (40000, 22), 958);
    let (v, a) = run(&mut p, P1, &other, t0);
    assert!(v.normal && a.is_empty());
    assert_eq!(p.meter_counters()[0].2.conformed_frames, 11);
}

#[test]
fn two_rules_naming_a_meter_share_its_bucket() {
    let mut p = metered(&[
        "priority=100,in_port=1,udp,actions=meter:1,normal",
        "priority=100,in_port=2,udp,actions=meter:1,normal",
    ]);
    let t0 = Instant::now();
    let f = udp4(mac(2), mac(1), (40000, 5201), 958);
    let g = udp4(mac(1), mac(2), (40000, 5201), 958);
    // Five frames from each port spend the ten-frame burst together.
    for _ in 0..5 {
        assert!(run(&mut p, P1, &f, t0).0.normal);
        assert!(run(&mut p, P2, &g, t0).0.normal);
    }
    let (v, a) = run(&mut p, P2, &g, t0);
    assert!(!v.normal, "the shared bucket is empty");
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::QosPoliced)]);
    let (v, _) = run(&mut p, P1, &f, t0);
    assert!(!v.normal);
    let (_, _, c) = p.meter_counters()[0];
    assert_eq!((c.conformed_frames, c.policed_frames), (10, 2));
    assert_eq!(p.meter_users(1), 2);
}

#[test]
fn a_rule_naming_a_missing_meter_is_refused() {
    let mut p = setup();
    let err = p
        .flow_insert(rule("udp,actions=meter:7,normal"), Instant::now())
        .unwrap_err();
    assert_eq!(err, FlowError::NoMeter(7));
    assert!(err.to_string().contains("no meter 7"), "{err}");
    assert!(!p.has_flows());
}

#[test]
fn a_meter_in_use_cannot_be_deleted_and_can_once_unused() {
    let mut p = metered(&["udp,actions=meter:1,normal"]);
    let err = p.set_meter(1, None).unwrap_err();
    assert_eq!(err, MeterError::InUse(1, 1));
    assert!(err.to_string().contains("delete them first"), "{err}");
    assert_eq!(p.meter_counters().len(), 1);
    p.flow_table_mut().remove_where(|_, _| true);
    p.set_meter(1, None).unwrap();
    assert!(p.meter_counters().is_empty());
    assert_eq!(p.set_meter(1, None), Err(MeterError::Missing(1)));
}

#[test]
fn meters_are_checked_and_bounded() {
    let mut p = setup();
    assert_eq!(
        p.set_meter(0, Some(meter_profile(8_000_000, 10_000))),
        Err(MeterError::Zero)
    );
    assert!(matches!(
        p.set_meter(2, Some(meter_profile(10, 10_000))),
        Err(MeterError::Profile(2, _))
    ));
    for n in 1..=MAX_METERS as u32 {
        p.set_meter(n, Some(meter_profile(8_000_000, 10_000)))
            .unwrap();
    }
    assert_eq!(
        p.set_meter(
            MAX_METERS as u32 + 1,
            Some(meter_profile(8_000_000, 10_000))
        ),
        Err(MeterError::Full(MAX_METERS))
    );
    // Replacing one is not adding one.
    p.set_meter(1, Some(meter_profile(16_000_000, 10_000)))
        .unwrap();
    assert_eq!(p.meter_counters()[0].1.rate, 16_000_000);
}

#[test]
fn the_metered_cover_names_the_ports_of_metered_rules_only() {
    let p = metered(&[
        "priority=100,in_port=1,udp,actions=meter:1,normal",
        "priority=100,in_port=2,udp,actions=drop",
    ]);
    let cover = p.metered_cover();
    assert!(!cover.all);
    assert!(cover.covers(P1) && !cover.covers(P2));
    let p = metered(&["udp,actions=meter:1,normal"]);
    assert!(p.metered_cover().covers(P2));
}
