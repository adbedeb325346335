//! The API subcommands as a user runs them: the `nvo` binary against a fake nvod on a unix
//! socket that records each request and answers with a canned status and body. Checks what is
//! sent (method, path, JSON body), what is printed (tables, pretty JSON) and how failures end
//! (one line on stderr, exit status 1).

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::{json, Value};

mod common;

use common::{stdout, Fake, Seen};

const NETWORK: &str = r#"{"vni":100,"mtu":1450,"learning":true,"learn_ports":true,"learn_tunnels":true,"bum":{"mode":"head_end"},"max_learned":4096,
"ageing_s":300,"flood":["10.100.0.2"],"ports":["c-red1"],"learned":1,"static":0}"#;

#[test]
fn network_add_sends_the_spec_and_shows_the_answer() {
    let fake = Fake::new("netadd", 201, NETWORK);
    let out = stdout(&fake.nvo(&[
        "network",
        "add",
        "100",
        "--flood",
        "10.100.0.2",
        "--no-learning",
    ]));
    assert_eq!(
        fake.seen(),
        [Seen {
            method: "POST".into(),
            path: "/v1/networks".into(),
            body: json!({"vni": 100, "learning": false, "flood": ["10.100.0.2"]}),
        }]
    );
    assert!(
        out.contains("vni          100\n") && out.contains("flood        10.100.0.2\n"),
        "{out}"
    );

    // -o json prints nvod's answer as it is, pretty.
    let out = stdout(&fake.nvo(&["-o", "json", "network", "show", "100"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, serde_json::from_str::<Value>(NETWORK).unwrap());
    assert!(out.lines().count() > 5, "pretty-printed: {out}");
    assert_eq!(fake.seen()[1].path, "/v1/networks/100");
}

#[test]
fn every_call_goes_to_its_path() {
    let fake = Fake::new("paths", 200, "null");
    let calls: &[(&[&str], &str, &str, Value)] = &[
        (
            &["network", "del", "7"],
            "DELETE",
            "/v1/networks/7",
            Value::Null,
        ),
        (
            &["port", "add", "c-x", "--vni", "7", "--kind", "tap"],
            "POST",
            "/v1/ports",
            json!({"name": "c-x", "vni": 7, "kind": "tap"}),
        ),
        (
            &["port", "del", "c-x"],
            "DELETE",
            "/v1/ports/c-x",
            Value::Null,
        ),
        (
            &[
                "fdb",
                "add",
                "7",
                "02:00:00:00:00:0A",
                "--remote",
                "fd00::2",
            ],
            "POST",
            "/v1/networks/7/fdb",
            json!({"mac": "02:00:00:00:00:0a", "remote": "fd00::2"}),
        ),
        (
            &["fdb", "add", "7", "02:00:00:00:00:0b", "--port", "c-x"],
            "POST",
            "/v1/networks/7/fdb",
            json!({"mac": "02:00:00:00:00:0b", "port": "c-x"}),
        ),
        (
            &["fdb", "del", "7", "02-00-00-00-00-0B"],
            "DELETE",
            "/v1/networks/7/fdb/02:00:00:00:00:0b",
            Value::Null,
        ),
        (
            &["flood", "add", "7", "192.0.2.9"],
            "POST",
            "/v1/networks/7/flood",
            json!({"remote": "192.0.2.9"}),
        ),
        (
            &["flood", "del", "7", "fd00::9"],
            "DELETE",
            "/v1/networks/7/flood/fd00::9",
            Value::Null,
        ),
        (
            &["meter", "add", "1", "--rate", "100mbit", "--burst", "64k"],
            "POST",
            "/v1/meters",
            json!({"id": 1, "rate": 100_000_000u64, "burst": 65536}),
        ),
        (
            &["meter", "del", "1"],
            "DELETE",
            "/v1/meters/1",
            Value::Null,
        ),
        (
            &[
                "network",
                "add",
                "8",
                "--encap",
                "vxlan-gbp",
                "--param",
                "group=100",
            ],
            "POST",
            "/v1/networks",
            json!({"vni": 8, "encap": "vxlan-gbp", "params": {"group": 100}}),
        ),
        (&["profile", "list"], "GET", "/v1/profiles", Value::Null),
        (
            &["profile", "show", "vxlan-gpe"],
            "GET",
            "/v1/profiles/vxlan-gpe",
            Value::Null,
        ),
        (
            &["profile", "del", "my tun"],
            "DELETE",
            "/v1/profiles/my%20tun",
            Value::Null,
        ),
        (
            &["network", "add", "9", "--encap", "vxlan-gpe", "--l3"],
            "POST",
            "/v1/networks",
            json!({"vni": 9, "encap": "vxlan-gpe", "l3": true}),
        ),
        (
            &[
                "port",
                "add",
                "c-y",
                "--vni",
                "9",
                "--no-large-frames",
                "--gso",
                "off",
                "--tx-checksum",
                "on",
            ],
            "POST",
            "/v1/ports",
            json!({"name": "c-y", "vni": 9, "kind": "veth",
                "offloads": {"large_frames": false, "gso": false, "tx_checksum": true}}),
        ),
        (
            &["route", "list", "9"],
            "GET",
            "/v1/networks/9/routes",
            Value::Null,
        ),
        (
            &["route", "add", "9", "10.0.0.0/24", "--remote", "192.0.2.2"],
            "POST",
            "/v1/networks/9/routes",
            json!({"prefix": "10.0.0.0/24", "remote": "192.0.2.2"}),
        ),
        (
            &["route", "del", "9", "10.0.0.2/32"],
            "DELETE",
            "/v1/networks/9/routes/10.0.0.2/32",
            Value::Null,
        ),
        (
            &["profile", "keys", "vxlan-gpe-nsh"],
            "GET",
            "/v1/profiles/vxlan-gpe-nsh/keys",
            Value::Null,
        ),
        (
            &[
                "profile",
                "bind",
                "vxlan-gpe-nsh",
                "00 00 0A FF",
                "--local",
                "9",
            ],
            "POST",
            "/v1/profiles/vxlan-gpe-nsh/keys",
            json!({"key": "00000aff", "local": 9}),
        ),
        (
            &[
                "profile",
                "bind",
                "vxlan-gpe-nsh",
                "00000afe",
                "--forward",
                "fd00::3",
            ],
            "POST",
            "/v1/profiles/vxlan-gpe-nsh/keys",
            json!({"key": "00000afe", "forward": "fd00::3"}),
        ),
        (
            &["profile", "unbind", "vxlan-gpe-nsh", "00:00:0a:ff"],
            "DELETE",
            "/v1/profiles/vxlan-gpe-nsh/keys/00000aff",
            Value::Null,
        ),
    ];
    for (args, method, path, body) in calls {
        // JSON output passes nvod's answer through without reading it (here: null).
        let out = fake.nvo(&[&["-o", "json"], *args].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = fake.seen().pop().unwrap();
        assert_eq!(
            (last.method.as_str(), last.path.as_str(), &last.body),
            (*method, *path, body),
            "{args:?}"
        );
    }
}

#[test]
fn flush_counters_and_fdb_render_as_tables() {
    let fake = Fake::new("flush", 200, r#"{"flushed": 4}"#);
    assert_eq!(
        stdout(&fake.nvo(&["fdb", "flush", "9", "--all"])),
        "flushed 4 entries from network 9\n"
    );
    assert_eq!(fake.seen()[0].body, json!({"scope": "all"}));

    let counters = r#"{"drops":{"no_network":0,"mtu_exceeded":2},"networks":{"9":{"delivered":5}},"ports":{},"underlay":{"rx_packets":0}}"#;
    let fake = Fake::new("counters", 200, counters);
    let out = stdout(&fake.nvo(&["counters"]));
    assert_eq!(
        out,
        "SCOPE    NAME  COUNTER       VALUE\nnetwork  9     delivered         5\ndrop     -     mtu_exceeded      2\n\
         (2 zero counters hidden; --all shows them)\n"
    );
    assert_eq!(stdout(&fake.nvo(&["counters", "--all"])).lines().count(), 5);

    let fdb = r#"[{"mac":"02:00:00:00:00:01","port":"c-red1","origin":"learned","age_s":12}]"#;
    let fake = Fake::new("fdb", 200, fdb);
    let out = stdout(&fake.nvo(&["fdb", "show", "100"]));
    assert_eq!(out, "MAC                DESTINATION  ORIGIN   AGE\n02:00:00:00:00:01  port c-red1  learned  12s\n");
}

const PROFILE_TOML: &str = r#"name = "mytun"
udp_port = 7777
template = "0800 0000 0000 0000"
vni = { offset = 4, len = 3 }
matches = [{ offset = 0, mask = "08", value = "08" }]
params = [{ name = "tag", offset = 2, len = 2 }]
"#;

#[test]
fn profile_add_sends_the_file_and_shows_the_answer() {
    let answer = json!({"builtin": false, "name": "mytun", "udp_port": 7777,
        "template": "0800 0000 0000 0000", "vni": {"offset": 4, "len": 3},
        "matches": [{"offset": 0, "mask": "08", "value": "08"}], "payload": "ethernet",
        "params": [{"name": "tag", "offset": 2, "len": 2}]});
    let fake = Fake::new("profadd", 201, &answer.to_string());
    let file = std::env::temp_dir().join(format!("nvo-cli-api-{}.toml", std::process::id()));
    std::fs::write(&file, PROFILE_TOML).unwrap();
    let out = stdout(&fake.nvo(&["profile", "add", "--file", file.to_str().unwrap()]));
    let seen = fake.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/v1/profiles")
    );
    let mut sent = answer.clone();
    sent.as_object_mut().unwrap().remove("builtin");
    assert_eq!(seen[0].body, sent);
    assert!(
        out.starts_with("# profile mytun, user-defined\n") && out.contains("udp_port = 7777\n"),
        "{out}"
    );

    // A broken file fails here, naming the file and the key, and nothing is sent.
    std::fs::write(&file, PROFILE_TOML.replace("udp_port", "udp_prot")).unwrap();
    let o = fake.nvo(&["profile", "add", "--file", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("udp_prot"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(fake.seen().len(), 1);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn profile_list_is_a_table() {
    let list = json!([{"builtin": true, "name": "vxlan", "udp_port": 4789,
        "template": "0800 0000 0000 0000", "vni": {"offset": 4, "len": 3}, "payload": "ethernet"}]);
    let fake = Fake::new("proflist", 200, &list.to_string());
    assert_eq!(
        stdout(&fake.nvo(&["profile", "list"])),
        "NAME   KIND      TRANSPORT  HEADER  PAYLOAD   PARAMS\n\
         vxlan  built-in  udp 4789        8  ethernet  -\n"
    );
}

#[test]
fn routes_and_keys_render_as_tables() {
    let routes = json!([{"prefix": "10.0.0.2/32", "remote": "192.0.2.2"},
        {"prefix": "10.1.0.0/16", "remote": "192.0.2.3"}]);
    let fake = Fake::new("routes", 200, &routes.to_string());
    assert_eq!(
        stdout(&fake.nvo(&["route", "list", "100"])),
        "PREFIX       REMOTE\n10.0.0.2/32  192.0.2.2\n10.1.0.0/16  192.0.2.3\n"
    );

    let fake = Fake::new(
        "routeadd",
        201,
        r#"{"prefix": "10.1.0.0/16", "remote": "192.0.2.3"}"#,
    );
    let args = [
        "route",
        "add",
        "100",
        "10.1.0.0/16",
        "--remote",
        "192.0.2.3",
    ];
    assert_eq!(
        stdout(&fake.nvo(&args)),
        "network 100: route 10.1.0.0/16 via 192.0.2.3\n"
    );
    let out = stdout(&fake.nvo(&[&["-o", "json"], &args[..]].concat()));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"prefix": "10.1.0.0/16", "remote": "192.0.2.3"})
    );

    let keys = json!([{"key": "00000aff", "forward": "192.0.2.3"},
        {"key": "00000afe", "local": 100}]);
    let fake = Fake::new("keys", 200, &keys.to_string());
    assert_eq!(
        stdout(&fake.nvo(&["profile", "keys", "vxlan-gpe-nsh"])),
        "KEY       SPI   SI  DESTINATION\n\
         00000aff   10  255  forward 192.0.2.3\n\
         00000afe   10  254  local network 100\n"
    );

    let l3 = json!({"vni": 100, "mtu": 1450, "learning": true, "learn_ports": true, "learn_tunnels": true, "bum": {"mode": "head_end"},
        "max_learned": 4096, "ageing_s": 300, "flood": [], "ports": [], "learned": 0,
        "static": 0, "encap": "ipip", "l3": true, "gateway_mac": "02:00:00:00:00:fe",
        "routes": [{"prefix": "10.0.0.2/32", "remote": "192.0.2.2"}]});
    let fake = Fake::new("l3show", 200, &l3.to_string());
    let out = stdout(&fake.nvo(&["network", "show", "100"]));
    assert!(
        out.contains("l3           yes\ngateway_mac  02:00:00:00:00:fe\nroutes       10.0.0.2/32 via 192.0.2.2\n"),
        "{out}"
    );
    let fake = Fake::new("l3list", 200, &json!([l3]).to_string());
    let out = stdout(&fake.nvo(&["network", "list"]));
    assert!(
        out.lines().nth(1).unwrap().starts_with("100  ipip l3  "),
        "{out}"
    );
}

#[test]
fn a_refused_route_is_one_line_and_a_bad_prefix_is_never_sent() {
    let fake = Fake::new(
        "routeerr",
        400,
        r#"{"error":"network 100 is not an l3 network; routes belong to networks created with \"l3\": true"}"#,
    );
    let out = fake.nvo(&[
        "route",
        "add",
        "100",
        "10.0.0.0/24",
        "--remote",
        "192.0.2.2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("nvo: network 100 is not an l3 network") && err.lines().count() == 1,
        "{err}"
    );
    let out = fake.nvo(&[
        "route",
        "add",
        "100",
        "10.0.0.1/24",
        "--remote",
        "192.0.2.2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("host bits set; use 10.0.0.0/24"));
    let out = fake.nvo(&["profile", "unbind", "vxlan-gpe-nsh", "xyz"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(fake.seen().len(), 1, "only the first call reached nvod");
}

#[test]
fn failures_are_one_line_and_exit_1() {
    let fake = Fake::new(
        "err",
        409,
        r#"{"error":"network 100 already exists; delete it first"}"#,
    );
    let out = fake.nvo(&["network", "add", "100"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "nvo: network 100 already exists; delete it first (HTTP 409)\n"
    );
    assert!(out.stdout.is_empty());

    let out = Command::new(env!("CARGO_BIN_EXE_nvo"))
        .args(["--socket", "/nonexistent/nvod.sock", "node"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("nvo: cannot reach nvod at /nonexistent/nvod.sock"),
        "{err}"
    );

    // An answer that is not what the API promises is a protocol error, not a crash.
    let fake = Fake::new("bad", 200, r#"{"surprise": true}"#);
    let out = fake.nvo(&["node"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .starts_with("nvo: unexpected answer from nvod"));
}

#[test]
fn the_socket_comes_from_the_environment_too() {
    let fake = Fake::new("env", 200, "[]");
    let out = Command::new(env!("CARGO_BIN_EXE_nvo"))
        .args(["port", "list"])
        .env("NVO_SOCKET", fake.socket())
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "NAME  VNI  KIND  UP\n");
    assert_eq!(fake.seen()[0].path, "/v1/ports");
}

/// `nvo` with the words of `line` as its arguments.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn overlay_calls_go_to_their_paths() {
    let fake = Fake::new("ovpaths", 200, "null");
    // (command line, "METHOD path", body sent)
    let calls = [
        (
            "overlay id set 0x10",
            "PUT /v1/overlay",
            r#"{"node_id": 16}"#,
        ),
        (
            "overlay node set 2 192.0.2.2@3 fd00::2",
            "PUT /v1/overlay/nodes/2",
            r#"{"locators": [{"addr": "192.0.2.2", "weight": 3}, {"addr": "fd00::2", "weight": 1}]}"#,
        ),
        ("overlay node del 2", "DELETE /v1/overlay/nodes/2", "null"),
        ("overlay node show 2", "GET /v1/overlay/nodes/2", "null"),
        ("overlay node list", "GET /v1/overlay/nodes", "null"),
        (
            "overlay route set 7 0xff000001 1 2 4",
            "PUT /v1/overlay/routes/ethernet/4278190081",
            r#"{"next_hops": [1, 2, 4]}"#,
        ),
        (
            "overlay route del ipv6 3",
            "DELETE /v1/overlay/routes/ipv6/3",
            "null",
        ),
    ];
    for (line, call, body) in calls {
        let out = fake.nvo(&[&["-o", "json"], &words(line)[..]].concat());
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = fake.seen().pop().unwrap();
        let body: Value = serde_json::from_str(body).unwrap();
        let seen = (format!("{} {}", last.method, last.path), last.body);
        assert_eq!(seen, (call.to_owned(), body), "{line}");
    }
    // Bad IDs, weights and applications fail in clap, before anything is sent.
    let before = fake.seen().len();
    for line in [
        "overlay id set 0",
        "overlay node set 2 192.0.2.2@1001",
        "overlay node set 2",
        "overlay route set mpls 3 2",
        "overlay route set ethernet 3",
        "overlay locator weight 192.0.2.1 2000",
    ] {
        assert_eq!(fake.nvo(&words(line)).status.code(), Some(2), "{line}");
    }
    assert_eq!(fake.seen().len(), before);
}

/// A fake whose own node is 1, at `locators` (none: nvod does not know node 1 yet).
fn own_node(tag: &str, locators: Option<Value>) -> Fake {
    Fake::routed(tag, move |method, path| match (method, path, &locators) {
        ("GET", "/v1/overlay", _) => (200, r#"{"node_id":1,"counters":{"relayed":5}}"#.into()),
        ("GET", "/v1/overlay/nodes/1", Some(l)) => (
            200,
            json!({"node_id": 1, "locators": l, "own": true}).to_string(),
        ),
        ("GET", _, _) => (404, r#"{"error":"no overlay node 1"}"#.into()),
        _ => (200, "null".into()),
    })
}

#[test]
fn own_locators_are_read_changed_and_written_back() {
    let fake = own_node("ovown", Some(json!([{"addr": "192.0.2.1", "weight": 1}])));
    let out = stdout(&fake.nvo(&words("overlay locator add fd00::1 --weight 3")));
    assert_eq!(out, "node 1: locators 192.0.2.1@1,fd00::1@3\n");
    let seen = fake.seen();
    let calls: Vec<_> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/overlay"),
            ("GET", "/v1/overlay/nodes/1"),
            ("PUT", "/v1/overlay/nodes/1")
        ]
    );
    assert_eq!(
        seen[2].body,
        json!({"locators": [{"addr": "192.0.2.1", "weight": 1}, {"addr": "fd00::1", "weight": 3}]})
    );
    stdout(&fake.nvo(&words("overlay locator weight 192.0.2.1 0")));
    assert_eq!(
        fake.seen()[5].body,
        json!({"locators": [{"addr": "192.0.2.1", "weight": 0}]})
    );
    stdout(&fake.nvo(&words("overlay locator del 192.0.2.1")));
    assert_eq!(fake.seen()[8].body, json!({"locators": []}));

    // A change that contradicts nvod's table is one line, exit 1, and nothing is written.
    let out = fake.nvo(&words("overlay locator add 192.0.2.1"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "nvo: node 1 already has locator 192.0.2.1@1; change its weight with `weight`\n"
    );
    assert_eq!(fake.seen().len(), 11, "read, never written");

    assert_eq!(
        stdout(&fake.nvo(&words("overlay show"))),
        "node_id   1\nlocators  192.0.2.1@1\nrelayed   5\n"
    );
    let v: Value =
        serde_json::from_str(&stdout(&fake.nvo(&words("-o json overlay show")))).unwrap();
    assert_eq!(
        v,
        json!({"node_id": 1, "counters": {"relayed": 5},
            "locators": [{"addr": "192.0.2.1", "weight": 1}]})
    );

    // A node nvod does not know yet has no locators: add starts the list.
    let fake = own_node("ovnew", None);
    assert_eq!(
        stdout(&fake.nvo(&words("overlay locator add 192.0.2.1"))),
        "node 1: locators 192.0.2.1@1\n"
    );
    assert_eq!(
        fake.seen()[2].body,
        json!({"locators": [{"addr": "192.0.2.1", "weight": 1}]})
    );
    let out = fake.nvo(&words("overlay node weight 1 192.0.2.9 2"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("node 1 has no locator 192.0.2.9"));
}

#[test]
fn overlay_listings_render_as_tables() {
    let nodes = json!([{"node_id": 1, "locators": [{"addr": "192.0.2.1", "weight": 1}], "own": true},
        {"node_id": 2, "locators": [{"addr": "192.0.2.2", "weight": 3},
            {"addr": "fd00::2", "weight": 1}], "own": false}]);
    let fake = Fake::new("ovnodes", 200, &nodes.to_string());
    assert_eq!(
        stdout(&fake.nvo(&words("overlay node list"))),
        "NODE  OWN  LOCATORS\n   1  own  192.0.2.1@1\n   2  -    192.0.2.2@3,fd00::2@1\n"
    );

    let fake = Fake::routed("ovroutes", |_, path| {
        let app = path.rsplit('/').next().unwrap_or_default().to_owned();
        let routes = match app.as_str() {
            "ipv4" => json!([]),
            _ => json!([{"app": app, "dst": 3, "next_hops": [2]}]),
        };
        (200, routes.to_string())
    });
    assert_eq!(
        stdout(&fake.nvo(&words("overlay route list"))),
        "APP       DST  NEXT_HOPS\nethernet    3  2\nipv6        3  2\n"
    );
    let paths: Vec<String> = fake.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/overlay/routes/ethernet",
            "/v1/overlay/routes/ipv4",
            "/v1/overlay/routes/ipv6"
        ]
    );
    let v: Value =
        serde_json::from_str(&stdout(&fake.nvo(&words("-o json overlay route list")))).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);

    // The applications are fixed: no call.
    let out = stdout(&fake.nvo(&words("overlay apps")));
    assert!(
        out.starts_with("APP       NUMBER  PAYLOAD\nethernet       7  Ethernet frames\n"),
        "{out}"
    );
    assert_eq!(fake.seen().len(), 6);
}

const EVENTS: &str = ": keep-alive\n\n\
    event: own\ndata: {\"kind\":\"own\",\"action\":\"set\",\"node\":4}\n\n\
    event: route\ndata: {\"kind\":\"route\",\"action\":\"set\",\"app\":\"ethernet\",\"dst\":5,\"next_hops\":[2,3]}\n\n\
    event: node\ndata: {\"kind\":\"node\",\"action\":\"removed\",\"node\":2}\n\n";

#[test]
fn events_print_one_line_per_event_until_the_stream_ends() {
    let fake = Fake::new("events", 200, EVENTS);
    assert_eq!(
        stdout(&fake.nvo(&["events"])),
        "own set 4\nroute set ethernet 5 via 2,3\nnode removed 2\n"
    );
    assert_eq!(
        (fake.seen()[0].method.as_str(), fake.seen()[0].path.as_str()),
        ("GET", "/v1/events")
    );
    let out = stdout(&fake.nvo(&words("-o json events --count 2")));
    assert_eq!(
        out,
        "{\"kind\":\"own\",\"action\":\"set\",\"node\":4}\n\
         {\"kind\":\"route\",\"action\":\"set\",\"app\":\"ethernet\",\"dst\":5,\"next_hops\":[2,3]}\n"
    );

    let fake = Fake::new(
        "eventserr",
        404,
        r#"{"error":"no route for GET /v1/events"}"#,
    );
    let out = fake.nvo(&["events"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "nvo: no route for GET /v1/events (HTTP 404)\n"
    );
}

const MONITOR: &str = ": keep-alive\n\n\
    event: drop\ndata: {\"type\":\"drop\",\"time_ns\":3723000004000,\"datapath\":\"ebpf\",\"network\":999,\"reason\":\"unknown_vni\",\"code\":9,\"len\":92,\"decode\":\"a > b\"}\n\n\
    event: learn\ndata: {\"type\":\"learn\",\"time_ns\":0,\"network\":100,\"mac\":\"02:00:00:00:00:01\",\"where\":\"port c1\",\"port\":\"c1\"}\n\n\
    event: lost\ndata: {\"type\":\"lost\",\"time_ns\":0,\"count\":5,\"stage\":\"listener\"}\n\n";

#[test]
fn monitor_sends_its_filters_and_prints_one_line_per_event() {
    let fake = Fake::new("monitor", 200, MONITOR);
    assert_eq!(
        stdout(&fake.nvo(&words(
            "monitor --network 100 --port c1 --reason unknown_vni --type drop,learn"
        ))),
        "01:02:03.000004 drop  unknown_vni vni 999 port - len 92: a > b\n\
         00:00:00.000000 learn vni 100 02:00:00:00:00:01 at port c1\n\
         00:00:00.000000 lost  5 events lost (listener)\n"
    );
    assert_eq!(
        (fake.seen()[0].method.as_str(), fake.seen()[0].path.as_str()),
        (
            "GET",
            "/v1/monitor?network=100&port=c1&reason=unknown_vni&type=drop,learn"
        )
    );
    let out = stdout(&fake.nvo(&words("-o json monitor --count 1")));
    assert!(
        out.starts_with("{\"type\":\"drop\",") && out.lines().count() == 1,
        "{out}"
    );
    assert_eq!(fake.seen()[1].path, "/v1/monitor");

    let fake = Fake::new(
        "monitorerr",
        400,
        r#"{"error":"reason=\"nope\" is not a drop reason (nvo counters lists them)"}"#,
    );
    let out = fake.nvo(&words("monitor --reason nope"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("\"nope\" is not a drop reason"),
        "refusals are shown as nvod said them"
    );
}
