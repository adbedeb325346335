//! `nvo prober` as a user runs it: the `nvo` binary against a fake nvod on a unix socket, as in
//! tests/api.rs, whose answers also depend on the request body (the probes differ only there).
//! Checks the calls a round makes, the route it installs or removes, what it leaves alone, and
//! that a failed probe is logged while the round goes on.
//!
//! ```text
//!   node 1 (this one) ── direct: lossy ──► node 3
//!        │                                   ▲
//!        └──────── node 2 (relay, clean) ────┘        route 0xff000001 → [2, 3]: a tree
//! ```

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::{json, Value};

mod common;

use common::{stdout, Fake, Seen};

type Answer = dyn Fn(&str, &str, &Value) -> (u16, Value) + Send + 'static;

/// A fake nvod whose JSON answers depend on the request body too (null: an empty body).
fn fake(tag: &str, answer: Box<Answer>) -> Fake {
    Fake::by_body(tag, move |method, path, body| {
        let (status, out) = answer(method, path, body);
        let out = if out.is_null() {
            String::new()
        } else {
            out.to_string()
        };
        (status, out)
    })
}

/// The requests that change routes.
fn changes(fake: &Fake) -> Vec<Seen> {
    fake.seen()
        .into_iter()
        .filter(|s| s.method == "PUT" || s.method == "DELETE")
        .collect()
}

/// The probe bodies, in the order sent.
fn probes(fake: &Fake) -> Vec<Value> {
    fake.seen()
        .into_iter()
        .filter(|s| s.path == "/v1/overlay/probe")
        .map(|s| s.body)
        .collect()
}

/// A probe answer: `received` of 10 back with mean RTT `mean_us`.
fn result(body: &Value, received: u32, mean_us: u64) -> Value {
    let mut r = json!({"dst": body["dst"], "sent": 10, "received": received,
        "loss": f64::from(10 - received) / 10.0});
    if let Some(via) = body.get("via") {
        r["via"] = via.clone();
    }
    if received > 0 {
        r["rtt_us"] = json!({"min": mean_us, "mean": mean_us, "max": mean_us});
    }
    r
}

/// Nodes 1 (own), 2 and 3 with a locator each, the given routes, and the path qualities of
/// the drawing: 1 → 3 direct loses 60 % at 0.4 ms, 1 → 2 → 3 is clean at 1.2 ms, and probes
/// through 3 are refused. `direct_3` is what `{dst: 3}` without `via` measures.
fn overlay(routes: Value, direct_3: (u32, u64)) -> Box<Answer> {
    Box::new(move |method, path, body| match (method, path) {
        ("GET", "/v1/overlay") => (200, json!({"node_id": 1, "counters": {"sent": 5}})),
        ("GET", "/v1/overlay/nodes") => (
            200,
            json!([
                {"node_id": 1, "locators": [{"addr": "192.0.2.1", "weight": 1}], "own": true},
                {"node_id": 2, "locators": [{"addr": "192.0.2.2", "weight": 1}], "own": false},
                {"node_id": 3, "locators": [{"addr": "192.0.2.3", "weight": 1}], "own": false},
            ]),
        ),
        ("GET", "/v1/overlay/routes/ethernet") => (200, routes.clone()),
        ("POST", "/v1/overlay/probe") => {
            let via = body.get("via").and_then(Value::as_u64);
            match (body["dst"].as_u64(), via) {
                (_, Some(3)) if body["dst"] == 2 => (
                    400,
                    json!({"error": "probe refused: node 3 does not relay"}),
                ),
                (Some(3), None) => (200, result(body, direct_3.0, direct_3.1)),
                (Some(3), Some(3)) => (200, result(body, 4, 400)),
                (Some(3), Some(2)) => (200, result(body, 10, 1200)),
                (Some(2), None) => (200, result(body, 10, 300)),
                _ => (404, json!({"error": format!("unexpected probe {body}")})),
            }
        }
        ("PUT" | "DELETE", _) => (200, Value::Null),
        _ => (404, json!({"error": format!("no route {method} {path}")})),
    })
}

