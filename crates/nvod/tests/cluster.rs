//! Cluster mode against a real etcd (Debian's etcd-server, `scripts/setup.sh` installs it):
//! nvod starts while etcd is not up yet, converges to network objects put with etcdctl,
//! removes them when deleted, skips invalid ones and reports them, registers its host key
//! under a lease, keeps its networks while etcd is away and applies a change made meanwhile
//! when it comes back (a resync), after a restart converges from its state file and etcd, and
//! on a clean stop revokes its lease. Profiles (`/nvo/profiles/NAME`) are made before the
//! networks that use them and removed after them, whatever order they are written in.
//!
//! ```text
//!   ns nvo-cln-cluster-PID
//!  ┌────────────────────────────────────────────────────────────────┐
//!  │ nvod h1 (locator 10.219.0.1 on u0)  ──►  etcd on 127.0.0.1:P    │
//!  │   [cluster] etcd = ["http://127.0.0.1:P"], lease_ttl_s = 3      │
//!  │ etcdctl (the test) ──► 127.0.0.1:P (or Q2 while "away")         │
//!  └────────────────────────────────────────────────────────────────┘
//! ```
//! "etcd away" is etcd stopped, started on another client port (nvod cannot reach it) to take
//! a change, stopped, and started again on P: a change made while nvod could not see it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{host, wait_for, Nvod, Scratch};
use nvo_api::{ClusterStatus, Network, NodeInfo};
use serde_json::json;

/// One etcd member inside the test's namespace, killed on drop.
struct Etcd {
    netns: String,
    data: PathBuf,
    log: PathBuf,
    peer: u16,
    child: Option<Child>,
}

impl Etcd {
    fn new(netns: &str, dir: &Path, peer: u16) -> Etcd {
        assert!(
            Path::new("/usr/bin/etcd").exists() && Path::new("/usr/bin/etcdctl").exists(),
            "etcd is not installed (/usr/bin/etcd, /usr/bin/etcdctl): scripts/setup.sh installs it \
             (Debian's etcd-server and etcd-client)"
        );
        Etcd {
            netns: netns.to_owned(),
            data: dir.join("etcd-data"),
            log: dir.join("etcd.log"),
            peer,
            child: None,
        }
    }

