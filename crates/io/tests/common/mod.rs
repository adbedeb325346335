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