#[test]
fn a_round_installs_a_relay_for_a_lossy_destination() {
    let fake = fake("install", overlay(json!([]), (4, 400)));
    let out = fake.nvo(&["prober", "--once", "--confirm", "1", "--count", "10"]);
    assert_eq!(
        stdout(&out),
        "node 3: via 2 (rtt 1.2 ms, loss 0 %) replaces direct (rtt 0.4 ms, loss 60 %)\n"
    );
    assert_eq!(
        changes(&fake),
        [Seen {
            method: "PUT".into(),
            path: "/v1/overlay/routes/ethernet/3".into(),
            body: json!({"next_hops": [2]}),
        }]
    );
    // Every destination is probed direct and through every other node, direct first.
    let opts = |mut v: Value| {
        v["count"] = json!(10);
        v["timeout_ms"] = json!(500);
        v
    };
    assert_eq!(
        probes(&fake),
        [
            opts(json!({"dst": 2})),
            opts(json!({"dst": 2, "via": 3})),
            opts(json!({"dst": 3})),
            opts(json!({"dst": 3, "via": 2})),
        ]
    );
    // The refused probe is one line on stderr, and the round went on.
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "nvo prober: round 1: node 2 via 3: probe failed: \
         probe refused: node 3 does not relay (HTTP 400)\n"
    );
}

#[test]
fn the_switch_waits_for_confirm_rounds() {
    let fake = fake("confirm", overlay(json!([]), (4, 400)));
    let out = stdout(&fake.nvo(&["prober", "--once"]));
    assert_eq!(out, "", "one round of two: nothing yet");
    assert!(changes(&fake).is_empty());
    let out = stdout(&fake.nvo(&["prober", "--rounds", "2", "--interval", "0.05"]));
    assert!(out.starts_with("node 3: via 2 "), "{out}");
    assert_eq!(changes(&fake).len(), 1);
}

#[test]
fn a_round_removes_the_relay_when_direct_recovers_and_leaves_trees_alone() {
    let routes = json!([
        {"app": "ethernet", "dst": 3, "next_hops": [2]},
        {"app": "ethernet", "dst": 2, "next_hops": [2, 3]},
        {"app": "ethernet", "dst": 4278190081_u32, "next_hops": [2, 3]},
    ]);
    // Direct to 3 is clean again at 0.4 ms; without `via` a probe would follow the relay route.
    let recovered: Box<Answer> = {
        let base = overlay(routes, (10, 1200));
        Box::new(move |method, path, body| {
            if path == "/v1/overlay/probe" && body["dst"] == 3 && body["via"] == 3 {
                return (200, result(body, 10, 400));
            }
            base(method, path, body)
        })
    };
    let fake = fake("remove", recovered);
    let out = stdout(&fake.nvo(&["-o", "json", "prober", "--once", "--confirm", "1"]));
    assert_eq!(
        changes(&fake),
        [Seen {
            method: "DELETE".into(),
            path: "/v1/overlay/routes/ethernet/3".into(),
            body: Value::Null,
        }]
    );
    // Node 2's route is a tree: never probed. The direct path to 3 is probed via 3 itself.
    let probes = probes(&fake);
    assert!(probes.iter().all(|p| p["dst"] == 3), "{probes:?}");
    assert_eq!(probes[0]["via"], 3);
    // One JSON object per round, on one line.
    assert_eq!(out.lines().count(), 1, "{out}");
    let round: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(round["round"], 1);
    assert_eq!(round["own"], 1);
    assert_eq!(round["left_alone"], json!([2]));
    let d = &round["destinations"][0];
    assert_eq!(d["dst"], 3);
    assert_eq!(d["current_via"], 2);
    assert_eq!(d["change"], json!({"from_via": 2, "to_via": null}));
    assert_eq!(d["paths"][0]["score_us"], 400.0);
    assert_eq!(d["paths"][1]["via"], 2);
    assert_eq!(d["paths"][1]["score_us"], 1200.0);
}

#[test]
fn an_unreachable_nvod_is_logged_and_the_prober_goes_on() {
    let socket = std::env::temp_dir().join(format!("nvo-prober-none-{}.sock", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_nvo"))
        .arg("--socket")
        .arg(&socket)
        .args(["prober", "--rounds", "2", "--interval", "0.01"])
        .env_remove("NVO_SOCKET")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.starts_with("nvo prober: round 1: cannot read the overlay: cannot reach nvod at"),
        "{err}"
    );
}
