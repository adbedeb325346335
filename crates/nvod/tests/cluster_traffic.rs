//! Two hosts in one cluster: a user-defined encapsulation profile and a network on it, written
//! once to etcd (network first, profile after), converge on both nvods and carry traffic
//! between their containers; the flood lists come from the hosts' registrations alone.
//!
//! ```text
//!  ns nvo-clpXc1-PID    ns nvo-clpXh1-PID             ns nvo-clpXh2-PID            ns nvo-clpXc2-PID
//! ┌──────────────┐     ┌──────────────────────┐     ┌─────────────────────┐     ┌──────────────┐
//! │ eth0         │veth │ p1  nvod h1          │veth │         nvod h2  p2 │veth │         eth0 │
//! │ 10.0.0.1/24  ├─────┤ etcd on 10.216.0.1   ├─────┤ 10.216.0.2          ├─────┤  10.0.0.2/24 │
//! │ mtu 1400     │     │ u1 10.216.0.1        │     │ u2                  │     │     mtu 1400 │
//! └──────────────┘     └──────────────────────┘     └─────────────────────┘     └──────────────┘
//!   /nvo/networks/700 = {"vni": 700, "encap": "mytun", "mtu": 1400}
//!   /nvo/profiles/mytun = UDP 7777, 8-byte header, VNI in bytes 4..7
//! ```
//! Run once per datapath (X: u for userspace, e for ebpf); tcpdump on u2 shows the tunnel
//! packets are the profile's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::topo::{ip, ns};
use common::{wait_for, Nvod, Scratch};
use nvo_api::{ClusterStatus, Network, Port};
use nvo_io::netns::NamedNetns;
use serde_json::json;

const ETCD: &str = "http://10.216.0.1:23871";

/// A process of the test (etcd, tcpdump), killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn etcdctl(netns: &str, args: &[&str]) -> Result<String, String> {
    common::etcdctl(netns, ETCD, args)
}

