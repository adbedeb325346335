//! The metrics listener (`http_listen`): a real nvod serves `GET /metrics` that Prometheus'
//! own linter (`promtool check metrics`) finds no problem in, with the counters, tables,
//! drop reasons and BGP sessions nvod has; the listener is read-only and bounded like the API.
//!
//! ```text
//!  ns nvo-TAG-PID
//! ┌───────────────────────────────────────────────────────────────┐
//! │  nvod  api: DIR/nvod.sock   metrics: 127.0.0.1:9477 (lo)      │
//! │    locator 10.209.0.1 on u0 ── u1 (veth, nobody behind it)     │
//! │    network 100, flood [10.209.0.2], port c0 ── c1 10.0.0.1/24 │
//! │    BGP neighbour 10.209.0.250 (absent: the session never      │
//! │    comes up, its state shows)                                  │
//! └───────────────────────────────────────────────────────────────┘
//! ```
//!
//! Needs root, iproute2 and promtool (Debian's `prometheus`, installed by scripts/setup.sh).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    host_with_port, http_connect, http_exchange, start_with_http, wait_for, Nvod, Scratch,
};
use nvo_io::netns::NamedNetns;
use serde_json::json;

fn start(ns: &NamedNetns, dir: &Scratch) -> Nvod {
    start_with_http(
        ns,
        &dir.0,
        "http_max_connections = 4\nhttp_header_timeout_s = 1\n",
    )
}

