//! Two hosts, each with an nvod and a container, one tenant network (VNI 100) over VXLAN:
//! ping and a TCP stream between the containers, flood-and-learn filling the FDB, counters
//! showing encapsulation and decapsulation.
//!
//! ```text
//!  ns nvo-v4c1-PID      ns nvo-v4h1-PID             ns nvo-v4h2-PID             ns nvo-v4c2-PID
//! ┌──────────────┐     ┌─────────────────────┐     ┌─────────────────────┐     ┌──────────────┐
//! │ eth0         │veth │ p1  nvod            │veth │            nvod  p2 │veth │         eth0 │
//! │ 10.0.0.1/24  ├─────┤ port     10.203.0.1 ├─────┤ 10.203.0.2    port ├─────┤  10.0.0.2/24 │
//! │ mtu 1450     │     │ vni 100          u1 │     │ u2          vni 100 │     │     mtu 1450 │
//! │ 02:..:00:01  │     │ flood [10.203.0.2]  │     │  flood [10.203.0.1] │     │  02:..:00:02 │
//! └──────────────┘     └─────────────────────┘     └─────────────────────┘     └──────────────┘
//! ```
//!
//! The same runs over an IPv6 underlay (fd00:203::1 and fd00:203::2, tenant MTU 1430). The
//! containers keep checksum offload and TSO on (the kernel default): nvo-io completes partial
//! checksums and segments TSO frames, which the TCP stream exercises.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::topo::{attach, exec, ip, ns};
use common::{Nvod, Scratch};
use nvo_api::{Counters, FdbEntry, Network, Origin, Port};
use nvo_io::netns::NamedNetns;
use serde_json::json;

const MAC1: &str = "02:00:00:00:00:01";
const MAC2: &str = "02:00:00:00:00:02";

fn network_counter(c: &Counters, name: &str) -> u64 {
    c.networks
        .get(&100)
        .and_then(|n| n.get(name))
        .copied()
        .unwrap_or(0)
}

#[test]
fn containers_talk_over_an_ipv4_underlay() {
    two_hosts("v4", ["10.203.0.1", "10.203.0.2"], 24, 1450);
}

#[test]
fn containers_talk_over_an_ipv6_underlay() {
    two_hosts("v6", ["fd00:203::1", "fd00:203::2"], 64, 1430);
}

/// Builds the topology above with these underlay addresses and container MTU, then checks
/// ping, learning, counters and a TCP stream.
fn two_hosts(tag: &str, locators: [&str; 2], prefix: u8, mtu: u16) {
    let scratch1 = Scratch::new(&format!("traffic-{tag}-h1"));
    let scratch2 = Scratch::new(&format!("traffic-{tag}-h2"));
    // Locals drop in reverse order: the nvods (declared later) die before the namespaces go.
    let h1 = ns(&format!("{tag}h1"));
    let h2 = ns(&format!("{tag}h2"));
    let c1 = ns(&format!("{tag}c1"));
    let c2 = ns(&format!("{tag}c2"));
    ip(
        &h1,
        &format!("link add u1 type veth peer name u2 netns {}", h2.name()),
    );
    // nodad: the address is usable at once, not after duplicate address detection.
    let nodad = if prefix == 64 { " nodad" } else { "" };
    ip(
        &h1,
        &format!("addr add {}/{prefix} dev u1{nodad}", locators[0]),
    );
    ip(
        &h2,
        &format!("addr add {}/{prefix} dev u2{nodad}", locators[1]),
    );
    ip(&h1, "link set u1 up");
    ip(&h2, "link set u2 up");
    attach(&h1, &c1, "p1", MAC1, "10.0.0.1/24", mtu);
    attach(&h2, &c2, "p2", MAC2, "10.0.0.2/24", mtu);

    let nvod1 = Nvod::start(h1.name(), &scratch1.0, locators[0], "");
    let nvod2 = Nvod::start(h2.name(), &scratch2.0, locators[1], "");
    for (nvod, remote, port) in [(&nvod1, locators[1], "p1"), (&nvod2, locators[0], "p2")] {
        let net: Network = nvod.post("/v1/networks", &json!({"vni": 100, "flood": [remote]}));
        assert_eq!(net.mtu, mtu, "the default tenant mtu fits the underlay");
        let p: Port = nvod.post("/v1/ports", &json!({"name": port, "vni": 100}));
        assert!(p.up);
    }

    let (ok, out) = exec(
        &c1,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.2"],
    );
    assert!(
        ok && out.contains(" 0% packet loss"),
        "ping failed:\n{out}\nh1:\n{}\nh2:\n{}",
        nvod1.log_text(),
        nvod2.log_text()
    );

    // h1 learned c2's MAC behind h2's locator, and c1's behind its port.
    let fdb: Vec<FdbEntry> = nvod1.get("/v1/networks/100/fdb");
    let remote = fdb
        .iter()
        .find(|e| e.mac == MAC2)
        .expect("c2's mac learned on h1");
    assert_eq!(remote.remote, Some(locators[1].parse().unwrap()), "{fdb:?}");
    assert_eq!(remote.origin, Origin::Learned);
    let local = fdb
        .iter()
        .find(|e| e.mac == MAC1)
        .expect("c1's mac learned on h1");
    assert_eq!(local.port.as_deref(), Some("p1"), "{fdb:?}");

    // Counters: both directions went through encapsulation and decapsulation.
    for nvod in [&nvod1, &nvod2] {
        check_counters(nvod);
    }

    tcp_stream(&c1, &c2);
}

