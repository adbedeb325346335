//! The status page (`http_listen`, docs/status-page.md): a real nvod serves `GET /` — the
//! embedded page, with strict headers — and `GET /status.json`, which shows this host, the
//! peers it knows (flood list, FDB, overlay nodes, BGP neighbours), its networks, tunnel
//! traffic, drops and recent events; the listener stays read-only.
//!
//! ```text
//!  ns nvo-TAG-PID
//! ┌───────────────────────────────────────────────────────────────┐
//! │  nvod  api: DIR/nvod.sock   http: 127.0.0.1:9477 (lo)         │
//! │    locator 10.209.0.1 on u0 ── u1 (veth, nobody behind it)     │
//! │    network 100, flood [10.209.0.2], port c0 ── c1 10.0.0.1/24 │
//! │    overlay node 5 at 10.209.0.5; BGP neighbour 10.209.0.250   │
//! │    (absent: the session never comes up)                        │
//! └───────────────────────────────────────────────────────────────┘
//! ```
//!
//! Needs root and iproute2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use common::{host_with_port, http_exchange, start_with_http, wait_for, Nvod, Scratch, HTTP};
use nvo_io::netns::NamedNetns;
use serde_json::{json, Value};

fn start(ns: &NamedNetns, dir: &Scratch) -> Nvod {
    start_with_http(ns, &dir.0, "")
}

fn get(ns: &NamedNetns, path: &str) -> (u16, String, String) {
    http_exchange(
        ns,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
}

fn status(ns: &NamedNetns) -> Value {
    let (code, head, body) = get(ns, "/status.json");
    assert_eq!(code, 200, "{head}\n{body}");
    assert_eq!(header(&head, "content-type"), "application/json");
    assert_eq!(header(&head, "cache-control"), "no-store");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The value of a header (`name` in lowercase).
fn header<'a>(head: &'a str, name: &str) -> &'a str {
    head.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            (n.to_ascii_lowercase() == name).then_some(v)
        })
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {name} header in {head}"))
}