    /// Starts etcd serving clients on 127.0.0.1:`port` and waits until it answers.
    fn start(&mut self, port: u16) {
        assert!(self.child.is_none());
        let client = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{}", self.peer);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.netns,
                "etcd",
                "--name",
                "x",
                "--data-dir",
            ])
            .arg(&self.data)
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("x={peer}")])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
        let up = wait_for(Duration::from_secs(15), || {
            etcdctl(&self.netns, port, &["endpoint", "health"]).is_ok()
        });
        assert!(
            up,
            "etcd did not come up:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs etcdctl in the namespace against 127.0.0.1:`port`; its stdout, or stderr as error.
fn etcdctl(netns: &str, port: u16, args: &[&str]) -> Result<String, String> {
    common::etcdctl(netns, &format!("http://127.0.0.1:{port}"), args)
}

fn put(netns: &str, port: u16, key: &str, value: &str) {
    etcdctl(netns, port, &["put", key, value]).unwrap();
}

fn del(netns: &str, port: u16, key: &str) {
    etcdctl(netns, port, &["del", key]).unwrap();
}

fn networks(nvod: &Nvod) -> Vec<u32> {
    let list: Vec<Network> = nvod.get("/v1/networks");
    list.iter().map(|n| n.vni).collect()
}

fn status(nvod: &Nvod) -> ClusterStatus {
    nvod.get("/v1/cluster")
}

fn wait(what: &str, nvod: &Nvod, check: impl FnMut() -> bool) {
    assert!(
        wait_for(Duration::from_secs(15), check),
        "timed out waiting for {what}; /v1/cluster: {:?}\nnvod log:\n{}",
        status(nvod),
        nvod.log_text()
    );
}

fn flood(nvod: &Nvod, vni: u32) -> Vec<String> {
    let list: Vec<std::net::IpAddr> = nvod.get(&format!("/v1/networks/{vni}/flood"));
    let mut list: Vec<String> = list.iter().map(|ip| ip.to_string()).collect();
    list.sort();
    list
}

#[test]
fn nvod_converges_to_etcd_and_survives_its_absence() {
    let scratch = Scratch::new("cln-cluster");
    let ns = host("cln-cluster", "10.219.0.1/24");
    let netns = ns.name().to_owned();
    // A port pair of our own (the namespace is ours, but stay clear of the defaults).
    let (port, peer, away) = (23791, 23801, 23792);
    let mut etcd = Etcd::new(&netns, &scratch.0, peer);
    let extra = format!(
        "http_listen = \"{}\"\n[cluster]\netcd = [\"http://127.0.0.1:{port}\"]\nname = \"h1\"\nlease_ttl_s = 3\n",
        common::HTTP
    );
    // 1. nvod starts and serves its API while etcd is not up.
    let mut nvod = Nvod::start(&netns, &scratch.0, "10.219.0.1", &extra);
    let s = status(&nvod);
    assert!(s.enabled && !s.connected, "{s:?}");
    assert_eq!((s.prefix.as_str(), s.name.as_str()), ("/nvo/", "h1"));
    let node: NodeInfo = nvod.get("/v1/node");
    assert_eq!(node.cluster.map(|c| c.connected), Some(false));

    // 2. etcd comes up: nvod connects (backoff at most 2 s) and registers under a lease.
    etcd.start(port);
    put(
        &netns,
        port,
        "/nvo/networks/100",
        r#"{"vni": 100, "flood": ["10.219.0.9"]}"#,
    );
    put(
        &netns,
        port,
        "/nvo/hosts/h2",
        r#"{"name": "h2", "locator": "10.219.0.2", "node_id": 2}"#,
    );
    wait("network 100", &nvod, || networks(&nvod).contains(&100));
    wait("h2 in the flood list", &nvod, || {
        flood(&nvod, 100) == ["10.219.0.2", "10.219.0.9"]
    });
    let s = status(&nvod);
    assert!(s.connected && s.revision > 0, "{s:?}");
    assert_eq!(s.networks, [100]);
    let hosts: Vec<&str> = s.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["h1", "h2"]);
    let node: NodeInfo = nvod.get("/v1/node");
    assert_eq!(node.cluster.map(|c| c.connected), Some(true));
    let record = etcdctl(&netns, port, &["get", "/nvo/hosts/h1", "-w", "json"]).unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    let kv = &record["kvs"][0];
    assert_ne!(
        kv["lease"].as_i64().unwrap_or(0),
        0,
        "host key without a lease: {record}"
    );
    let value = etcdctl(
        &netns,
        port,
        &["get", "/nvo/hosts/h1", "--print-value-only"],
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&value).unwrap();
    assert_eq!(
        value,
        json!({"name": "h1", "locator": "10.219.0.1", "node_id": node.node_id})
    );
    // h2's registration goes: it leaves the flood list.
    del(&netns, port, "/nvo/hosts/h2");
    wait("h2 gone from the flood list", &nvod, || {
        flood(&nvod, 100) == ["10.219.0.9"]
    });

    // 3. Invalid objects are skipped, listed and leave everything else alone.
    put(&netns, port, "/nvo/networks/7", "garbage");
    put(
        &netns,
        port,
        "/nvo/networks/16777216",
        r#"{"vni": 16777216}"#,
    );
    put(
        &netns,
        port,
        "/nvo/networks/8",
        r#"{"vni": 8, "mtu": "big"}"#,
    );
    put(
        &netns,
        port,
        "/nvo/networks/9",
        r#"{"vni": 9, "encap": "no-such-profile"}"#,
    );
    wait("four skipped objects", &nvod, || {
        status(&nvod).skipped.len() == 4
    });
    let s = status(&nvod);
    let reason = |key: &str| {
        s.skipped
            .iter()
            .find(|k| k.key == key)
            .map(|k| k.error.clone())
            .unwrap_or_else(|| panic!("{key} not skipped: {s:?}"))
    };
    assert!(
        reason("/nvo/networks/7").starts_with("not a network object"),
        "{s:?}"
    );
    assert!(
        reason("/nvo/networks/16777216").contains("out of range"),
        "{s:?}"
    );
    assert!(reason("/nvo/networks/8").contains("invalid type"), "{s:?}");
    assert!(
        reason("/nvo/networks/9").contains("no-such-profile"),
        "{s:?}"
    );
    assert_eq!(networks(&nvod), [100]);
    // A valid object replacing an invalid one is applied.
    put(&netns, port, "/nvo/networks/7", r#"{"vni": 7}"#);
    wait("network 7", &nvod, || networks(&nvod).contains(&7));
    assert_eq!(status(&nvod).skipped.len(), 3);
    for key in [
        "/nvo/networks/16777216",
        "/nvo/networks/8",
        "/nvo/networks/9",
    ] {
        del(&netns, port, key);
    }

    // 4. A local network is never touched; a cluster object with its VNI is skipped.
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 300}));
    put(
        &netns,
        port,
        "/nvo/networks/300",
        r#"{"vni": 300, "mtu": 1300}"#,
    );
    wait("300 skipped", &nvod, || {
        status(&nvod).skipped.iter().any(|k| {
            k.key == "/nvo/networks/300"
                && k.error == "network 300 exists locally (not from the cluster)"
        })
    });
    del(&netns, port, "/nvo/networks/300");

    // 5. Deleted from etcd: gone here; a changed object (not only its flood) is re-created.
    del(&netns, port, "/nvo/networks/7");
    wait("network 7 deleted", &nvod, || !networks(&nvod).contains(&7));
    put(
        &netns,
        port,
        "/nvo/networks/100",
        r#"{"vni": 100, "mtu": 1400, "flood": ["10.219.0.9"]}"#,
    );
    wait("network 100 with mtu 1400", &nvod, || {
        let n: Network = nvod.get("/v1/networks/100");
        n.mtu == 1400
    });
    assert_eq!(networks(&nvod), [100, 300]);

    // 6. etcd away: everything stays; a change made meanwhile is applied when it is back.
    put(&netns, port, "/nvo/networks/200", r#"{"vni": 200}"#);
    wait("network 200", &nvod, || networks(&nvod).contains(&200));
    let resyncs_before = metric(&ns, "nvo_cluster_resyncs_total");
    etcd.stop();
    wait("disconnected", &nvod, || !status(&nvod).connected);
    assert_eq!(networks(&nvod), [100, 200, 300]);
    let node: NodeInfo = nvod.get("/v1/node");
    assert_eq!(node.cluster.map(|c| c.connected), Some(false));
    etcd.start(away);
    del(&netns, away, "/nvo/networks/200");
    put(&netns, away, "/nvo/networks/400", r#"{"vni": 400}"#);
    etcd.stop();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        networks(&nvod),
        [100, 200, 300],
        "changed while etcd was away"
    );
    etcd.start(port);
    wait("the outage's change", &nvod, || {
        networks(&nvod) == [100, 300, 400]
    });
    assert!(status(&nvod).connected);
    assert!(metric(&ns, "nvo_cluster_resyncs_total") > resyncs_before);
    assert_eq!(metric(&ns, "nvo_cluster_connected"), 1);
    assert!(metric(&ns, "nvo_cluster_invalid_objects_total") >= 5);
    assert_eq!(metric(&ns, "nvo_cluster_objects_skipped"), 0);
    assert_eq!(metric(&ns, "nvo_cluster_hosts"), 1);
    assert!(metric(&ns, "nvo_cluster_revision") > 0);

    // 7. nvod killed, a change made, nvod started: it converges from its state file and etcd;
    // its host key vanishes with its lease meanwhile.
    nvod.kill();
    wait_for(Duration::from_secs(10), || {
        etcdctl(
            &netns,
            port,
            &["get", "/nvo/hosts/h1", "--print-value-only"],
        )
        .is_ok_and(|v| v.trim().is_empty())
    })
    .then_some(())
    .expect("h1's host key did not vanish within its lease");
    del(&netns, port, "/nvo/networks/400");
    put(&netns, port, "/nvo/networks/500", r#"{"vni": 500}"#);
    nvod.spawn();
    wait("converged after restart", &nvod, || {
        networks(&nvod) == [100, 300, 500]
    });
    let s = status(&nvod);
    assert_eq!(s.networks, [100, 500]);
    assert!(s.skipped.is_empty(), "{s:?}");

    // 8. A clean stop revokes the lease: the host key is gone at once, not after the TTL.
    wait("h1 registered again", &nvod, || {
        etcdctl(
            &netns,
            port,
            &["get", "/nvo/hosts/h1", "--print-value-only"],
        )
        .is_ok_and(|v| !v.trim().is_empty())
    });
    let log = nvod.log_text();
    assert!(nvod.terminate(), "nvod did not stop cleanly:\n{log}");
    let left = etcdctl(
        &netns,
        port,
        &["get", "/nvo/hosts/h1", "--print-value-only"],
    )
    .unwrap();
    assert!(
        left.trim().is_empty(),
        "h1 still registered after a clean stop: {left}"
    );
}

const MYTUN: &str = r#"{"name": "mytun", "udp_port": 7777, "template": "0800 0000 0000 0000",
    "vni": {"offset": 4, "len": 3}, "matches": [{"offset": 0, "mask": "08", "value": "08"}]}"#;

