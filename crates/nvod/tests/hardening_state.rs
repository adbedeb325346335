//! The state directory and the table limits (issue 15, items 1, 3 and 4): nvod creates its
//! state directory 0700 and its files 0600 even under umask 000, refuses a state directory
//! others may write or another user owns, refuses to share its state directory with a second
//! nvod, answers 409 naming the `[limits]` key beyond each limit and changes nothing, and a
//! write appends the same bytes whether the tables hold 10 networks or 4000.
//!
//! ```text
//!   ns nvo-<test>-PID
//!  ┌─────────────────────────────────────┐
//!  │ nvod (locator 10.207.0.1 on u0)     │
//!  │ u0 ─veth─ u1                        │
//!  │ state: SCRATCH/state (0700)         │
//!  │   state.json, state.journal, lock   │
//!  └─────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::{stored_state, Nvod, Scratch};
use nvo_api::Network;
use nvo_io::netns::NamedNetns;
use serde_json::json;

const LOCATOR: &str = "10.207.0.1";

/// `common::host` with the locator on `u0`.
fn host(tag: &str) -> NamedNetns {
    common::host(tag, &format!("{LOCATOR}/24"))
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn umask_000_still_gives_a_0700_directory_and_0600_files() {
    let scratch = Scratch::new("nvozp-umask");
    let ns = host("umask");
    let mut nvod = Nvod::prepare(ns.name(), &scratch.0, LOCATOR, "");
    nvod.spawn_under(&["sh", "-c", "umask 000; exec \"$@\"", "sh"]);
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 10}));
    let dir = nvod.state_dir.clone();
    assert_eq!(mode(&dir), 0o700, "state directory");
    for file in ["state.json", "state.journal", "lock"] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    assert!(!dir.join("state.json.tmp").exists());
    // A compaction (at start) writes the snapshot anew: still 0600.
    nvod.kill();
    nvod.spawn_under(&["sh", "-c", "umask 000; exec \"$@\"", "sh"]);
    assert_eq!(mode(&dir.join("state.json")), 0o600);
    assert_eq!(
        stored_state(&dir)["networks"]["10"]["mtu"],
        json!(1450),
        "the network is stored"
    );
}

#[test]
fn a_state_directory_others_may_write_or_another_user_owns_is_refused() {
    let scratch = Scratch::new("nvozp-unsafe");
    let ns = host("unsafe");
    let dir = scratch.0.join("state");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let (status, log) = Nvod::start_failing(ns.name(), &scratch.0, LOCATOR, "", &[]);
    assert!(!status.success());
    assert!(
        log.contains(&dir.display().to_string()) && log.contains("writable by group or others"),
        "{log}"
    );
    assert_eq!(
        mode(&dir),
        0o777,
        "nvod does not touch a directory it refuses"
    );
    assert!(!dir.join("state.json").exists());

    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let _ = fs::remove_file(scratch.0.join("nvod.log"));
    let (status, log) = Nvod::start_failing(ns.name(), &scratch.0, LOCATOR, "", &[]);
    assert!(!status.success());
    assert!(
        log.contains(&dir.display().to_string()) && log.contains("owned by uid 65534"),
        "{log}"
    );
    assert!(!dir.join("state.json").exists());
}

