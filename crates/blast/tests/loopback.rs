//! The `nvo-blast` binary end to end over loopback: a receiver and a sender as two processes,
//! as bench/run.py runs them (there, in two namespaces).
//!
//!   nvo-blast send ──UDP, 127.0.0.1, 4 source ports──► nvo-blast recv (127.0.0.1:PORT)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use serde_json::Value;

const BLAST: &str = env!("CARGO_BIN_EXE_nvo-blast");

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", String::from_utf8_lossy(out));
    })
}

#[test]
fn a_sender_and_a_receiver_agree_on_what_crossed() {
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let recv = Command::new(BLAST)
        .args(["recv", "--bind", &bind, "--seconds", "10", "--idle", "0.5"])
        .arg("--json")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(300));
    let send = Command::new(BLAST)
        .args(["send", "--dst", &bind, "--size", "200", "--seconds", "0.5"])
        .args(["--flows", "4", "--batch", "32", "--json"])
        .output()
        .unwrap();
    assert!(send.status.success(), "{send:?}");
    let recv = recv.wait_with_output().unwrap();
    assert!(recv.status.success(), "{recv:?}");
    let (s, r) = (json(&send.stdout), json(&recv.stdout));

    assert_eq!(s["role"], "send");
    assert_eq!(
        (s["size"].as_u64(), s["flows"].as_u64()),
        (Some(200), Some(4))
    );
    let sent = s["packets"].as_u64().unwrap();
    assert!(sent > 1000, "sent only {sent}");
    assert_eq!(s["bytes"].as_u64(), Some(sent * 200));
    assert!(s["seconds"].as_f64().unwrap() >= 0.5);

    assert_eq!(r["role"], "recv");
    assert_eq!(r["end"], "idle");
    let got = r["packets"].as_u64().unwrap();
    assert!(got > 0 && got <= sent, "received {got} of {sent}");
    assert_eq!(r["bytes"].as_u64(), Some(got * 200));
    assert_eq!(r["truncated"].as_u64(), Some(0));
    // The delivered rate is measured over the stream, not the receiver's whole life.
    let seconds = r["seconds"].as_f64().unwrap();
    assert!(seconds > 0.2 && seconds < 2.0, "{seconds} s");
    assert!(r["pps"].as_f64().unwrap() > 0.0);
    assert!(r["mbps"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_receiver_that_gets_nothing_says_so_and_fails() {
    let bind = format!("127.0.0.1:{}", free_port());
    let out = Command::new(BLAST)
        .args(["recv", "--bind", &bind, "--seconds", "1", "--wait", "0.3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("received nothing"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no datagram arrived"));
}

#[test]
fn sending_to_a_closed_port_counts_the_refusals() {
    let dst = format!("127.0.0.1:{}", free_port());
    let out = Command::new(BLAST)
        .args(["send", "--dst", &dst, "--size", "64", "--seconds", "0.2"])
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let s = json(&out.stdout);
    assert!(s["errors"].as_u64().unwrap() > 0, "{s}");
    // Either the refusal itself or a batch the kernel cut short at it.
    let first = s["first_error"].as_str().unwrap().to_lowercase();
    assert!(
        first.contains("refused") || first.contains("closed port"),
        "{first}"
    );
    assert!(s["calls"].as_u64() >= s["errors"].as_u64());
}

#[test]
fn a_bad_size_is_a_usage_error() {
    let out = Command::new(BLAST)
        .args([
            "send",
            "--dst",
            "127.0.0.1:9",
            "--size",
            "70000",
            "--seconds",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("70000"));
}
