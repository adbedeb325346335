//! Networks whose BUM frames go to an underlay multicast group, with no flood list: nvod joins
//! the group when the first network using it is created (or restored after a restart), hears
//! what the other VTEP floods to it, and leaves it when the last such network goes.
//!
//! ```text
//!  ns nvo-mcc1-PID      ns nvo-mch1-PID             ns nvo-mch2-PID             ns nvo-mcc2-PID
//! ┌──────────────┐     ┌─────────────────────┐     ┌─────────────────────┐     ┌──────────────┐
//! │ eth0         │veth │ p1  nvod            │veth │            nvod  p2 │veth │         eth0 │
//! │ 10.0.0.1/24  ├─────┤ port     10.204.0.1 ├─────┤ 10.204.0.2    port ├─────┤  10.0.0.2/24 │
//! │              │     │ vni 100, 200     u1 │     │ u2          vni 100 │     │              │
//! │              │     │ group 239.1.1.1     │     │     group 239.1.1.1 │     │              │
//! └──────────────┘     └─────────────────────┘     └─────────────────────┘     └──────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::topo::{ip, ns};
use common::{Nvod, Scratch};
use nvo_api::{Counters, Network, Port};
use nvo_io::netns::NamedNetns;
use serde_json::json;

const GROUP: &str = "239.1.1.1";

/// Pings from `from` to `to`; panics with the nvod logs when it fails.
fn ping(from: &NamedNetns, to: &str, logs: &[&Nvod]) {
    let out = Command::new("ip")
        .args(["netns", "exec", from.name()])
        .args(["ping", "-c", "3", "-i", "0.2", "-W", "2", to])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(" 0% packet loss"),
        "ping {to} failed:\n{text}\n{}",
        logs.iter()
            .map(|n| n.log_text())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn underlay(nvod: &Nvod, name: &str) -> u64 {
    let c: Counters = nvod.get("/v1/counters");
    c.underlay[name]
}

fn multicast_network(nvod: &Nvod, vni: u32) {
    let net: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": vni, "bum": {"mode": "multicast", "group": GROUP}}),
    );
    assert!(net.flood.is_empty());
}

#[test]
fn flooding_by_multicast_group_is_joined_heard_restored_and_left() {
    let scratch1 = Scratch::new("mc-h1");
    let scratch2 = Scratch::new("mc-h2");
    let h1 = ns("mch1");
    let h2 = ns("mch2");
    let c1 = ns("mcc1");
    let c2 = ns("mcc2");
    ip(
        &h1,
        &format!("link add u1 type veth peer name u2 netns {}", h2.name()),
    );
    ip(&h1, "addr add 10.204.0.1/24 dev u1");
    ip(&h2, "addr add 10.204.0.2/24 dev u2");
    ip(&h1, "link set u1 up");
    ip(&h2, "link set u2 up");
    for (host, container, port, address) in [
        (&h1, &c1, "p1", "10.0.0.1/24"),
        (&h2, &c2, "p2", "10.0.0.2/24"),
    ] {
        let peer = container.name();
        ip(
            host,
            &format!("link add {port} type veth peer name eth0 netns {peer}"),
        );
        ip(host, &format!("link set {port} up"));
        ip(container, "link set eth0 mtu 1450");
        ip(container, &format!("addr add {address} dev eth0"));
        ip(container, "link set eth0 up");
    }

    let nvod1 = Nvod::start(h1.name(), &scratch1.0, "10.204.0.1", "");
    let mut nvod2 = Nvod::start(h2.name(), &scratch2.0, "10.204.0.2", "");
    for (nvod, port) in [(&nvod1, "p1"), (&nvod2, "p2")] {
        multicast_network(nvod, 100);
        let _: Port = nvod.post("/v1/ports", &json!({"name": port, "vni": 100}));
    }
    // A second network on the same group shares the membership.
    multicast_network(&nvod1, 200);
    assert_eq!(underlay(&nvod1, "multicast_joins"), 1);

    // The ARP request crosses by the group: each nvod hears the other's flood.
    ping(&c1, "10.0.0.2", &[&nvod1, &nvod2]);
    ping(&c2, "10.0.0.1", &[&nvod1, &nvod2]);

    // After a crash, h2 joins again from its state file. h1 forgets what it learned, so the
    // next ARP request must reach h2 by the group again.
    nvod2.kill();
    nvod2.spawn();
    assert_eq!(underlay(&nvod2, "multicast_joins"), 1);
    let _: serde_json::Value =
        nvod1.post("/v1/networks/100/fdb/flush", &json!({"scope": "learned"}));
    ip(&c1, "neigh flush all");
    ping(&c1, "10.0.0.2", &[&nvod1, &nvod2]);

    // The group is left with its last network.
    nvod1.delete("/v1/networks/200");
    assert_eq!(underlay(&nvod1, "multicast_leaves"), 0);
    nvod1.delete("/v1/ports/p1");
    nvod1.delete("/v1/networks/100");
    assert_eq!(underlay(&nvod1, "multicast_leaves"), 1);
}