#[test]
fn a_second_nvod_on_the_same_state_directory_is_refused() {
    let scratch = Scratch::new("nvozp-lock");
    let ns = host("lock");
    let first = Nvod::start(ns.name(), &scratch.0, LOCATOR, "");
    let _: Network = first.post("/v1/networks", &json!({"vni": 10}));
    let pid = fs::read_to_string(first.state_dir.join("lock")).unwrap();
    // Same state directory, another socket and port: only the lock stops it.
    let second = scratch.0.join("second");
    fs::create_dir(&second).unwrap();
    let config = second.join("nvod.toml");
    fs::write(
        &config,
        format!(
            "locator = \"{LOCATOR}\"\nvxlan_port = 4790\napi_socket = \"{}\"\nstate_dir = \"{}\"\n",
            second.join("nvod.sock").display(),
            first.state_dir.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new("timeout")
        .args(["10", "ip", "netns", "exec", ns.name()])
        .args([env!("CARGO_BIN_EXE_nvod"), "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&first.state_dir.display().to_string())
            && stderr.contains("in use by another nvod")
            && stderr.contains(&format!("pid {}", pid.trim())),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    // The first one is unharmed and its state too.
    let networks: Vec<Network> = first.get("/v1/networks");
    assert_eq!(networks.len(), 1);
    assert_eq!(
        stored_state(&first.state_dir)["networks"]["10"]["mtu"],
        json!(1450)
    );
}

#[test]
fn each_limit_answers_409_with_its_key_and_changes_nothing() {
    let scratch = Scratch::new("nvozp-limits");
    let ns = host("limits");
    let nvod = Nvod::start(
        ns.name(),
        &scratch.0,
        LOCATOR,
        "[limits]\nnetworks = 3\nflood_per_network = 1\nstatic_fdb_per_network = 1\n\
         routes_per_network = 1\noverlay_nodes = 1\n",
    );
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 10, "flood": ["10.207.0.2"]}));
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 20}));
    let _: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 30, "encap": "vxlan-gpe", "l3": true}),
    );
    let _: serde_json::Value = nvod.post(
        "/v1/networks/10/fdb",
        &json!({"mac": "02:00:00:00:00:01", "remote": "10.207.0.2"}),
    );
    let _: serde_json::Value = nvod.post(
        "/v1/networks/30/routes",
        &json!({"prefix": "10.9.0.0/24", "remote": "10.207.0.2"}),
    );
    let _: serde_json::Value = nvod.put(
        "/v1/overlay/nodes/2",
        &json!({"locators": [{"addr": "10.207.0.2"}]}),
    );
    let api_before = (
        nvod.get::<serde_json::Value>("/v1/networks"),
        nvod.get::<serde_json::Value>("/v1/networks/10/fdb"),
        nvod.get::<serde_json::Value>("/v1/networks/10/flood"),
        nvod.get::<serde_json::Value>("/v1/networks/30/routes"),
        nvod.get::<serde_json::Value>("/v1/overlay/nodes"),
    );
    let stored_before = stored_state(&nvod.state_dir);
    let journal_before = fs::read(nvod.state_dir.join("state.journal")).unwrap();
    for (method, path, body, want) in [
        (
            "POST",
            "/v1/networks",
            r#"{"vni": 40}"#,
            "limit networks (3) reached",
        ),
        (
            "POST",
            "/v1/networks/10/flood",
            r#"{"remote": "10.207.0.3"}"#,
            "limit flood_per_network (1) reached",
        ),
        (
            "POST",
            "/v1/networks/10/fdb",
            r#"{"mac": "02:00:00:00:00:02", "remote": "10.207.0.2"}"#,
            "limit static_fdb_per_network (1) reached",
        ),
        (
            "POST",
            "/v1/networks/30/routes",
            r#"{"prefix": "10.8.0.0/24", "remote": "10.207.0.2"}"#,
            "limit routes_per_network (1) reached",
        ),
        (
            "PUT",
            "/v1/overlay/nodes/3",
            r#"{"locators": [{"addr": "10.207.0.3"}]}"#,
            "limit overlay_nodes (1) reached",
        ),
    ] {
        let message = nvod.expect_error(method, path, Some(body), 409);
        assert!(message.contains(want), "{method} {path}: {message}");
    }
    let api_after = (
        nvod.get::<serde_json::Value>("/v1/networks"),
        nvod.get::<serde_json::Value>("/v1/networks/10/fdb"),
        nvod.get::<serde_json::Value>("/v1/networks/10/flood"),
        nvod.get::<serde_json::Value>("/v1/networks/30/routes"),
        nvod.get::<serde_json::Value>("/v1/overlay/nodes"),
    );
    assert_eq!(
        api_after, api_before,
        "a refusal changed what the API shows"
    );
    assert_eq!(stored_state(&nvod.state_dir), stored_before);
    assert_eq!(
        fs::read(nvod.state_dir.join("state.journal")).unwrap(),
        journal_before,
        "a refused write leaves the journal as it was"
    );
    // A limit above what the kernel path holds is refused at start, the key named.
    let other = Scratch::new("nvozp-limits-bad");
    let (status, log) = Nvod::start_failing(
        ns.name(),
        &other.0,
        LOCATOR,
        "[limits]\nflood_per_network = 1000\n",
        &[],
    );
    assert!(!status.success());
    assert!(
        log.contains("limits.flood_per_network") && log.contains("1000"),
        "{log}"
    );
}

