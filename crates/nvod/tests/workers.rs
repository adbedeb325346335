//! Two datapath workers per nvod (`workers = 2`, userspace datapath): flows spread over both,
//! a MAC one worker learned forwarded to by the other without flooding, and the API's
//! counters and FDB read as from one datapath.
//!
//! ```text
//!  ns nvo-nvworc1-PID   ns nvo-nvworh1-PID          ns nvo-nvworh2-PID          ns nvo-nvworc2-PID
//! ┌──────────────┐     ┌─────────────────────┐     ┌─────────────────────┐     ┌──────────────┐
//! │ eth0         │veth │ p1  nvod ×2 workers │veth │ nvod ×2 workers  p2 │veth │         eth0 │
//! │ 10.0.0.1/24  ├─────┤ port     10.217.0.1 ├─────┤ 10.217.0.2    port ├─────┤  10.0.0.2/24 │
//! │ 02:..:00:01  │     │ vni 100          u1 │     │ u2          vni 100 │     │  02:..:00:02 │
//! └──────────────┘     └─────────────────────┘     └─────────────────────┘     └──────────────┘
//! ```
//!
//! The containers have IPv6 off, so that nothing but the test's own traffic is flooded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::topo::{attach, exec, ip, ns};
use common::{Nvod, Scratch};
use nvo_api::{Counters, FdbEntry, NodeInfo, Port};
use nvo_io::netns::NamedNetns;
use serde_json::json;

const MAC1: &str = "02:00:00:00:00:01";
const MAC2: &str = "02:00:00:00:00:02";
const LOCATORS: [&str; 2] = ["10.217.0.1", "10.217.0.2"];
const CONFIG: &str = "workers = 2\ndatapath = \"userspace\"\n";

fn net(c: &Counters, name: &str) -> u64 {
    c.networks
        .get(&100)
        .and_then(|n| n.get(name))
        .copied()
        .unwrap_or(0)
}