fn scrape(ns: &NamedNetns) -> String {
    let (status, head, body) = http_exchange(
        ns,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    body
}

/// The value of the sample `series` (name and labels as written), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_scrape_shows_every_family_and_passes_promtool() {
    let ns = host_with_port("metrics");
    let dir = Scratch::new("metrics");
    let nvod = start(&ns, &dir);
    let _: serde_json::Value = nvod.post(
        "/v1/networks",
        &json!({"vni": 100, "flood": ["10.209.0.2"]}),
    );
    let _: serde_json::Value = nvod.post("/v1/ports", &json!({"name": "c0", "vni": 100}));
    // Traffic into the port: ARP requests for an absent neighbour, flooded to 10.209.0.2.
    let _ = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns.name(),
            "ping",
            "-c",
            "2",
            "-i",
            "0.2",
            "-W",
            "1",
        ])
        .arg("10.0.0.2")
        .output();
    let node: serde_json::Value = nvod.get("/v1/node");
    let text = scrape(&ns);
    let datapath = node["datapath"].as_str().unwrap();
    assert_eq!(
        value(
            &text,
            &format!("nvo_datapath_info{{datapath=\"{datapath}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    let version = node["version"].as_str().unwrap();
    assert_eq!(
        value(&text, &format!("nvo_build_info{{version=\"{version}\"}}")),
        Some(1.0)
    );
    // Every reason of the drop-reason table, from the table itself.
    for reason in nvo_pipeline::DropReason::ALL {
        let series = format!("nvo_drops_total{{reason=\"{}\"}}", reason.name());
        assert!(value(&text, &series).is_some(), "{series} missing:\n{text}");
    }
    assert!(wait_for(Duration::from_secs(5), || {
        let t = scrape(&ns);
        value(&t, "nvo_port_rx_frames_total{port=\"c0\"}").unwrap_or(0.0) > 0.0
            && value(&t, "nvo_network_encap_flood_total{vni=\"100\"}").unwrap_or(0.0) > 0.0
            && value(&t, "nvo_underlay_tx_packets_total").unwrap_or(0.0) > 0.0
    }));
    // Quiet now (c1 down): the scrape shows what GET /v1/counters shows, from the same source.
    ns.ip(&["link", "set", "c1", "down"]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let api: nvo_api::Counters = nvod.get("/v1/counters");
    let text = scrape(&ns);
    for (key, n) in &api.ports["c0"] {
        let series = format!("nvo_port_{key}_total{{port=\"c0\"}}");
        assert_eq!(value(&text, &series), Some(*n as f64), "{series}");
    }
    for (key, n) in &api.networks[&100] {
        let series = format!("nvo_network_{key}_total{{vni=\"100\"}}");
        assert_eq!(value(&text, &series), Some(*n as f64), "{series}");
    }
    for (reason, n) in &api.drops {
        let series = format!("nvo_drops_total{{reason=\"{reason}\"}}");
        assert_eq!(value(&text, &series), Some(*n as f64), "{series}");
    }
    for (series, want) in [
        ("nvo_table_entries{table=\"networks\"}", 1.0),
        ("nvo_table_limit{table=\"networks\"}", 4096.0),
        ("nvo_table_entries{table=\"ports\"}", 1.0),
        (
            "nvo_network_table_entries{vni=\"100\",table=\"flood\"}",
            1.0,
        ),
        (
            "nvo_network_table_limit{vni=\"100\",table=\"static_fdb\"}",
            16384.0,
        ),
        ("nvo_network_info{vni=\"100\",profile=\"vxlan\"}", 1.0),
        ("nvo_port_info{port=\"c0\",vni=\"100\"}", 1.0),
    ] {
        assert_eq!(value(&text, series), Some(want), "{series}:\n{text}");
    }
    // The BGP session to the absent neighbour is in exactly one state, and not established.
    let states: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("nvo_bgp_session_state{neighbor=\"10.209.0.250\""))
        .collect();
    assert_eq!(states.len(), 6, "{text}");
    assert_eq!(states.iter().filter(|l| l.ends_with(" 1")).count(), 1);
    assert!(states
        .iter()
        .any(|l| l.contains("state=\"established\"") && l.ends_with(" 0")));
    // Prometheus' linter: rc 0 and nothing to say.
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus; scripts/setup.sh installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}\n{}{}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_listener_is_read_only_and_bounded() {
    let ns = host_with_port("mbound");
    let dir = Scratch::new("mbound");
    let nvod = start(&ns, &dir);
    let (status, head, body) = http_exchange(
        &ns,
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 405, "{head}\n{body}");
    assert!(head.to_ascii_lowercase().contains("allow: get"), "{head}");
    // Nothing that changes state is reachable: the API's paths are not here.
    let (status, _, _) = http_exchange(
        &ns,
        "POST /v1/networks HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"vni\": 7}\r\n",
    );
    assert!(status == 404 || status == 413, "{status}");
    let (status, _, _) = http_exchange(
        &ns,
        "GET /v1/node HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 404);
    let networks: Vec<serde_json::Value> = nvod.get("/v1/networks");
    assert!(networks.is_empty());
    // No request body: a declared one is refused at once, before any of it is sent.
    let started = Instant::now();
    let (status, _, body) = http_exchange(
        &ns,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n",
    );
    assert_eq!(status, 413, "{body}");
    assert!(started.elapsed() < Duration::from_millis(500));
    // A client that never finishes its header is closed by http_header_timeout_s (1 s).
    let mut slow = http_connect(&ns);
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost:").unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 512];
    let n = slow.read(&mut buf).unwrap_or(0);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(4),
        "closed after {took:?}, read {n} bytes"
    );
    // At the cap (http_max_connections = 4), idle connections make room for a new client.
    let idle: Vec<TcpStream> = (0..10).map(|_| http_connect(&ns)).collect();
    let text = scrape(&ns);
    assert!(text.contains("nvo_build_info"));
    drop(idle);
    // The API is another listener, untouched by all this.
    let _: serde_json::Value = nvod.get("/v1/node");
}

#[test]
fn an_address_that_cannot_be_bound_stops_nvod_with_one_line() {
    let ns = host_with_port("mbind");
    let dir = Scratch::new("mbind");
    let (status, log) = Nvod::start_failing(
        ns.name(),
        &dir.0,
        "10.209.0.1",
        "http_listen = \"192.0.2.99:9477\"\n",
        &[],
    );
    assert!(!status.success());
    assert!(
        log.lines()
            .any(|l| l.contains("http_listen") && l.contains("192.0.2.99:9477")),
        "{log}"
    );
}
