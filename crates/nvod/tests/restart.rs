//! Desired state survives a crash: configure, `kill -9`, start again, and everything is back;
//! a port whose interface vanished meanwhile comes back down and comes up by itself when the
//! interface reappears. Also: a clean SIGTERM removes the socket, a second nvod on the same
//! socket is refused, and a corrupt state file stops nvod with the file named.
//!
//! ```text
//!   ns nvo-restart-PID
//!  ┌──────────────────────────────────────────────────┐
//!  │ nvod (locator 10.202.0.1 on u0)                   │
//!  │ u0 ─veth─ u1     pa ─veth─ pb     qa ─veth─ qb    │
//!  │                  (port, vni 10)   (port, vni 20;  │
//!  │                                    deleted while  │
//!  │                                    nvod is down)  │
//!  └──────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{host, wait_for, Nvod, Scratch};
use nvo_api::{FdbEntry, Network, Port};
use nvo_io::netns::NamedNetns;
use serde_json::json;

#[test]
fn state_is_restored_after_kill_9() {
    let scratch = Scratch::new("restart");
    let ns = host("restart", "10.202.0.1/24");
    for (a, b) in [("pa", "pb"), ("qa", "qb")] {
        ns.ip(&["link", "add", a, "type", "veth", "peer", "name", b])
            .unwrap();
        ns.ip(&["link", "set", a, "up"]).unwrap();
    }
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.202.0.1", "");

    let _: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 10, "mtu": 1400, "ageing_s": 30, "flood": ["10.202.0.2"]}),
    );
    let _: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 20, "learning": false, "bum": {"mode": "multicast", "group": "239.1.1.1"}}),
    );
    let _: Port = nvod.post("/v1/ports", &json!({"name": "pa", "vni": 10}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "qa", "vni": 20}));
    let _: Vec<std::net::IpAddr> =
        nvod.post("/v1/networks/10/flood", &json!({"remote": "10.202.0.3"}));
    let _: FdbEntry = nvod.post(
        "/v1/networks/10/fdb",
        &json!({"mac": "02:00:00:00:00:0a", "remote": "10.202.0.2"}),
    );
    let _: FdbEntry = nvod.post(
        "/v1/networks/10/fdb",
        &json!({"mac": "02:00:00:00:00:0b", "port": "pa"}),
    );

    let networks: serde_json::Value = nvod.get("/v1/networks");
    let fdb: serde_json::Value = nvod.get("/v1/networks/10/fdb");
    let ports: Vec<Port> = nvod.get("/v1/ports");
    assert!(ports.iter().all(|p| p.up));

    nvod.kill();
    let text = std::fs::read_to_string(nvod.state_dir.join("state.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).expect("state.json is valid JSON");
    assert!(
        nvod.socket.exists(),
        "a killed nvod leaves its socket behind"
    );

    // The stale socket is replaced; everything is back.
    nvod.spawn();
    assert_eq!(nvod.get::<serde_json::Value>("/v1/networks"), networks);
    assert_eq!(nvod.get::<serde_json::Value>("/v1/networks/10/fdb"), fdb);
    assert_eq!(nvod.get::<Vec<Port>>("/v1/ports"), ports);

    missing_interface_comes_back_down_then_up(&mut nvod, &ns, &networks);
    second_nvod_is_refused(&nvod, ns.name(), &scratch);

    // SIGTERM: clean exit, socket removed.
    assert!(
        nvod.terminate(),
        "nvod did not exit cleanly:\n{}",
        nvod.log_text()
    );
    assert!(
        !nvod.socket.exists(),
        "the socket file is removed on SIGTERM"
    );

    // A corrupt state file: nvod refuses to start and names the file.
    let state = nvod.state_dir.join("state.json");
    std::fs::write(&state, b"{\"version\": 1, \"networks\": {").unwrap();
    let out = run_nvod(ns.name(), &scratch.0.join("nvod.toml"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&state.display().to_string()) && stderr.contains("corrupt"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&state).unwrap(),
        b"{\"version\": 1, \"networks\": {",
        "the corrupt file is left as it was"
    );
}

/// A port whose interface is missing at start comes back down, then up with the interface.
fn missing_interface_comes_back_down_then_up(
    nvod: &mut Nvod,
    ns: &NamedNetns,
    networks: &serde_json::Value,
) {
    nvod.kill();
    ns.ip(&["link", "del", "qa"]).unwrap();
    nvod.spawn();
    let ports: Vec<Port> = nvod.get("/v1/ports");
    let qa = ports.iter().find(|p| p.name == "qa").unwrap();
    assert!(!qa.up, "qa has no interface: {ports:?}");
    assert_eq!(nvod.get::<serde_json::Value>("/v1/networks"), *networks);
    ns.ip(&["link", "add", "qa", "type", "veth", "peer", "name", "qb"])
        .unwrap();
    ns.ip(&["link", "set", "qa", "up"]).unwrap();
    let up = wait_for(Duration::from_secs(5), || {
        nvod.get::<Vec<Port>>("/v1/ports").iter().all(|p| p.up)
    });
    assert!(up, "qa did not come up: {}", nvod.log_text());
}

/// A second nvod configured with the same socket refuses to start, and the first one is
/// unharmed.
fn second_nvod_is_refused(first: &Nvod, netns: &str, scratch: &Scratch) {
    let config = scratch.0.join("second.toml");
    std::fs::write(
        &config,
        format!(
            "locator = \"10.202.0.1\"\nvxlan_port = 4790\napi_socket = \"{}\"\nstate_dir = \"{}\"\n",
            first.socket.display(),
            scratch.0.join("second-state").display()
        ),
    )
    .unwrap();
    let out = run_nvod(netns, &config);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("another nvod is already answering"),
        "{stderr}"
    );
    let _: nvo_api::NodeInfo = first.get("/v1/node");
}

/// Runs nvod to completion (for a start that must fail), bounded by `timeout`.
fn run_nvod(netns: &str, config: &std::path::Path) -> std::process::Output {
    Command::new("timeout")
        .args([
            "10",
            "ip",
            "netns",
            "exec",
            netns,
            env!("CARGO_BIN_EXE_nvod"),
            "--config",
        ])
        .arg(config)
        .output()
        .unwrap()
}
