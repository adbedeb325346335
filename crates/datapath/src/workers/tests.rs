//! The merge of the workers' answers: counters add up, learned entries union, and an answer
//! from one worker is the one-worker answer.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use nvo_pipeline::{Actions, Limits, NetworkSpec, PortId};

use super::*;

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    let spec = NetworkSpec {
        accept_remotes: Some(nvo_pipeline::AcceptRemotes::Any),
        ..NetworkSpec::new(Vni(10))
    };
    p.add_network(spec).unwrap();
    p.add_port(PortId(1), Vni(10)).unwrap();
    p.add_port(PortId(2), Vni(10)).unwrap();
    p
}

fn frame(src: u8, dst: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x08, 0x00];
    f.resize(60, 0);
    f
}

/// The same frames through one pipeline, or split over two: the merged counters are the one
/// pipeline's (differential against the one-worker reference), but for `learned`, which counts
/// a MAC once per copy that saw it first-hand.
#[test]
fn split_counters_sum_to_the_single_worker_counts() {
    let now = Instant::now();
    let mut one = pipeline();
    let (mut w0, mut w1) = (pipeline(), pipeline());
    let mut actions = Actions::with_capacity(8);
    for i in 0..40u8 {
        // Destinations never learned: every frame floods, whichever copy learned what.
        let (port, f) = (PortId(1 + u32::from(i % 2)), frame(i % 5, 100 + i % 5));
        one.from_port(port, &f, now, &mut actions);
        let w = if i % 3 == 0 { &mut w0 } else { &mut w1 };
        w.from_port(port, &f, now, &mut actions);
    }
    let mut merged = w0.counters();
    merge_counters(&mut merged, &w1.counters());
    let reference = one.counters();
    assert_eq!(merged.drops, reference.drops);
    assert_eq!(merged.ports, reference.ports);
    assert_eq!(merged.underlay, reference.underlay);
    let (m, r) = (&merged.networks[&Vni(10)], &reference.networks[&Vni(10)]);
    assert_eq!(m.rx_port_frames, r.rx_port_frames);
    assert_eq!(m.rx_port_frames, 40);
    // Each worker learns a MAC it sees: learning differs (two copies learn), frames do not.
    assert!(m.learned >= r.learned);
}

/// Merging through `merge` keeps the reply's kind and adds the underlay sockets', STT
/// reassembly's and STT transmit counts.
#[test]
fn merged_reply_adds_socket_counts() {
    let c = Box::new(Counters::default());
    let u = UnderlayStats {
        gso_sends: 3,
        multicast_joins: 1,
        ..UnderlayStats::default()
    };
    let r = ReassemblyCounters {
        segments: 5,
        ..ReassemblyCounters::default()
    };
    let t = crate::SttTxCounters {
        frames_kernel: 7,
        frames_software: 1,
        kernel_errors: 0,
    };
    let i = crate::IlaStats {
        tx_gso_whole: 3,
        tx_finished: 1,
        rx_gso_whole: 4,
        rx_refused: 2,
    };
    let a = Reply::Counters(c.clone(), u, r, t, i);
    let b = Reply::Counters(c, u, r, t, i);
    let Reply::Counters(_, u, r, t, i) = merge(a, b) else {
        panic!("not counters");
    };
    assert_eq!((u.gso_sends, u.multicast_joins, r.segments), (6, 2, 10));
    assert_eq!((t.frames_kernel, t.frames_software), (14, 2));
    let ila = (i.tx_gso_whole, i.tx_finished, i.rx_gso_whole, i.rx_refused);
    assert_eq!(ila, (6, 2, 8, 4));
}

/// FDB views: the union by MAC, sorted; a MAC both hold shows its younger age; a static
/// entry of worker 0 is kept as it is.
#[test]
fn entries_merge_as_a_union() {
    let mac = |b| Mac([2, 0, 0, 0, 0, b]);
    let remote = FdbDest::Remote(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)));
    let view = |m, origin, age| FdbView {
        mac: mac(m),
        dest: remote,
        origin,
        age: Duration::from_secs(age),
    };
    let mut a = vec![
        view(1, Origin::Learned, 30),
        view(5, Origin::Static, 0),
        view(9, Origin::Learned, 2),
    ];
    let b = vec![
        view(1, Origin::Learned, 4),
        view(3, Origin::Learned, 1),
        view(5, Origin::Learned, 0),
        view(9, Origin::Learned, 8),
    ];
    merge_entries(&mut a, b);
    let got: Vec<_> = a
        .iter()
        .map(|v| (v.mac.0[5], v.origin, v.age.as_secs()))
        .collect();
    assert_eq!(
        got,
        [
            (1, Origin::Learned, 4),
            (3, Origin::Learned, 1),
            (5, Origin::Static, 0),
            (9, Origin::Learned, 2),
        ]
    );
}