fn profile_names(nvod: &Nvod) -> Vec<String> {
    let list: Vec<nvo_api::ProfileInfo> = nvod.get("/v1/profiles");
    list.into_iter()
        .filter(|p| !p.builtin)
        .map(|p| p.spec.name)
        .collect()
}

fn skip_reason(nvod: &Nvod, key: &str) -> Option<String> {
    status(nvod)
        .skipped
        .into_iter()
        .find(|k| k.key == key)
        .map(|k| k.error)
}

/// Profiles as cluster objects: a network written before its profile waits for it; invalid
/// profiles and networks naming them are skipped with reasons; a local profile is never
/// touched; a change waits until no network uses the profile; the cluster mark survives a
/// restart (a profile deleted from etcd while nvod was down is removed, not kept as local).
#[test]
fn profiles_converge_around_the_networks_that_use_them() {
    let scratch = Scratch::new("clp-prof");
    let ns = host("clp-prof", "10.218.0.1/24");
    let netns = ns.name().to_owned();
    let (port, peer) = (23811, 23821);
    let mut etcd = Etcd::new(&netns, &scratch.0, peer);
    etcd.start(port);
    let extra = format!(
        "[cluster]\netcd = [\"http://127.0.0.1:{port}\"]\nname = \"h1\"\nlease_ttl_s = 3\n"
    );
    let mut nvod = Nvod::start(&netns, &scratch.0, "10.218.0.1", &extra);
    wait("connected", &nvod, || status(&nvod).connected);

    // 1. The network first: skipped, naming the profile it lacks; the profile after: both.
    put(
        &netns,
        port,
        "/nvo/networks/600",
        r#"{"vni": 600, "encap": "mytun"}"#,
    );
    wait("600 skipped for its profile", &nvod, || {
        skip_reason(&nvod, "/nvo/networks/600").is_some_and(|e| e.contains("mytun"))
    });
    assert!(!networks(&nvod).contains(&600));
    put(&netns, port, "/nvo/profiles/mytun", MYTUN);
    wait("network 600 on mytun", &nvod, || {
        networks(&nvod).contains(&600)
    });
    let n: Network = nvod.get("/v1/networks/600");
    assert_eq!(n.encap, "mytun");
    let s = status(&nvod);
    assert_eq!(s.profiles, ["mytun"]);
    assert!(s.skipped.is_empty(), "{s:?}");
    let info: nvo_api::ProfileInfo = nvod.get("/v1/profiles/mytun");
    assert_eq!(info.spec.udp_port, Some(7777));

    // 2. Bad profiles are skipped with reasons; a network naming one says so; nothing else moves.
    put(&netns, port, "/nvo/profiles/junk", "garbage");
    put(
        &netns,
        port,
        "/nvo/profiles/other",
        r#"{"name": "mytun2", "udp_port": 7778}"#,
    );
    put(
        &netns,
        port,
        "/nvo/profiles/udp",
        r#"{"name": "udp", "ip_protocol": 17, "template": "00"}"#,
    );
    put(
        &netns,
        port,
        "/nvo/networks/601",
        r#"{"vni": 601, "encap": "udp"}"#,
    );
    wait("four skipped objects", &nvod, || {
        status(&nvod).skipped.len() == 4
    });
    let reason = |key: &str| {
        skip_reason(&nvod, key).unwrap_or_else(|| panic!("{key} not skipped: {:?}", status(&nvod)))
    };
    assert!(
        reason("/nvo/profiles/junk").starts_with("not a profile object"),
        "{:?}",
        status(&nvod)
    );
    assert!(reason("/nvo/profiles/other").contains("differs"));
    assert!(reason("/nvo/profiles/udp").contains("17"));
    assert!(
        reason("/nvo/networks/601").contains("/nvo/profiles/udp, which is skipped"),
        "{}",
        reason("/nvo/networks/601")
    );
    assert_eq!(profile_names(&nvod), ["mytun"]);
    assert!(networks(&nvod).contains(&600) && !networks(&nvod).contains(&601));
    for key in [
        "/nvo/profiles/junk",
        "/nvo/profiles/other",
        "/nvo/profiles/udp",
        "/nvo/networks/601",
    ] {
        del(&netns, port, key);
    }
    wait("nothing skipped", &nvod, || {
        status(&nvod).skipped.is_empty()
    });

    // 3. A local profile of the same name is never touched.
    let local = json!({"name": "loc", "udp_port": 7779, "template": "00"});
    let _: nvo_api::ProfileInfo = nvod.post("/v1/profiles", &local);
    put(
        &netns,
        port,
        "/nvo/profiles/loc",
        r#"{"name": "loc", "udp_port": 7780, "template": "00"}"#,
    );
    wait("loc skipped", &nvod, || {
        skip_reason(&nvod, "/nvo/profiles/loc").as_deref()
            == Some("profile loc exists locally (not from the cluster)")
    });
    let info: nvo_api::ProfileInfo = nvod.get("/v1/profiles/loc");
    assert_eq!(info.spec.udp_port, Some(7779));
    del(&netns, port, "/nvo/profiles/loc");
    assert_eq!(status(&nvod).profiles, ["mytun"]);

    // 4. A change while network 600 uses it: skipped naming the network; the network deleted
    // in the cluster: the change is applied after it.
    let changed = MYTUN.replace("7777", "7787");
    put(&netns, port, "/nvo/profiles/mytun", &changed);
    wait("mytun change skipped", &nvod, || {
        skip_reason(&nvod, "/nvo/profiles/mytun").is_some_and(|e| e.contains("networks 600"))
    });
    let info: nvo_api::ProfileInfo = nvod.get("/v1/profiles/mytun");
    assert_eq!(info.spec.udp_port, Some(7777));
    del(&netns, port, "/nvo/networks/600");
    wait("mytun replaced", &nvod, || {
        let info: nvo_api::ProfileInfo = nvod.get("/v1/profiles/mytun");
        info.spec.udp_port == Some(7787)
    });
    assert!(!networks(&nvod).contains(&600));
    wait("nothing skipped", &nvod, || {
        status(&nvod).skipped.is_empty()
    });
    assert_eq!(status(&nvod).profiles, ["mytun"]);

    // 5. A network on the changed profile.
    put(
        &netns,
        port,
        "/nvo/networks/602",
        r#"{"vni": 602, "encap": "mytun"}"#,
    );
    wait("network 602", &nvod, || networks(&nvod).contains(&602));

    // 6. nvod down; the network and the profile deleted from etcd meanwhile: after the restart
    // both are gone (the profile is known as the cluster's from the state file).
    nvod.kill();
    del(&netns, port, "/nvo/profiles/mytun");
    del(&netns, port, "/nvo/networks/602");
    nvod.spawn();
    wait("602 and mytun removed after restart", &nvod, || {
        !networks(&nvod).contains(&602) && profile_names(&nvod) == ["loc"]
    });
    let s = status(&nvod);
    assert!(s.profiles.is_empty() && s.skipped.is_empty(), "{s:?}");
    assert!(nvod.terminate(), "nvod did not stop cleanly");
}

