//! The API subcommands as a user runs them: the `nvo` binary against a fake nvod on a unix
//! socket that records each request and answers with a canned status and body. Checks what is
//! sent (method, path, JSON body), what is printed (tables, pretty JSON) and how failures end
//! (one line on stderr, exit status 1).

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: String,
    path: String,
    body: Value,
}

/// A fake nvod answering every request with `status` and `body`.
struct Fake {
    socket: PathBuf,
    seen: Arc<Mutex<Vec<Seen>>>,
    _thread: JoinHandle<()>,
}

impl Fake {
    fn new(tag: &str, status: u16, body: &str) -> Fake {
        let socket =
            std::env::temp_dir().join(format!("nvo-cli-api-{tag}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let body = body.to_owned();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut parts = line.split_whitespace();
                let (method, path) = (
                    parts.next().unwrap().to_owned(),
                    parts.next().unwrap().to_owned(),
                );
                let mut length = 0;
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut buf = vec![0; length];
                reader.read_exact(&mut buf).unwrap();
                let body_in = if buf.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&buf).unwrap()
                };
                log.lock().unwrap().push(Seen {
                    method,
                    path,
                    body: body_in,
                });
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                reader.get_mut().write_all(answer.as_bytes()).unwrap();
            }
        });
        Fake {
            socket,
            seen,
            _thread: thread,
        }
    }

    fn nvo(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nvo"))
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .env_remove("NVO_SOCKET")
            .output()
            .unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "nvo failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

const NETWORK: &str = r#"{"vni":100,"mtu":1450,"learning":true,"bum":{"mode":"head_end"},"max_learned":4096,
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

    let l3 = json!({"vni": 100, "mtu": 1450, "learning": true, "bum": {"mode": "head_end"},
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
        .env("NVO_SOCKET", &fake.socket)
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "NAME  VNI  KIND  UP\n");
    assert_eq!(fake.seen()[0].path, "/v1/ports");
}