/// A state file of `networks` plain networks, VNIs 1 to `networks`.
fn seed(state_dir: &Path, networks: u32) {
    let net = json!({"mtu": 1450, "learning": true, "bum": {"mode": "head_end"},
        "max_learned": 4096, "ageing_s": 300, "flood": [], "fdb": {}});
    let all: serde_json::Map<String, serde_json::Value> = (1..=networks)
        .map(|vni| (vni.to_string(), net.clone()))
        .collect();
    fs::create_dir_all(state_dir).unwrap();
    fs::set_permissions(state_dir, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(
        state_dir.join("state.json"),
        serde_json::to_vec(&json!({"version": 2, "networks": all, "ports": {}})).unwrap(),
    )
    .unwrap();
}

/// The bytes one write adds to the state directory, and whether it rewrote the snapshot. On
/// the userspace datapath: restoring 4000 networks into the kernel path's maps takes longer
/// than the helper waits for an answer on this machine, and the store is the same on both.
fn write_cost(tag: &str, networks: u32) -> (u64, bool) {
    let scratch = Scratch::new(&format!("nvozp-cost-{tag}"));
    let ns = host(&format!("cost{tag}"));
    seed(&scratch.0.join("state"), networks);
    let nvod = Nvod::start(
        ns.name(),
        &scratch.0,
        LOCATOR,
        "datapath = \"userspace\"\n[limits]\nnetworks = 8192\n",
    );
    assert_eq!(
        nvod.get::<Vec<Network>>("/v1/networks").len(),
        networks as usize
    );
    let snapshot = nvod.state_dir.join("state.json");
    let journal = nvod.state_dir.join("state.journal");
    let (ino, journal_before) = (
        fs::metadata(&snapshot).unwrap().ino(),
        fs::metadata(&journal).unwrap().len(),
    );
    let _: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 9999, "flood": ["10.207.0.2"]}),
    );
    let grown = fs::metadata(&journal).unwrap().len() - journal_before;
    let rewritten = fs::metadata(&snapshot).unwrap().ino() != ino;
    (grown, rewritten)
}

#[test]
fn a_write_costs_the_same_bytes_at_10_and_at_4000_networks() {
    let (at_10, rewritten_10) = write_cost("10", 10);
    let (at_4000, rewritten_4000) = write_cost("4000", 4000);
    assert!(at_10 > 0, "the write is journaled");
    assert_eq!(at_10, at_4000, "bytes appended by one write");
    assert!(
        !rewritten_10 && !rewritten_4000,
        "the snapshot is not rewritten per write"
    );
}

/// Hundreds of writes, nvod killed (SIGKILL) in their middle: after a restart every write
/// that was answered is there (the one in flight may or may not be), with the journal's
/// compaction happening along the way (a small snapshot: the journal outgrows it quickly).
#[test]
fn kill_9_in_the_middle_of_writes_loses_no_acknowledged_one() {
    let scratch = Scratch::new("nvozp-kill");
    let ns = host("kill");
    let mut nvod = Nvod::start(
        ns.name(),
        &scratch.0,
        LOCATOR,
        "datapath = \"userspace\"\n[limits]\nnetworks = 8192\n",
    );
    let client = nvo_api::Client::new(&nvod.socket);
    let writer = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for vni in 1..=2000u32 {
            let body = json!({"vni": vni, "flood": ["10.207.0.2"]});
            match client.post::<_, Network>("/v1/networks", &body) {
                Ok(_) => acked.push(vni),
                Err(_) => break,
            }
        }
        acked
    });
    // Let a few hundred writes through (past a compaction: 64 KiB of journal), then kill.
    assert!(common::wait_for(std::time::Duration::from_secs(60), || {
        stored_state(&nvod.state_dir)["networks"]
            .as_object()
            .is_some_and(|n| n.len() >= 300)
    }));
    nvod.kill();
    let acked = writer.join().unwrap();
    // The state held 300 or more; the last of them may have been journaled without its
    // answer reaching the writer before the kill.
    assert!(acked.len() >= 299 && acked.len() < 2000, "{}", acked.len());
    nvod.spawn();
    let networks: Vec<Network> = nvod.get("/v1/networks");
    let have: std::collections::BTreeSet<u32> = networks.iter().map(|n| n.vni).collect();
    let lost: Vec<u32> = acked
        .iter()
        .copied()
        .filter(|v| !have.contains(v))
        .collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    assert!(
        have.len() <= acked.len() + 1,
        "only the write in flight may be there unacknowledged"
    );
}
