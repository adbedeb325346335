//! Shared by the namespace tests: a veth between two namespaces, and waiting for data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::time::{Duration, Instant};

use nvo_io::netns::{unique_name, NamedNetns};

/// Two namespaces joined by a veth: `va` in `a`, `vb` in `b`, both up, loopbacks up.
/// Dropping it deletes both namespaces and so the veth.
pub struct VethPair {
    pub a: NamedNetns,
    pub b: NamedNetns,
}

impl VethPair {
    /// `tag` must be unique among the tests of one binary (they run in parallel).
    pub fn new(tag: &str) -> Self {
        let a = NamedNetns::create(&unique_name(&format!("{tag}a")))
            .expect("ip netns add (run the tests as root)");
        let b = NamedNetns::create(&unique_name(&format!("{tag}b"))).expect("ip netns add");
        a.ip(&[
            "link",
            "add",
            "va",
            "type",
            "veth",
            "peer",
            "name",
            "vb",
            "netns",
            b.name(),
        ])
        .unwrap();
        for (ns, dev) in [(&a, "va"), (&b, "vb")] {
            ns.ip(&["link", "set", "lo", "up"]).unwrap();
            ns.ip(&["link", "set", dev, "up"]).unwrap();
        }
        VethPair { a, b }
    }

    /// Gives `va` and `vb` the addresses `PREFIX.1/24` / `PREFIX.2/24` and `V6PREFIX::1/64` /
    /// `V6PREFIX::2/64` (no duplicate address detection, so they are usable at once).
    pub fn address(&self, v4_prefix: &str, v6_prefix: &str) {
        for (ns, dev, host) in [(&self.a, "va", 1), (&self.b, "vb", 2)] {
            ns.ip(&["addr", "add", &format!("{v4_prefix}.{host}/24"), "dev", dev])
                .unwrap();
            ns.ip(&[
                "addr",
                "add",
                &format!("{v6_prefix}::{host}/64"),
                "dev",
                dev,
                "nodad",
            ])
            .unwrap();
        }
    }
}

/// Calls `step` until it returns true or `timeout` passes; returns whether it did.
pub fn wait_for(timeout: Duration, mut step: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if step() {
            return true;
        }
    }
    false
}

/// Namespaces `h0`, `h1`, ... each with an `eth0` on one bridge `br0` in its own namespace,
/// like hosts on a switch. Host i has `PREFIX.(i+1)/24` and `V6PREFIX::(i+1)/64` (nodad).
/// Dropping it deletes every namespace.
pub struct Bridged {
    pub hosts: Vec<NamedNetns>,
    pub switch: NamedNetns,
}

impl Bridged {
    /// `bridge_options` go to `ip link add br0 type bridge ...`, e.g. `mcast_snooping 0`.
    pub fn new(tag: &str, hosts: usize, bridge_options: &str, v4: &str, v6: &str) -> Self {
        let switch = NamedNetns::create(&unique_name(&format!("{tag}s")))
            .expect("ip netns add (run the tests as root)");
        let mut add_br = vec!["link", "add", "br0", "type", "bridge"];
        add_br.extend(bridge_options.split_whitespace());
        switch.ip(&add_br).unwrap();
        switch.ip(&["link", "set", "br0", "up"]).unwrap();
        let mut list = Vec::new();
        for i in 0..hosts {
            let ns = NamedNetns::create(&unique_name(&format!("{tag}{i}"))).unwrap();
            let port = format!("p{i}");
            switch
                .ip(&[
                    "link",
                    "add",
                    &port,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns.name(),
                ])
                .unwrap();
            switch
                .ip(&["link", "set", &port, "master", "br0", "up"])
                .unwrap();
            ns.ip(&["link", "set", "lo", "up"]).unwrap();
            ns.ip(&["addr", "add", &format!("{v4}.{}/24", i + 1), "dev", "eth0"])
                .unwrap();
            ns.ip(&[
                "addr",
                "add",
                &format!("{v6}::{}/64", i + 1),
                "dev",
                "eth0",
                "nodad",
            ])
            .unwrap();
            ns.ip(&["link", "set", "eth0", "up"]).unwrap();
            list.push(ns);
        }
        Bridged {
            hosts: list,
            switch,
        }
    }
}