/// Two workers linked by a mesh: a MAC one learns from a port reaches the other, which then
/// forwards a frame to it out of that port instead of flooding.
#[test]
fn learned_mac_crosses_to_the_other_worker() {
    let wakes: Vec<_> = (0..2).map(|_| Arc::new(EventFd::new().unwrap())).collect();
    let lost = Arc::new(AtomicU64::new(0));
    let mut shares = Share::mesh(&wakes, &lost);
    let (mut w0, mut w1) = (pipeline(), pipeline());
    w0.set_fdb_events(true);
    let now = Instant::now();
    let mut actions = Actions::with_capacity(8);
    w0.from_port(PortId(1), &frame(0xa, 0xb), now, &mut actions);
    let mut events = Vec::new();
    w0.take_fdb_events(&mut events);
    shares[0].announce_events(&events, now);
    assert_eq!(shares[1].import(&mut w1), 1);
    w1.from_port(PortId(2), &frame(0xb, 0xa), now, &mut actions);
    assert!(!actions.flooded(), "{actions:?}");
    let to: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            nvo_pipeline::Action::Deliver { port } => Some(*port),
            _ => None,
        })
        .collect();
    assert_eq!(to, [PortId(1)]);
    // Nothing comes back: imports note no event.
    let mut back = Vec::new();
    w1.take_fdb_events(&mut back);
    assert!(back.iter().all(|e| e.mac != Mac([2, 0, 0, 0, 0, 0xa])));
    assert_eq!(lost.load(Relaxed), 0);
}

/// Commands: reads of what every worker counts are merged, per-node state is worker 0's,
/// everything else is a change for all.
#[test]
fn command_scopes() {
    assert_eq!(scope(&Command::Counters), Scope::Merged);
    assert_eq!(scope(&Command::FdbEntries(Vni(1))), Scope::Merged);
    assert_eq!(scope(&Command::LocalHosts { since: 0 }), Scope::First);
    assert_eq!(scope(&Command::OverlayProbeResult(1)), Scope::First);
    assert_eq!(scope(&Command::RemoveNetwork(Vni(1))), Scope::All);
    assert_eq!(scope(&Command::Stop), Scope::All);
}

/// Re-announcing: a MAC seen recently reaches the other worker with the time it was seen (the
/// copy ages with the original); one silent for longer than `REANNOUNCE` is not sent again,
/// so copies cannot keep each other alive.
#[test]
fn reannounce_keeps_the_time_seen() {
    let wakes: Vec<_> = (0..2).map(|_| Arc::new(EventFd::new().unwrap())).collect();
    let lost = Arc::new(AtomicU64::new(0));
    let mut shares = Share::mesh(&wakes, &lost);
    let (mut w0, mut w1) = (pipeline(), pipeline());
    let now = Instant::now() + Duration::from_secs(60);
    let mut actions = Actions::with_capacity(8);
    w0.from_port(
        PortId(1),
        &frame(0xa, 0xb),
        now - Duration::from_secs(3),
        &mut actions,
    );
    w0.from_port(
        PortId(2),
        &frame(0xc, 0xb),
        now - REANNOUNCE * 2,
        &mut actions,
    );
    shares[0].reannounce(&w0, now);
    assert_eq!(shares[1].import(&mut w1), 1);
    let entries = w1.fdb_entries(Vni(10), now).unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].mac, Mac([2, 0, 0, 0, 0, 0xa]));
    assert_eq!(entries[0].age.as_secs(), 3);
    // w1 re-announces it with the same time: w0's entry does not get younger.
    shares[1].reannounce(&w1, now);
    shares[0].import(&mut w0);
    let a = w0.fdb_entries(Vni(10), now).unwrap();
    let a = a
        .iter()
        .find(|e| e.mac == Mac([2, 0, 0, 0, 0, 0xa]))
        .unwrap();
    assert_eq!(a.age.as_secs(), 3);
}

/// An L3 network's neighbour one worker learned from a container's ARP reaches the other
/// once, and is not told back.
#[test]
fn l3_neighbours_cross_once() {
    let wakes: Vec<_> = (0..2).map(|_| Arc::new(EventFd::new().unwrap())).collect();
    let lost = Arc::new(AtomicU64::new(0));
    let mut shares = Share::mesh(&wakes, &lost);
    let l3 = |p: &mut Pipeline| {
        let spec = NetworkSpec {
            l3_gateway: Some(Mac([2, 0, 0, 0, 0, 0xfe])),
            ..NetworkSpec::new(Vni(30))
        };
        p.add_network(spec).unwrap();
        p.add_port(PortId(7), Vni(30)).unwrap();
    };
    let (mut w0, mut w1) = (
        Pipeline::new(Limits::default()),
        Pipeline::new(Limits::default()),
    );
    l3(&mut w0);
    l3(&mut w1);
    // A gratuitous ARP from 10.3.0.5 (02:..:05) on port 7 of worker 0.
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 5, 0x08, 0x06]);
    arp.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 5, 10, 3, 0, 5]);
    arp.extend_from_slice(&[0, 0, 0, 0, 0, 0, 10, 3, 0, 1]);
    arp.resize(60, 0);
    let mut actions = Actions::with_capacity(8);
    w0.from_port(PortId(7), &arp, Instant::now(), &mut actions);
    let learned = w0.l3_neighbours();
    assert_eq!(learned.len(), 1, "{learned:?}");
    shares[0].announce_neighbours(&w0, false);
    assert_eq!(shares[1].import(&mut w1), 1);
    assert_eq!(w1.l3_neighbours(), learned);
    // Nothing new: nothing told, either way.
    shares[0].announce_neighbours(&w0, false);
    shares[1].announce_neighbours(&w1, false);
    assert_eq!(shares[0].import(&mut w0) + shares[1].import(&mut w1), 0);
}
