//! Learning from ports and learning from tunnels as two settings (`learn_ports`,
//! `learn_tunnels`) next to the old `learning`: their defaults (tunnel learning off for a VXLAN
//! network created while BGP is configured), the old form, contradictions refused with a 400
//! that changes nothing, and both kept across a restart and read from old state files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::{host, Nvod, Scratch};
use nvo_api::Network;
use serde_json::{json, Value};

const LOCATOR: &str = "10.231.0.1";

/// (learning, learn_ports, learn_tunnels) of a network as the API shows it.
fn flags(n: &Network) -> (bool, bool, bool) {
    (n.learning, n.learn_ports, n.learn_tunnels)
}

/// Creates each network, checking the flags nvod answers with (the failing body is named).
fn create_each<const N: usize>(nvod: &Nvod, cases: [(Value, (bool, bool, bool)); N]) {
    for (body, want) in cases {
        let got = flags(&nvod.post::<_, Network>("/v1/networks", &body));
        assert_eq!(got, want, "{body}");
    }
}

#[test]
fn learning_settings_defaults_old_form_and_contradictions() {
    let scratch = Scratch::new("lsp-learn");
    let ns = host("lspl", &format!("{LOCATOR}/24"));
    let mut nvod = Nvod::start(ns.name(), &scratch.0, LOCATOR, "");

    // Without BGP: both on by default; the old form turns both off; each alone.
    create_each(
        &nvod,
        [
            (json!({"vni": 100}), (true, true, true)),
            (
                json!({"vni": 101, "learning": false}),
                (false, false, false),
            ),
            (
                json!({"vni": 102, "learn_tunnels": false}),
                (true, true, false),
            ),
            (
                json!({"vni": 103, "learning": true, "learn_ports": false}),
                (true, false, true),
            ),
            (
                json!({"vni": 104, "learn_ports": false, "learn_tunnels": false}),
                (false, false, false),
            ),
        ],
    );

    // Contradictions: 400, one line naming the keys, nothing created.
    for (vni, body, names) in [
        (
            110,
            r#"{"vni":110,"learning":false,"learn_ports":true}"#,
            "learn_ports",
        ),
        (
            111,
            r#"{"vni":111,"learning":false,"learn_tunnels":true}"#,
            "learn_tunnels",
        ),
        (
            112,
            r#"{"vni":112,"learning":true,"learn_ports":false,"learn_tunnels":false}"#,
            "learn_tunnels",
        ),
    ] {
        let message = nvod.expect_error("POST", "/v1/networks", Some(body), 400);
        assert!(message.contains(names), "{body}: {message}");
        nvod.expect_error("GET", &format!("/v1/networks/{vni}"), None, 404);
    }

    // With BGP configured, EVPN serves the VXLAN L2 networks created from now on: no learning
    // from tunnels by default, learning from ports on. Other profiles keep both.
    let _: Value = nvod.put(
        "/v1/bgp",
        &json!({"asn": 65001, "router_id": LOCATOR, "neighbors": [{"address": "10.231.0.250"}]}),
    );
    create_each(
        &nvod,
        [
            (json!({"vni": 200}), (true, true, false)),
            (json!({"vni": 201, "encap": "geneve"}), (true, true, true)),
            (
                json!({"vni": 202, "learn_tunnels": true}),
                (true, true, true),
            ),
            (
                json!({"vni": 203, "learning": false}),
                (false, false, false),
            ),
        ],
    );
    let message = nvod.expect_error(
        "POST",
        "/v1/networks",
        Some(r#"{"vni":204,"learning":true,"learn_ports":false}"#),
        400,
    );
    assert!(message.contains("EVPN"), "{message}");
    // The CLI's view: networks created before BGP keep what they had.
    let before: Vec<Network> = nvod.get("/v1/networks");
    assert_eq!(flags(&before[0]), (true, true, true), "{before:?}");

    // Stored as resolved, so a restart (and a later BGP change) does not change them.
    let stored = common::stored_state(&nvod.state_dir);
    assert_eq!(stored["networks"]["200"]["learn_tunnels"], json!(false));
    assert_eq!(stored["networks"]["200"]["learn_ports"], json!(true));
    nvod.delete("/v1/bgp");
    nvod.kill();
    nvod.spawn();
    let after: Vec<Network> = nvod.get("/v1/networks");
    assert_eq!(after, before);
}

#[test]
fn old_state_files_keep_learning_as_it_was() {
    let scratch = Scratch::new("lsp-learn-old");
    let ns = host("lspo", &format!("{LOCATOR}/24"));
    let state_dir = scratch.0.join("state");
    let net = |learning: bool| {
        json!({"mtu": 1450, "learning": learning, "bum": {"mode": "head_end"},
            "max_learned": 4096, "ageing_s": 300, "flood": [], "fdb": {}})
    };
    fs::create_dir_all(&state_dir).unwrap();
    fs::set_permissions(&state_dir, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(
        state_dir.join("state.json"),
        serde_json::to_vec(&json!({"version": 2, "ports": {},
            "networks": {"5": net(false), "6": net(true)}}))
        .unwrap(),
    )
    .unwrap();
    let nvod = Nvod::start(ns.name(), &scratch.0, LOCATOR, "");
    let five: Network = nvod.get("/v1/networks/5");
    let six: Network = nvod.get("/v1/networks/6");
    assert_eq!(flags(&five), (false, false, false));
    assert_eq!(flags(&six), (true, true, true));
}
