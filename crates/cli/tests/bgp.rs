//! `nvo bgp` and `nvo evpn` as a user runs them: the `nvo` binary against a fake nvod
//! (tests/common) that records each request. Checks the calls made (a neighbor change is a GET
//! then a PUT of the whole configuration), the text and JSON printed, and the refusals (one
//! line on stderr, exit 1, nothing written).

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;

use serde_json::{json, Value};

mod common;

use common::{stdout, Fake, Seen};

/// What `GET /v1/bgp` answers when BGP is configured: one neighbor up, one down.
fn summary() -> Value {
    json!({
        "config": {
            "asn": 65000, "router_id": "192.0.2.1", "listen": true, "port": 179,
            "hold_time_s": 90, "neighbors": [{"address": "192.0.2.254"}]
        },
        "neighbors": [
            {"address": "192.0.2.254", "asn": 65000, "state": "established", "state_s": 3723,
             "established": 1, "received": 12, "stale": 3, "sent": 4,
             "messages_in": {"open": 1, "update": 5, "notification": 0, "keepalive": 10, "route_refresh": 0},
             "messages_out": {"open": 1, "update": 2, "notification": 0, "keepalive": 9, "route_refresh": 0},
             "treat_as_withdraw": 0, "attributes_discarded": 0, "ignored_routes": 0}
        ],
        "routes_local": 4, "routes_received": 12, "routes_installed": 9, "duplicate_macs": 0
    })
}

/// A fake whose `GET /v1/bgp` answers `get` and whose `PUT /v1/bgp` echoes a summary of the
/// configuration it was given.
fn speaker(tag: &str, get: Value) -> Fake {
    Fake::by_body(tag, move |method, path, body| match (method, path) {
        ("GET", "/v1/bgp") => (200, get.to_string()),
        ("PUT", "/v1/bgp") => {
            let mut s = summary();
            s["config"] = body.clone();
            (200, s.to_string())
        }
        _ => (404, r#"{"error":"no such path"}"#.to_owned()),
    })
}

fn failure(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn bgp_set_puts_the_whole_config() {
    let fake = speaker(
        "bgpset",
        json!({"neighbors": [], "routes_local": 0,
        "routes_received": 0, "routes_installed": 0, "duplicate_macs": 0}),
    );
    let out = stdout(&fake.nvo(&[
        "bgp",
        "set",
        "--asn",
        "65000",
        "--router-id",
        "192.0.2.1",
        "--neighbor",
        "192.0.2.254",
        "--neighbor",
        "fd00::fe,asn=65001,passive",
        "--vni",
        "100,rt=65000:100,no-arp-suppression",
        "--hold-time",
        "30",
    ]));
    assert_eq!(
        fake.seen(),
        [Seen {
            method: "PUT".into(),
            path: "/v1/bgp".into(),
            body: json!({
                "asn": 65000, "router_id": "192.0.2.1", "hold_time_s": 30,
                "neighbors": [{"address": "192.0.2.254"},
                              {"address": "fd00::fe", "asn": 65001, "passive": true}],
                "vnis": [{"vni": 100, "import_rt": ["65000:100"], "export_rt": ["65000:100"],
                          "arp_suppression": false}]
            }),
        }]
    );
    assert_eq!(
        out,
        "bgp: AS 65000, router id 192.0.2.1, neighbors 192.0.2.254,fd00::fe\n"
    );

    // -o json prints nvod's answer, the summary.
    let out = stdout(&fake.nvo(&[
        "-o",
        "json",
        "bgp",
        "set",
        "--asn",
        "1",
        "--router-id",
        "10.0.0.1",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["config"],
        json!({"asn": 1, "router_id": "10.0.0.1", "neighbors": []})
    );
    assert_eq!(v["routes_installed"], 9);
}

#[test]
fn a_refused_config_is_one_line_with_nvods_reason() {
    let fake = Fake::new(
        "bgp400",
        400,
        r#"{"error":"vni 100: rd \"1:2\" is used twice"}"#,
    );
    let err = failure(&fake.nvo(&["bgp", "set", "--asn", "1", "--router-id", "10.0.0.1"]));
    assert_eq!(err, "nvo: vni 100: rd \"1:2\" is used twice (HTTP 400)\n");
    // Bad syntax never reaches nvod: clap's usage error, status 2.
    let o = fake.nvo(&[
        "bgp",
        "set",
        "--asn",
        "1",
        "--router-id",
        "10.0.0.1",
        "--neighbor",
        "10.0.0.9,port=x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("port \"x\" is not 1 to 65535"));
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn neighbor_add_and_del_rewrite_the_config_in_force() {
    let fake = speaker("bgpnbr", summary());
    let out = stdout(&fake.nvo(&[
        "bgp",
        "neighbor",
        "add",
        "fd00::fe",
        "--asn",
        "65001",
        "--passive",
    ]));
    assert_eq!(out, "bgp: neighbor fd00::fe (AS 65001) added\n");
    let out = stdout(&fake.nvo(&["bgp", "neighbor", "del", "192.0.2.254"]));
    assert_eq!(out, "bgp: neighbor 192.0.2.254 deleted\n");
    let seen = fake.seen();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/bgp"),
            ("PUT", "/v1/bgp"),
            ("GET", "/v1/bgp"),
            ("PUT", "/v1/bgp")
        ]
    );
    // The rest of the config goes back as it was, the neighbor appended.
    assert_eq!(
        seen[1].body,
        json!({"asn": 65000, "router_id": "192.0.2.1", "listen": true, "port": 179,
               "hold_time_s": 90,
               "neighbors": [{"address": "192.0.2.254"},
                             {"address": "fd00::fe", "asn": 65001, "passive": true}]})
    );
    assert_eq!(seen[3].body["neighbors"], json!([]));

    // Changes that do not fit are refused before anything is written.
    let err = failure(&fake.nvo(&["bgp", "neighbor", "add", "192.0.2.254"]));
    assert!(
        err.contains("bgp already has neighbor 192.0.2.254"),
        "{err}"
    );
    let err = failure(&fake.nvo(&["bgp", "neighbor", "del", "192.0.2.9"]));
    assert_eq!(
        err,
        "nvo: bgp has no neighbor 192.0.2.9; its neighbors: 192.0.2.254\n"
    );
    assert_eq!(fake.seen().len(), 6, "no PUT after a refusal");
}

#[test]
fn neighbor_changes_need_bgp_configured_first() {
    let off = json!({"neighbors": [], "routes_local": 0, "routes_received": 0,
        "routes_installed": 0, "duplicate_macs": 0});
    let fake = speaker("bgpoff", off);
    let err = failure(&fake.nvo(&["bgp", "neighbor", "add", "192.0.2.9"]));
    assert!(
        err.starts_with("nvo: bgp is not configured; configure it first with `nvo bgp set"),
        "{err}"
    );
    assert_eq!(fake.seen().len(), 1);
    let out = stdout(&fake.nvo(&["bgp", "summary"]));
    assert!(out.starts_with("bgp is not configured"), "{out}");
    assert_eq!(stdout(&fake.nvo(&["-o", "json", "bgp", "show"])), "null\n");
}

#[test]
fn summary_and_show_print_text_and_json() {
    let fake = speaker("bgpsum", summary());
    let out = stdout(&fake.nvo(&["bgp", "summary"]));
    assert_eq!(
        out,
        "BGP router identifier 192.0.2.1, local AS 65000\n\
         EVPN routes: 4 local, 12 received, 9 installed; 0 duplicate MACs\n\
         \n\
         NEIGHBOR        AS  STATE         UP/DOWN  RECEIVED  SENT  MSG_IN  MSG_OUT  LAST_ERROR\n\
         192.0.2.254  65000  Established  01:02:03    12 (3)     4      16       12  -\n"
    );
    let out = stdout(&fake.nvo(&["-o", "json", "bgp", "summary"]));
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), summary());

    let out = stdout(&fake.nvo(&["bgp", "show"]));
    assert!(
        out.contains("[bgp]\nasn = 65000\n")
            && out.contains("[[bgp.neighbors]]\naddress = \"192.0.2.254\"\n"),
        "{out}"
    );
    let out = stdout(&fake.nvo(&["-o", "json", "bgp", "show"]));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        summary()["config"]
    );
}

