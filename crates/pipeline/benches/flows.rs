//! The flow table's cost on the port path (issue 17: "throughput with 1 000 rules installed
//! against none, as ratios"), nanoseconds per 64-byte UDP frame to a MAC behind a remote VTEP
//! (one `Encap`), as the datapath runs it (crates/datapath/src/flows.rs):
//!
//! - `flows/none`: no rule — `has_flows()` is false, then `from_port` (today's path);
//! - `flows/miss_1000`: 1000 ACL rules (`udp,tp_dst=N,actions=drop`, one mask), none matching
//!   the frame: `from_port_flows` (key extraction, one probe), then `from_port`;
//! - `flows/normal_1000`: the same 1000 rules and one `udp,tp_dst=5201,actions=normal` that
//!   matches: the rule's counters, then `from_port`;
//! - `flows/rewrite_1000`: that rule with `mod_nw_tos:184,normal`: a copy of the frame, the
//!   IPv4 checksum recomputed, then `from_port` on the copy.
//!
//! And on tunnel ingress (tunnel_flows.rs; crates/datapath/src/tunnel_flows.rs), a 64-byte
//! frame from R1 to the MAC behind port 1 (one `Deliver`):
//!
//! - `tunnel/none`: no rule — `has_flows()` is false, then `from_decapsulated`;
//! - `tunnel/miss_1000`: the 1000 ACL rules (no `in_port`: they cover the tunnel too), none
//!   matching: `from_underlay_flows` (the network's checks, key, one probe), then
//!   `from_decapsulated`.
// Setup runs on constant input; a failure there is a broken benchmark and should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(unused_imports)] // the shared bed has more than this bench uses
mod common;

use std::hint::black_box;
use std::time::Instant;

use common::*;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nvo_flow::syntax::parse;
use nvo_pipeline::{Action, Actions, Decapsulated, Pipeline, ProfileTag};

fn bed_with(rules: usize, last: Option<&str>) -> Pipeline {
    let mut p = encap_bed();
    let now = Instant::now();
    for i in 0..rules {
        let r = parse(&format!("udp,tp_dst={},actions=drop", 10_000 + i), &|_| {
            None
        })
        .unwrap();
        p.flow_insert(r, now).unwrap();
    }
    if let Some(text) = last {
        p.flow_insert(parse(text, &|_| None).unwrap(), now).unwrap();
    }
    p
}

fn flows(c: &mut Criterion) {
    let now = Instant::now();
    let frame = udp4(REMOTE, LOCAL, 64);
    let mut actions = Actions::with_capacity(8);
    let mut out = vec![0u8; 2048];
    let mut group = c.benchmark_group("flows");
    group.throughput(Throughput::Elements(1));
    let cases = [
        ("none", 0, None),
        ("miss_1000", 1000, None),
        (
            "normal_1000",
            1000,
            Some("priority=10,udp,tp_dst=5201,actions=normal"),
        ),
        (
            "rewrite_1000",
            1000,
            Some("priority=10,udp,tp_dst=5201,actions=mod_nw_tos:184,normal"),
        ),
    ];
    for (name, n, last) in cases {
        let mut p = bed_with(n, last);
        group.bench_function(name, |b| {
            b.iter(|| {
                let f = black_box(&frame[..]);
                if !p.has_flows() {
                    p.from_port(P1, f, now, &mut actions);
                    return actions.len();
                }
                let v = p.from_port_flows(P1, f, &mut out, now, &mut actions);
                let f = match v.rewritten {
                    Some(len) => &out[..len],
                    None => f,
                };
                p.from_port(P1, f, now, &mut actions);
                actions.len()
            })
        });
        assert!(
            matches!(actions.as_slice(), [Action::Encap { .. }]),
            "{name}: {actions:?}"
        );
    }
    group.finish();
}

fn tunnel(c: &mut Criterion) {
    let now = Instant::now();
    let frame = udp4(LOCAL, REMOTE, 64);
    let decap = Decapsulated {
        src: R1,
        vni: VNI,
        profile: ProfileTag::VXLAN,
        dont_learn: false,
        src_node: None,
    };
    let outer = frame.len() + 8;
    let mut actions = Actions::with_capacity(8);
    let mut out = vec![0u8; 2048];
    let mut group = c.benchmark_group("tunnel");
    group.throughput(Throughput::Elements(1));
    for (name, n) in [("none", 0), ("miss_1000", 1000)] {
        let mut p = bed_with(n, None);
        group.bench_function(name, |b| {
            b.iter(|| {
                let f = black_box(&frame[..]);
                if p.has_flows() {
                    let v = p.from_underlay_flows(&decap, outer, f, &mut out, now, &mut actions);
                    assert!(v.normal);
                }
                p.from_decapsulated(decap, outer, f, now, &mut actions);
                actions.len()
            })
        });
        assert_eq!(actions.as_slice(), [Action::Deliver { port: P1 }], "{name}");
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = quick();
    targets = flows, tunnel
}
criterion_main!(benches);
