//! QoS policers on ports: frames from a policed port beyond its rate and burst are dropped as
//! `qos_policed` before anything else happens to them (not learned, not forwarded), counted in
//! the port and the policer; a virtual port is policed on its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_pipeline::qos::{QosError, QosProfile};
use nvo_pipeline::vport::Vport;
use nvo_pipeline::{Action, Actions, DropReason, Mac, PortId, TableError};

const LIMIT: QosProfile = QosProfile {
    rate: 8_000_000, // 1 MB/s
    burst: 3_000,
    dscp: None,
    trust: false,
};

#[test]
fn a_policed_port_passes_its_rate_and_drops_the_rest() {
    let mut p = setup();
    p.set_qos(P1, Some(LIMIT)).unwrap();
    let t0 = Instant::now();
    let mut a = Actions::new();
    let f = udp4(Mac::BROADCAST, mac(0xa), (1, 2), 958); // 1000 bytes
    let mut passed = 0;
    // 10 ms at 2 MB/s offered: 3000 bytes of burst + 10 000 of rate pass.
    for i in 0..20u64 {
        p.from_port(P1, &f, t0 + Duration::from_micros(i * 500), &mut a);
        match a.as_slice() {
            [Action::Drop(DropReason::QosPoliced)] => {}
            other => {
                assert!(!other.is_empty());
                passed += 1;
            }
        }
    }
    assert!((12..=14).contains(&passed), "{passed}");
    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::QosPoliced), 20 - passed);
    assert_eq!(c.ports[&P1].rx_frames, 20);
    assert_eq!(c.ports[&P1].drops, 20 - passed);
    let (port, profile, pc) = p.qos_counters()[0];
    assert_eq!((port, profile), (P1, LIMIT));
    assert_eq!(
        (pc.conformed_frames, pc.policed_frames),
        (passed, 20 - passed)
    );
    // P2 is not policed at all.
    for _ in 0..20 {
        p.from_port(P2, &udp4(Mac::BROADCAST, mac(0xb), (1, 2), 958), t0, &mut a);
        assert_ne!(a.as_slice(), [Action::Drop(DropReason::QosPoliced)]);
    }
    // Detached: everything passes.
    p.set_qos(P1, None).unwrap();
    p.from_port(P1, &f, t0, &mut a);
    assert_ne!(a.as_slice(), [Action::Drop(DropReason::QosPoliced)]);
    assert!(p.qos_counters().is_empty());
}

#[test]
fn a_policed_frame_is_not_learned_and_bad_profiles_are_refused() {
    let mut p = setup();
    p.set_qos(P1, Some(LIMIT)).unwrap();
    let t0 = Instant::now();
    let mut a = Actions::new();
    let big = udp4(Mac::BROADCAST, mac(0xa), (1, 2), 2958); // 3000 bytes: the whole burst
    p.from_port(P1, &big, t0, &mut a);
    p.from_port(P1, &udp4(Mac::BROADCAST, mac(0xc), (1, 2), 100), t0, &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::QosPoliced)]);
    assert!(!p
        .fdb_entries(VNI, t0)
        .unwrap()
        .iter()
        .any(|e| e.mac == mac(0xc)));
    let slow = QosProfile { rate: 10, ..LIMIT };
    assert_eq!(
        p.set_qos(P1, Some(slow)),
        Err(TableError::Qos(QosError::Rate(10)))
    );
    assert_eq!(
        p.set_qos(PortId(99), Some(LIMIT)),
        Err(TableError::NoSuchPort(PortId(99)))
    );
}

#[test]
fn a_virtual_port_is_policed_on_its_own() {
    let mut p = setup();
    let s = PortId(10);
    p.add_shared(s, None).unwrap();
    let vm = |port, m| Vport {
        port: PortId(port),
        mac: mac(m),
        vid: None,
        vni: VNI,
    };
    p.add_vport(s, vm(11, 0x11)).unwrap();
    p.add_vport(s, vm(12, 0x12)).unwrap();
    p.set_qos(PortId(11), Some(LIMIT)).unwrap();
    let t0 = Instant::now();
    let mut a = Actions::new();
    let mut out = [0u8; 2048];
    let mut send = |p: &mut nvo_pipeline::Pipeline, m| {
        let f = udp4(Mac::BROADCAST, mac(m), (1, 2), 958);
        let c = p.from_shared(s, &f, &mut out, &mut a).unwrap();
        p.from_port(c.vport, &f, t0, &mut a);
        a.dropped() == Some(DropReason::QosPoliced)
    };
    let policed11 = (0..10).filter(|_| send(&mut p, 0x11)).count();
    let policed12 = (0..10).filter(|_| send(&mut p, 0x12)).count();
    assert_eq!((policed11, policed12), (7, 0));
    // The shared port's virtual port goes, with its policer.
    p.remove_vport(s, mac(0x11)).unwrap();
    assert!(p.qos_counters().is_empty());
}