#[test]
fn the_page_is_served_self_contained_with_strict_headers() {
    let ns = host_with_port("page");
    let dir = Scratch::new("uipage");
    let _nvod = start(&ns, &dir);
    let (code, head, body) = get(&ns, "/");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    assert_eq!(header(&head, "x-content-type-options"), "nosniff");
    assert_eq!(header(&head, "cache-control"), "no-store");
    let csp = header(&head, "content-security-policy");
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert!(csp.contains("style-src 'sha256-"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    // The page polls status.json; it loads nothing from elsewhere and has no inline handler
    // (the policy would block one).
    assert!(body.contains("status.json") && body.contains("data-host"));
    assert!(!body.contains("http://") && !body.contains("https://"));
    assert!(!body.contains(" src=") && !body.contains(" href="));
    let handler = regex_like_handler(&body);
    assert!(handler.is_none(), "inline handler: {handler:?}");
    // The script the policy allows is the page's: its hash, by openssl.
    let script = body
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .unwrap()
        .0;
    let hash = Command::new("sh")
        .args(["-c", "openssl dgst -sha256 -binary | base64 -w0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(script.as_bytes())?;
            c.wait_with_output()
        });
    if let Ok(out) = hash {
        let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !hash.is_empty() {
            assert!(csp.contains(&format!("'sha256-{hash}'")), "{hash} {csp}");
        }
    }
    // HEAD works, anything else is refused: the listener is read-only.
    let (code, _, _) = http_exchange(
        &ns,
        "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 200);
    for request in [
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "PUT /status.json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "DELETE /status.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ] {
        let (code, head, _) = http_exchange(&ns, request);
        assert_eq!(code, 405, "{request}: {head}");
    }
}

/// An `on...=` attribute inside a tag, if any.
fn regex_like_handler(page: &str) -> Option<String> {
    let html = page.split("<script>").next().unwrap_or(page);
    html.split('<').skip(1).find_map(|tag| {
        let tag = tag.split('>').next().unwrap_or("");
        tag.split_whitespace()
            .find(|a| a.starts_with("on") && a.contains('='))
            .map(str::to_owned)
    })
}

#[test]
fn status_json_shows_host_peers_networks_traffic_and_events() {
    let ns = host_with_port("json");
    let dir = Scratch::new("uijson");
    let nvod = start(&ns, &dir);
    let _: Value = nvod.post(
        "/v1/networks",
        &json!({"vni": 100, "flood": ["10.209.0.2"]}),
    );
    let _: Value = nvod.post("/v1/ports", &json!({"name": "c0", "vni": 100}));
    let _: Value = nvod.put(
        "/v1/overlay/nodes/5",
        &json!({"locators": [{"addr": "10.209.0.5"}]}),
    );
    let node: Value = nvod.get("/v1/node");
    assert_eq!(node["http_listen"], HTTP);
    let s = status(&ns);
    assert_eq!(s["host"]["locators"][0], "10.209.0.1");
    assert_eq!(s["host"]["node_id"], node["node_id"]);
    assert_eq!(s["host"]["datapath"], node["datapath"]);
    assert_eq!(s["host"]["version"], node["version"]);
    let n = &s["networks"][0];
    assert_eq!(n["vni"], 100);
    assert_eq!(n["profile"], "vxlan");
    assert_eq!(n["ports"], json!(["c0"]));
    assert_eq!(n["flood"], json!(["10.209.0.2"]));
    let peer = |s: &Value, addr: &str| -> Value {
        s["peers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["address"] == addr)
            .cloned()
            .unwrap_or_else(|| panic!("no peer {addr}: {s}"))
    };
    assert_eq!(peer(&s, "10.209.0.2")["sources"], json!(["flood"]));
    assert_eq!(peer(&s, "10.209.0.5")["node_id"], 5);
    let bgp = peer(&s, "10.209.0.250");
    assert_ne!(bgp["bgp"]["state"], "established", "{bgp}");
    assert!(bgp["bgp"]["state"].is_string(), "{bgp}");
    assert_eq!(s["tunnels"]["per_remote"], false);
    assert_eq!(
        s["tunnels"]["remotes"],
        json!([{"remote": "10.209.0.2", "networks": [100]}])
    );
    // The events: the listener's start, then the overlay node set above.
    let events = s["events"].as_array().unwrap();
    assert_eq!(events[0]["type"], "nvod", "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "overlay.node" && e["text"] == "node set 5 locators 10.209.0.5@1"),
        "{events:?}"
    );
    // Traffic into the port: ARP requests for an absent neighbour, flooded to 10.209.0.2 —
    // counted as tunnel traffic of network 100 and on the underlay.
    let before = s["sample_ms"].as_u64().unwrap();
    let _ = Command::new("ip")
        .args(["netns", "exec", ns.name(), "ping", "-c", "3", "-i", "0.2"])
        .args(["-W", "1", "10.0.0.2"])
        .output();
    let mut last = Value::Null;
    assert!(
        wait_for(Duration::from_secs(5), || {
            last = status(&ns);
            last["tunnels"]["networks"][0]["tx_frames"].as_u64() > Some(0)
                && last["tunnels"]["underlay"]["tx_packets"].as_u64() > Some(0)
        }),
        "{last}"
    );
    assert!(last["sample_ms"].as_u64().unwrap() > before);
    // The same figures as the API's counters.
    let api: nvo_api::Counters = nvod.get("/v1/counters");
    let c = &api.networks[&100];
    assert!(
        last["tunnels"]["networks"][0]["tx_frames"]
            .as_u64()
            .unwrap()
            <= c["encap_unicast"] + c["encap_flood"]
    );
    // Drops, most first, non-zero only.
    let drops = last["drops"].as_array().unwrap();
    assert!(drops
        .windows(2)
        .all(|w| w[0]["count"].as_u64() >= w[1]["count"].as_u64()));
    assert!(drops.iter().all(|d| d["count"].as_u64() > Some(0)));
}
