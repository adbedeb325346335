//! Nanoseconds per classification (issue 17: "classification cost per packet with 1, 100,
//! 10 000 rules"), and the cost of extracting a key from a frame:
//!
//! - `lookup/acl/{1,100,10000}`: rules as an ACL writes them — one mask (`tcp,nw_dst=A,tp_dst=P`,
//!   exact), distinct values — plus a priority-0 catch-all; the packets' keys hit rules drawn
//!   uniformly, so large tables are measured out of cache.
//! - `lookup/masks/{1,100,10000}`: the worst case for tuple-space search — every rule a
//!   different mask (an IPv4 destination prefix of its own length and a different port mask),
//!   so a lookup may probe up to 33 × 16 subtables; priority pruning stops early when a
//!   high-priority rule matches.
//! - `extract/tcp4`: `Key::extract` of a 64-byte tagged TCP frame.
//!
//! The runs are short by default (as the pipeline's benchmarks); `make bench-flow` runs them.
// Setup runs on constant input; a failure there is a broken benchmark and should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nvo_flow::{Classifier, Field, Key, Match, Rule};

fn tcp_key(dst: u32, port: u16) -> Key {
    let mut k = Key::default();
    k.set(Field::EthType, 0x0800);
    k.set(Field::IpProto, 6);
    k.set(Field::IpDst, dst.into());
    k.set(Field::TpDst, port.into());
    k
}

/// A small deterministic generator (xorshift), so the runs are repeatable.
fn next(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn acl(n: usize) -> (Classifier<u32>, Vec<Key>) {
    let now = Instant::now();
    let mut c = Classifier::new(n + 1);
    c.insert(Rule::new(0, Match::any(), 0), now).unwrap();
    let mut keys = Vec::new();
    for i in 0..n.saturating_sub(1) {
        let dst = 0x0a00_0000 | i as u32;
        let port = 1000 + (i % 50) as u16;
        let m = Match::any()
            .with(Field::EthType, 0x0800)
            .with(Field::IpProto, 6)
            .with(Field::IpDst, dst.into())
            .with(Field::TpDst, port.into());
        c.insert(Rule::new(100, m, i as u32), now).unwrap();
        keys.push(tcp_key(dst, port));
    }
    if keys.is_empty() {
        keys.push(tcp_key(0x0a00_0001, 80));
    }
    (c, keys)
}

fn masks(n: usize) -> (Classifier<u32>, Vec<Key>) {
    let now = Instant::now();
    let mut c = Classifier::new(n);
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut keys = Vec::new();
    for i in 0..n {
        let len = (i % 33) as u32;
        let port_mask = 0xffffu128 << ((i / 33) % 16);
        let dst = next(&mut seed) as u32;
        let port = next(&mut seed) as u16;
        let m = Match::any()
            .with(Field::EthType, 0x0800)
            .with_prefix(Field::IpDst, dst.into(), len, true)
            .with_masked(Field::TpDst, port.into(), port_mask);
        c.insert(Rule::new((i % 1000) as u16, m, i as u32), now)
            .unwrap();
        keys.push(tcp_key(dst, port));
    }
    (c, keys)
}

fn lookups(c: &mut Criterion) {
    let mut g = c.benchmark_group("lookup");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(2));
    for (name, build) in [
        ("acl", acl as fn(usize) -> (Classifier<u32>, Vec<Key>)),
        ("masks", masks),
    ] {
        for n in [1usize, 100, 10_000] {
            let (cls, keys) = build(n);
            let mut i = 0usize;
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    i = (i + 1) % keys.len();
                    black_box(cls.lookup(black_box(&keys[i])))
                })
            });
        }
    }
    g.finish();
}

fn extraction(c: &mut Criterion) {
    let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 10, 8, 0];
    frame.extend_from_slice(&[
        0x45, 0, 0, 46, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    frame.extend_from_slice(&[
        0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff,
    ]);
    frame.resize(64, 0);
    let mut g = c.benchmark_group("extract");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(2));
    g.bench_function("tcp4", |b| {
        b.iter(|| black_box(Key::extract(1, 100, black_box(&frame))))
    });
    g.finish();
}

criterion_group!(benches, lookups, extraction);
criterion_main!(benches);