fn node_locators(nvod: &Nvod, id: u32) -> Option<Vec<String>> {
    let list: Vec<nvo_api::OverlayNode> = nvod.get("/v1/overlay/nodes");
    list.into_iter().find(|n| n.node_id == id).map(|n| {
        n.locators
            .iter()
            .map(|l| format!("{}/{}", l.addr, l.weight))
            .collect()
    })
}

fn route_hops(nvod: &Nvod, app: &str, dst: u32) -> Option<Vec<u32>> {
    let list: Vec<nvo_api::OverlayRoute> = nvod.get(&format!("/v1/overlay/routes/{app}"));
    list.into_iter().find(|r| r.dst == dst).map(|r| r.next_hops)
}

/// Overlay nodes and routes as cluster objects: set, changed in place, deleted (also while
/// nvod is down); local entries never touched; invalid objects (and one nvod's own checks
/// refuse) skipped with reasons.
#[test]
fn overlay_nodes_and_routes_converge() {
    let scratch = Scratch::new("clp-ovl");
    let ns = host("clp-ovl", "10.217.0.1/24");
    let netns = ns.name().to_owned();
    let (port, peer) = (23851, 23861);
    let mut etcd = Etcd::new(&netns, &scratch.0, peer);
    etcd.start(port);
    let extra = format!("[cluster]\netcd = [\"http://127.0.0.1:{port}\"]\nname = \"h1\"\n");
    let mut nvod = Nvod::start(&netns, &scratch.0, "10.217.0.1", &extra);
    wait("connected", &nvod, || status(&nvod).connected);
    put(
        &netns,
        port,
        "/nvo/overlay/nodes/5",
        r#"{"locators": [{"addr": "10.217.0.5"}]}"#,
    );
    put(
        &netns,
        port,
        "/nvo/overlay/routes/ipv4/9",
        r#"{"next_hops": [5]}"#,
    );
    wait("node 5 and route ipv4 9", &nvod, || {
        node_locators(&nvod, 5).is_some() && route_hops(&nvod, "ipv4", 9).is_some()
    });
    assert_eq!(node_locators(&nvod, 5).unwrap(), ["10.217.0.5/1"]);
    assert_eq!(route_hops(&nvod, "ipv4", 9).unwrap(), [5]);
    let s = status(&nvod);
    assert_eq!(
        (s.overlay_nodes, s.overlay_routes),
        (vec![5], vec!["ipv4 9".to_owned()])
    );

    // Changed: set in place.
    put(
        &netns,
        port,
        "/nvo/overlay/nodes/5",
        r#"{"locators": [{"addr": "10.217.0.5", "weight": 2}, {"addr": "10.217.0.6"}]}"#,
    );
    wait("node 5 changed", &nvod, || {
        node_locators(&nvod, 5) == Some(vec!["10.217.0.5/2".into(), "10.217.0.6/1".into()])
    });

    // Invalid objects and a local node of the same ID: skipped, nothing else moves.
    let _: nvo_api::OverlayNode = nvod.put(
        "/v1/overlay/nodes/6",
        &json!({"locators": [{"addr": "10.217.0.60"}]}),
    );
    put(
        &netns,
        port,
        "/nvo/overlay/nodes/6",
        r#"{"locators": [{"addr": "10.217.0.61"}]}"#,
    );
    put(
        &netns,
        port,
        "/nvo/overlay/nodes/7",
        r#"{"locators": [{"addr": "10.217.0.7", "weight": 2000}]}"#,
    );
    put(
        &netns,
        port,
        "/nvo/overlay/nodes/8",
        r#"{"locators": [{"addr": "fd00::8"}]}"#,
    );
    put(&netns, port, "/nvo/overlay/routes/ipv4/10", "garbage");
    put(
        &netns,
        port,
        "/nvo/overlay/routes/7/10",
        r#"{"next_hops": [5]}"#,
    );
    wait("five skipped objects", &nvod, || {
        status(&nvod).skipped.len() == 5
    });
    let reason = |key: &str| {
        skip_reason(&nvod, key).unwrap_or_else(|| panic!("{key} not skipped: {:?}", status(&nvod)))
    };
    assert_eq!(
        reason("/nvo/overlay/nodes/6"),
        "overlay node 6 exists locally (not from the cluster)"
    );
    assert!(reason("/nvo/overlay/nodes/7").contains("weight 2000"));
    assert!(reason("/nvo/overlay/nodes/8").contains("address family"));
    assert!(reason("/nvo/overlay/routes/ipv4/10").starts_with("overlay route ipv4 10: "));
    assert!(reason("/nvo/overlay/routes/7/10").contains("neither"));
    assert_eq!(node_locators(&nvod, 6).unwrap(), ["10.217.0.60/1"]);
    assert!(node_locators(&nvod, 7).is_none() && node_locators(&nvod, 8).is_none());
    assert_eq!(status(&nvod).overlay_nodes, [5]);

    // Deleted from etcd while nvod is down: gone after its restart (the state file knows them
    // as the cluster's); the local node stays.
    nvod.kill();
    for key in [
        "/nvo/overlay/routes/ipv4/9",
        "/nvo/overlay/nodes/5",
        "/nvo/overlay/nodes/6",
        "/nvo/overlay/nodes/7",
        "/nvo/overlay/nodes/8",
        "/nvo/overlay/routes/ipv4/10",
        "/nvo/overlay/routes/7/10",
    ] {
        del(&netns, port, key);
    }
    nvod.spawn();
    wait("node 5 and route ipv4 9 gone", &nvod, || {
        node_locators(&nvod, 5).is_none() && route_hops(&nvod, "ipv4", 9).is_none()
    });
    wait("nothing skipped", &nvod, || {
        status(&nvod).skipped.is_empty()
    });
    assert_eq!(node_locators(&nvod, 6).unwrap(), ["10.217.0.60/1"]);
    let s = status(&nvod);
    assert!(
        s.overlay_nodes.is_empty() && s.overlay_routes.is_empty(),
        "{s:?}"
    );
}

/// The value of an unlabelled metric on `GET /metrics`.
fn metric(ns: &nvo_io::netns::NamedNetns, name: &str) -> u64 {
    let (status, _, body) = common::http_exchange(
        ns,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from\n{body}"))
        .trim()
        .parse()
        .unwrap()
}
