//! Nanoseconds per frame through the pipeline (issue 4, "Microbenchmarks"):
//!
//! - `fdb/hit/{1k,100k,1M}`: `from_port` of a known-unicast frame whose destination is one of the
//!   n MACs learned behind port 2 (one `Deliver`), with the destination drawn uniformly from all
//!   n so that the large tables are measured out of cache, as a busy VTEP meets them;
//! - `fdb/miss/{1k,100k,1M}`: the same with an unknown destination: a flood to port 2 and to the
//!   two remotes of the flood list (three actions, one entropy hash);
//! - `encap/{64,1400}`: `from_port` of a UDP frame to a MAC behind a remote VTEP (one `Encap`,
//!   entropy hashed over MACs, IPs and ports);
//! - `decap/{64,1400}`: `receive_vxlan` (VXLAN header off, then `from_decapsulated`) of a VXLAN payload (header + frame) to a MAC behind port
//!   1 (one `Deliver`), the inner source refreshed behind the sending VTEP;
//! - `learn/new`: `from_port` of a frame whose source MAC the network has not seen (an insert into
//!   the FDB) to a known destination.
//!
//! Every frame also refreshes its source's entry, as on the real path. The time of a frame
//! includes writing its destination (or source) MAC into the buffer, a few bytes. The runs are
//! short by default (1 s warm-up, 2 s measurement, the whole suite in about a minute on two
//! cores); criterion's command-line options lengthen them.
// Setup runs on constant input; a failure there is a broken benchmark and should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nvo_pipeline::{Action, Actions, FdbDest, FlushScope, Mac};

/// The FDB sizes the issue asks for, with their labels.
const SIZES: [(u32, &str); 3] = [(1_000, "1k"), (100_000, "100k"), (1_000_000, "1M")];

/// Frame lengths measured on the encapsulation and decapsulation paths: a minimum frame and one
/// that fills the default 1450-byte tenant MTU.
const LENGTHS: [usize; 2] = [64, 1400];

/// New MACs learned between two flushes in `learn/new`: the default `max_learned`.
const LEARN_ROUND: u32 = 4096;

fn fdb(c: &mut Criterion) {
    let now = Instant::now();
    let mut group = c.benchmark_group("fdb");
    group.throughput(Throughput::Elements(1));
    for (n, label) in SIZES {
        let mut p = bed();
        learn_from_p2(&mut p, n, now);
        let mut frame = udp4(learned_mac(0), LOCAL, 64);
        let mut actions = Actions::with_capacity(8);

        p.from_port(P1, &frame, now, &mut actions);
        assert_eq!(actions.as_slice(), [Action::Deliver { port: P2 }]);
        let mut spread = Spread::new(n);
        group.bench_function(BenchmarkId::new("hit", label), |b| {
            b.iter(|| {
                frame[..6].copy_from_slice(&learned_mac(spread.next_index()).0);
                p.from_port(P1, black_box(&frame), now, &mut actions);
                actions.len()
            })
        });

        frame[..6].copy_from_slice(&unknown_mac(0).0);
        p.from_port(P1, &frame, now, &mut actions);
        assert_eq!(actions.len(), 3, "{actions:?}");
        let mut spread = Spread::new(n);
        group.bench_function(BenchmarkId::new("miss", label), |b| {
            b.iter(|| {
                frame[..6].copy_from_slice(&unknown_mac(spread.next_index()).0);
                p.from_port(P1, black_box(&frame), now, &mut actions);
                actions.len()
            })
        });
    }
    group.finish();
}

fn encap(c: &mut Criterion) {
    let now = Instant::now();
    let mut p = encap_bed();
    let mut actions = Actions::with_capacity(8);
    let mut group = c.benchmark_group("encap");
    group.throughput(Throughput::Elements(1));
    for len in LENGTHS {
        let frame = udp4(REMOTE, LOCAL, len);
        p.from_port(P1, &frame, now, &mut actions);
        assert!(
            matches!(actions.as_slice(), [Action::Encap { remote: R1, .. }]),
            "{actions:?}"
        );
        group.bench_function(BenchmarkId::from_parameter(len), |b| {
            b.iter(|| {
                p.from_port(P1, black_box(&frame), now, &mut actions);
                actions.len()
            })
        });
    }
    group.finish();
}

fn decap(c: &mut Criterion) {
    let now = Instant::now();
    let mut p = bed();
    p.fdb_add_static(VNI, LOCAL, FdbDest::Port(P1))
        .expect("a static entry fits");
    let mut actions = Actions::with_capacity(8);
    let mut group = c.benchmark_group("decap");
    group.throughput(Throughput::Elements(1));
    for len in LENGTHS {
        let payload = vxlan(VNI, &udp4(LOCAL, REMOTE, len));
        p.receive_vxlan(R1, &payload, now, &mut actions);
        assert_eq!(actions.as_slice(), [Action::Deliver { port: P1 }]);
        group.bench_function(BenchmarkId::from_parameter(len), |b| {
            b.iter(|| {
                p.receive_vxlan(R1, black_box(&payload), now, &mut actions);
                actions.len()
            })
        });
    }
    group.finish();
}

/// Learning a new MAC. Each round learns [`LEARN_ROUND`] MACs never seen before, then (untimed)
/// flushes the learned entries, as ageing would: the table keeps its allocation, so this is the
/// cost of an insert into a warm table, not of growing it (the `memory` benchmark covers growth).
fn learn(c: &mut Criterion) {
    let now = Instant::now();
    let dst = Mac([0x02, 0xcc, 0, 0, 0, 1]);
    let mut p = bed();
    p.fdb_add_static(VNI, dst, FdbDest::Port(P2))
        .expect("a static entry fits");
    let mut frame = udp4(dst, learned_mac(0), 64);
    let mut actions = Actions::with_capacity(8);
    let mut group = c.benchmark_group("learn");
    group.throughput(Throughput::Elements(1));
    group.bench_function("new", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let round = (iters - done).min(u64::from(LEARN_ROUND)) as u32;
                let start = Instant::now();
                for i in 0..round {
                    frame[6..12].copy_from_slice(&learned_mac(i).0);
                    p.from_port(P1, black_box(&frame), now, &mut actions);
                }
                elapsed += start.elapsed();
                done += u64::from(round);
                let flushed = p
                    .fdb_flush(VNI, FlushScope::Learned)
                    .expect("vni 100 exists");
                assert_eq!(flushed, round as usize);
            }
            elapsed
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = quick();
    targets = fdb, encap, decap, learn
}
criterion_main!(benches);