/// The network and underlay counters of one host after the ping.
fn check_counters(nvod: &Nvod) {
    let c: Counters = nvod.get("/v1/counters");
    let encap = network_counter(&c, "encap_unicast") + network_counter(&c, "encap_flood");
    assert!(encap >= 3, "encapsulated: {c:?}");
    assert!(
        network_counter(&c, "rx_underlay_frames") >= 3,
        "decapsulated: {c:?}"
    );
    assert!(network_counter(&c, "delivered") >= 3, "delivered: {c:?}");
    assert!(
        c.underlay["tx_packets"] >= 3 && c.underlay["rx_packets"] >= 3,
        "{c:?}"
    );
    assert_eq!(c.drops["tx_error"], 0, "{c:?}");
}

/// 4 MB over TCP from c1 to c2, checked byte for byte at the far end: exercises partial
/// checksums and TSO frames from the container's veth.
fn tcp_stream(c1: &NamedNetns, c2: &NamedNetns) {
    let server = r#"
import hashlib, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.0.0.2", 5001)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
h = hashlib.sha256(); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    h.update(b); n += len(b)
print(n, h.hexdigest())
"#;
    let client = r#"
import socket, time
data = bytes(i * 7 % 251 for i in range(4 << 20))
for _ in range(50):
    try:
        s = socket.create_connection(("10.0.0.2", 5001), timeout=20); break
    except OSError: time.sleep(0.1)
s.sendall(data); s.close()
"#;
    let expected = {
        let out = Command::new("python3")
            .args(["-c", "import hashlib; print(4 << 20, hashlib.sha256(bytes(i * 7 % 251 for i in range(4 << 20))).hexdigest())"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert!(
        expected.starts_with("4194304 "),
        "python3 is needed: {expected:?}"
    );
    let c2_name = c2.name().to_owned();
    let server_thread = std::thread::spawn(move || {
        Command::new("timeout")
            .args([
                "30", "ip", "netns", "exec", &c2_name, "python3", "-c", server,
            ])
            .output()
            .unwrap()
    });
    let (ok, out) = exec(c1, &["timeout", "30", "python3", "-c", client]);
    assert!(ok, "tcp client failed: {out}");
    let served = server_thread.join().unwrap();
    let got = String::from_utf8_lossy(&served.stdout).trim().to_owned();
    assert_eq!(
        got,
        expected,
        "stream corrupted or cut: {}",
        String::from_utf8_lossy(&served.stderr)
    );
}