fn ping(c: &NamedNetns, to: &str) -> (bool, String) {
    let out = Command::new("ip")
        .args(["netns", "exec", c.name()])
        .args(["ping", "-c", "1", "-W", "1", to])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

#[test]
fn a_cluster_profile_carries_traffic_on_the_userspace_datapath() {
    two_hosts("u", "userspace");
}

#[test]
fn a_cluster_profile_carries_traffic_on_the_ebpf_datapath() {
    two_hosts("e", "ebpf");
}

/// The topology above with `datapath` on both nvods (`tag` keeps names and ports apart).
fn two_hosts(tag: &str, datapath: &str) {
    assert!(
        std::path::Path::new("/usr/bin/etcd").exists(),
        "etcd is not installed: scripts/setup.sh installs it"
    );
    let scratch1 = Scratch::new(&format!("clp-traffic-{tag}h1"));
    let scratch2 = Scratch::new(&format!("clp-traffic-{tag}h2"));
    let h1 = ns(&format!("clp{tag}h1"));
    let h2 = ns(&format!("clp{tag}h2"));
    let c1 = ns(&format!("clp{tag}c1"));
    let c2 = ns(&format!("clp{tag}c2"));
    ip(
        &h1,
        &format!("link add u1 type veth peer name u2 netns {}", h2.name()),
    );
    ip(&h1, "addr add 10.216.0.1/24 dev u1");
    ip(&h2, "addr add 10.216.0.2/24 dev u2");
    ip(&h1, "link set u1 up");
    ip(&h2, "link set u2 up");
    for (host, c, port, mac, addr) in [
        (&h1, &c1, "p1", "02:00:00:00:07:01", "10.0.0.1/24"),
        (&h2, &c2, "p2", "02:00:00:00:07:02", "10.0.0.2/24"),
    ] {
        ip(
            host,
            &format!(
                "link add {port} type veth peer name eth0 netns {}",
                c.name()
            ),
        );
        ip(host, &format!("link set {port} up"));
        ip(c, &format!("link set eth0 address {mac} mtu 1400"));
        ip(c, &format!("addr add {addr} dev eth0"));
        ip(c, "link set eth0 up");
    }
    let log = std::fs::File::create(scratch1.0.join("etcd.log")).unwrap();
    let _etcd = Killed(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                h1.name(),
                "etcd",
                "--name",
                "x",
                "--data-dir",
            ])
            .arg(scratch1.0.join("etcd-data"))
            .args([
                "--listen-client-urls",
                ETCD,
                "--advertise-client-urls",
                ETCD,
            ])
            .args([
                "--listen-peer-urls",
                "http://127.0.0.1:23881",
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:23881",
                "--initial-cluster",
                "x=http://127.0.0.1:23881",
            ])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_for(Duration::from_secs(15), || etcdctl(
            h1.name(),
            &["endpoint", "health"]
        )
        .is_ok()),
        "etcd did not come up"
    );
    let config = |name: &str| {
        format!("datapath = \"{datapath}\"\n[cluster]\netcd = [\"{ETCD}\"]\nname = \"{name}\"\n")
    };
    let nvod1 = Nvod::start(h1.name(), &scratch1.0, "10.216.0.1", &config("h1"));
    let nvod2 = Nvod::start(h2.name(), &scratch2.0, "10.216.0.2", &config("h2"));
    for nvod in [&nvod1, &nvod2] {
        assert!(
            wait_for(Duration::from_secs(15), || {
                let s: ClusterStatus = nvod.get("/v1/cluster");
                s.connected && s.hosts.len() == 2
            }),
            "not connected with both hosts registered:\n{}",
            nvod.log_text()
        );
    }

    // Capture what reaches h2 on the profile's UDP port: an AF_PACKET tap sees a packet
    // before the tc programs of the kernel datapath do.
    let mut capture = Killed(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                h2.name(),
                "tcpdump",
                "-n",
                "-l",
                "-c",
                "1",
                "-i",
                "u2",
            ])
            .args(["udp", "dst", "port", "7777"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_secs(1));
    // Written once: the network first, its profile after.
    let start = Instant::now();
    let network = r#"{"vni": 700, "encap": "mytun", "mtu": 1400}"#;
    etcdctl(h1.name(), &["put", "/nvo/networks/700", network]).unwrap();
    let profile = r#"{"name": "mytun", "udp_port": 7777, "template": "0800 0000 0000 0000",
        "vni": {"offset": 4, "len": 3}, "matches": [{"offset": 0, "mask": "08", "value": "08"}]}"#;
    etcdctl(h1.name(), &["put", "/nvo/profiles/mytun", profile]).unwrap();
    for (nvod, port, remote) in [(&nvod1, "p1", "10.216.0.2"), (&nvod2, "p2", "10.216.0.1")] {
        assert!(
            wait_for(Duration::from_secs(15), || {
                let list: Vec<Network> = nvod.get("/v1/networks");
                list.iter().any(|n| n.vni == 700)
            }),
            "network 700 did not come:\n{}",
            nvod.log_text()
        );
        let n: Network = nvod.get("/v1/networks/700");
        assert_eq!(n.encap, "mytun");
        let flood: Vec<std::net::IpAddr> = nvod.get("/v1/networks/700/flood");
        assert_eq!(flood, [remote.parse::<std::net::IpAddr>().unwrap()]);
        // Ports are host-local: attached through each nvod's own API.
        let p: Port = nvod.post("/v1/ports", &json!({"name": port, "vni": 700}));
        assert!(p.up);
    }
    let mut last = (false, String::new());
    let carried = wait_for(Duration::from_secs(15), || {
        last = ping(&c1, "10.0.0.2");
        last.0
    });
    assert!(
        carried,
        "no traffic over the cluster profile:\n{}\nh1:\n{}\nh2:\n{}",
        last.1,
        nvod1.log_text(),
        nvod2.log_text()
    );
    eprintln!(
        "{datapath}: written to etcd -> ports attached -> first ping answered: {:?}",
        start.elapsed()
    );
    // The tunnel packets were the profile's: UDP port 7777 on the underlay.
    let captured = wait_for(Duration::from_secs(5), || {
        matches!(capture.0.try_wait(), Ok(Some(_)))
    });
    let mut text = String::new();
    if let Some(mut stdout) = capture.0.stdout.take() {
        if captured {
            std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        }
    }
    assert!(
        captured && text.contains(".7777:"),
        "no packet to udp port 7777 reached h2: {text}"
    );
}