/// `flows` TCP connections at once from c1 to c2, 256 KiB each, every byte checked.
fn tcp_flows(c1: &NamedNetns, c2: &NamedNetns, flows: usize) {
    let server = format!(
        r#"
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.0.0.2", 5002)); s.listen({flows}); s.settimeout(20)
sizes = []
def take(c):
    n = 0
    c.settimeout(20)
    while True:
        b = c.recv(65536)
        if not b: break
        n += len(b)
    sizes.append(n)
ts = []
for _ in range({flows}):
    c, _ = s.accept()
    t = threading.Thread(target=take, args=(c,)); t.start(); ts.append(t)
for t in ts: t.join()
print(sorted(sizes))
"#
    );
    let client = format!(
        r#"
import socket, threading, time
def send():
    for _ in range(50):
        try:
            s = socket.create_connection(("10.0.0.2", 5002), timeout=20); break
        except OSError: time.sleep(0.1)
    s.sendall(bytes(256 << 10)); s.close()
ts = [threading.Thread(target=send) for _ in range({flows})]
for t in ts: t.start()
for t in ts: t.join()
"#
    );
    let c2_name = c2.name().to_owned();
    let server_thread = std::thread::spawn(move || {
        Command::new("timeout")
            .args([
                "40", "ip", "netns", "exec", &c2_name, "python3", "-c", &server,
            ])
            .output()
            .unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (ok, out) = exec(c1, &["timeout", "40", "python3", "-c", &client]);
    assert!(ok, "tcp clients failed: {out}");
    let served = server_thread.join().unwrap();
    let got = String::from_utf8_lossy(&served.stdout).trim().to_owned();
    let expected = format!("{:?}", vec![256 << 10; flows]);
    assert_eq!(
        got.replace(' ', ""),
        expected.replace(' ', ""),
        "{}",
        String::from_utf8_lossy(&served.stderr)
    );
}

#[test]
fn two_workers_spread_flows_share_learning_and_merge_counters() {
    let scratch1 = Scratch::new("nvwor-h1");
    let scratch2 = Scratch::new("nvwor-h2");
    let h1 = ns("nvworh1");
    let h2 = ns("nvworh2");
    let c1 = ns("nvworc1");
    let c2 = ns("nvworc2");
    ip(
        &h1,
        &format!("link add u1 type veth peer name u2 netns {}", h2.name()),
    );
    ip(&h1, &format!("addr add {}/24 dev u1", LOCATORS[0]));
    ip(&h2, &format!("addr add {}/24 dev u2", LOCATORS[1]));
    ip(&h1, "link set u1 up");
    ip(&h2, "link set u2 up");
    attach(&h1, &c1, "p1", MAC1, "10.0.0.1/24", 1450);
    attach(&h2, &c2, "p2", MAC2, "10.0.0.2/24", 1450);
    let nvod1 = Nvod::start(h1.name(), &scratch1.0, LOCATORS[0], CONFIG);
    let nvod2 = Nvod::start(h2.name(), &scratch2.0, LOCATORS[1], CONFIG);
    for (nvod, remote, port) in [(&nvod1, LOCATORS[1], "p1"), (&nvod2, LOCATORS[0], "p2")] {
        let node: NodeInfo = nvod.get("/v1/node");
        assert_eq!((node.workers, node.datapath.as_str()), (2, "userspace"));
        let _: serde_json::Value =
            nvod.post("/v1/networks", &json!({"vni": 100, "flood": [remote]}));
        let p: Port = nvod.post("/v1/ports", &json!({"name": port, "vni": 100}));
        assert!(p.up);
    }
    let (ok, out) = exec(
        &c1,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.2"],
    );
    assert!(
        ok && out.contains(" 0% packet loss"),
        "ping failed:\n{out}\n{}",
        nvod1.log_text()
    );
    // The announcements of learned MACs reach the other worker within a wake-up.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let floods_before: Vec<u64> = [&nvod1, &nvod2]
        .iter()
        .map(|n| net(&n.get::<Counters>("/v1/counters"), "encap_flood"))
        .collect();

    tcp_flows(&c1, &c2, 16);

    for (nvod, before, port) in [
        (&nvod1, floods_before[0], "p1"),
        (&nvod2, floods_before[1], "p2"),
    ] {
        let node: NodeInfo = nvod.get("/v1/node");
        assert_eq!(node.worker_packets.len(), 2, "{node:?}");
        assert!(
            node.worker_packets.iter().all(|&n| n > 0),
            "16 flows all on one worker: {:?}",
            node.worker_packets
        );
        let c: Counters = nvod.get("/v1/counters");
        // Both workers forwarded to the other side's MAC, whichever learned it: no floods.
        assert_eq!(net(&c, "encap_flood"), before, "{c:?}\n{}", nvod.log_text());
        // The merged counters agree with each other as one datapath's do.
        assert_eq!(
            net(&c, "rx_port_frames"),
            c.ports[port]["rx_frames"],
            "{c:?}"
        );
        assert_eq!(net(&c, "delivered"), c.ports[port]["tx_frames"], "{c:?}");
        assert_eq!(c.drops["tx_error"], 0, "{c:?}");
        let handled: u64 = node.worker_packets.iter().sum();
        assert!(
            handled >= c.ports[port]["rx_frames"],
            "{handled} < port frames: {c:?}"
        );
        // The FDB reads as one: each MAC once.
        let fdb: Vec<FdbEntry> = nvod.get("/v1/networks/100/fdb");
        let macs: Vec<&str> = fdb.iter().map(|e| e.mac.as_str()).collect();
        assert_eq!(macs, [MAC1, MAC2], "{fdb:?}");
    }

    // A TAP port is one multi-queue device with a queue per worker, and forwards.
    let p: Port = nvod1.post(
        "/v1/ports",
        &json!({"name": "tw0", "vni": 100, "kind": "tap"}),
    );
    assert!(p.up);
    let (ok, queues) = exec(&h1, &["ls", "/sys/class/net/tw0/queues"]);
    assert!(ok, "{queues}");
    let mut queues: Vec<&str> = queues.split_whitespace().collect();
    queues.sort_unstable();
    assert_eq!(queues, ["rx-0", "rx-1", "tx-0", "tx-1"]);
    let (ok, out) = exec(&h1, &["sysctl", "-qw", "net.ipv6.conf.tw0.disable_ipv6=1"]);
    assert!(ok, "{out}");
    ip(&h1, "addr add 10.0.0.3/24 dev tw0");
    let (ok, out) = exec(
        &h1,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.2"],
    );
    assert!(
        ok && out.contains(" 0% packet loss"),
        "ping through the tap failed:\n{out}\n{}",
        nvod1.log_text()
    );
    nvod1.delete("/v1/ports/tw0");
    let (gone, _) = exec(&h1, &["ls", "/sys/class/net/tw0"]);
    assert!(!gone, "the tap device outlived its port");
}