#[test]
fn stop_deletes_the_speaker() {
    let fake = Fake::new("bgpstop", 204, "");
    let out = stdout(&fake.nvo(&["bgp", "stop"]));
    assert!(out.starts_with("bgp stopped"), "{out}");
    assert_eq!(stdout(&fake.nvo(&["-o", "json", "bgp", "stop"])), "");
    let seen = fake.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("DELETE", "/v1/bgp")
    );
}

#[test]
fn evpn_routes_filter_by_query_and_show_a_table() {
    let routes = json!([
        {"type": 3, "rd": "192.0.2.9:100", "vni": 100, "vtep": "192.0.2.9",
         "source": "192.0.2.254", "seq": 0, "rt": ["65000:100"], "best": true}
    ]);
    let body = routes.to_string();
    let fake = Fake::new("evpnroutes", 200, &body);
    let out = stdout(&fake.nvo(&["evpn", "routes", "--vni", "100", "--type", "3"]));
    assert_eq!(
        out,
        "Flags: * best, S stale, D duplicate MAC, st sticky MAC\n\
         TYPE  VNI  MAC  IP  VTEP       SEQ  SOURCE       RD             RT         FLAGS\n\
         3     100  -    -   192.0.2.9    0  192.0.2.254  192.0.2.9:100  65000:100  *\n"
    );
    let out = stdout(&fake.nvo(&["-o", "json", "evpn", "routes"]));
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), routes);
    let paths: Vec<String> = fake.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/v1/evpn/routes?vni=100&type=3", "/v1/evpn/routes"]);
}
