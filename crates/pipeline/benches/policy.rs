//! Nanoseconds per frame with identity policy (issue 18's "filtering costs nothing" claim, at
//! the pipeline's level): `from_port` of a 64-byte UDP frame (10.0.0.1:40000 → 10.0.0.2:5201)
//! from a labelled port to a labelled address behind a remote VTEP (one `Encap`), with
//!
//! - `policy/established/{none,1,1000}`: no policy, or a policy of 1 or 1 000 rules whose last
//!   rule allows the flow — every frame after the first passes by the connection table;
//! - `policy/first_packet/{1,1000}`: a frame the rules do not allow (default deny: every rule
//!   scanned, the frame dropped, nothing tracked) — the cost a new flow's first packet pays.
//!
//! The connection table is behind a mutex (shared by the workers): uncontended here, as it is
//! when one worker handles a flow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(unused_imports)] // the shared helpers hold what other benchmarks receive
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nvo_pipeline::policy::{PolicyCommand, SharedConntrack};
use nvo_pipeline::{Action, Actions, Pipeline};
use nvo_policy::{Action as Verdict, GroupSpec, Labels, Policy, PolicySpec, RuleSpec};

/// `rules` rules from web to db, all for other ports but the last, which allows `port`.
fn policy(rules: usize, port: u16) -> Policy {
    let group = |id, name: &str| GroupSpec {
        id,
        name: name.to_owned(),
        selector: format!("app={name}"),
    };
    let rule = |i: usize, p: u16| RuleSpec {
        name: format!("r{i}"),
        from: vec!["web".into()],
        to: vec!["db".into()],
        action: Verdict::Allow,
        protocol: Some("udp".into()),
        ports: vec![p.to_string()],
    };
    let mut list: Vec<RuleSpec> = (0..rules - 1).map(|i| rule(i, 10_000 + i as u16)).collect();
    list.push(rule(rules - 1, port));
    Policy::new(PolicySpec {
        groups: vec![group(10, "web"), group(20, "db")],
        rules: list,
    })
    .unwrap()
}

fn bed_with(rules: Option<usize>, port: u16) -> Pipeline {
    let mut p = encap_bed();
    if let Some(n) = rules {
        let web = Labels::new([("app", "web")]).unwrap();
        let db = Labels::new([("app", "db")]).unwrap();
        let dst = "10.0.0.2".parse().unwrap();
        p.policy_command(PolicyCommand::LabelPort(P1, web)).unwrap();
        p.policy_command(PolicyCommand::LabelAddr(VNI, dst, db))
            .unwrap();
        let shared = SharedConntrack::default();
        p.policy_command(PolicyCommand::Set(VNI, Arc::new(policy(n, port)), shared))
            .unwrap();
    }
    p
}

fn established(c: &mut Criterion) {
    let now = Instant::now();
    let frame = udp4(REMOTE, LOCAL, 64);
    let mut actions = Actions::with_capacity(8);
    let mut group = c.benchmark_group("policy/established");
    group.throughput(Throughput::Elements(1));
    for (rules, label) in [(None, "none"), (Some(1), "1"), (Some(1000), "1000")] {
        let mut p = bed_with(rules, 5201);
        p.from_port(P1, &frame, now, &mut actions);
        assert!(
            matches!(actions.as_slice(), [Action::Encap { remote: R1, .. }]),
            "{actions:?}"
        );
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                p.from_port(P1, black_box(&frame), now, &mut actions);
                actions.len()
            })
        });
    }
    group.finish();
}

fn first_packet(c: &mut Criterion) {
    let now = Instant::now();
    let frame = udp4(REMOTE, LOCAL, 64);
    let mut actions = Actions::with_capacity(8);
    let mut group = c.benchmark_group("policy/first_packet");
    group.throughput(Throughput::Elements(1));
    for (rules, label) in [(1, "1"), (1000, "1000")] {
        // The rules allow another port: every frame is a denied first packet.
        let mut p = bed_with(Some(rules), 9);
        p.from_port(P1, &frame, now, &mut actions);
        assert!(actions.dropped().is_some(), "{actions:?}");
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                p.from_port(P1, black_box(&frame), now, &mut actions);
                actions.len()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = quick();
    targets = established, first_packet
}
criterion_main!(benches);
