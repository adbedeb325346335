//! ARP/ND snooping and suppression against scapy: tests/vectors/suppress.json, written by
//! tests/vectors/suppress_vectors.py, gives each request host H1 sends on port 1, the entry the
//! neighbour table holds, the exact reply a suppressing VTEP sends back (or none), and what the
//! request teaches the table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::time::Instant;

use common::scapy::vector_path;
use common::*;
use nvo_pipeline::{Action, Actions, EvpnChange, Mac, Pipeline};

struct Vector {
    name: String,
    frame: Vec<u8>,
    neighbor: Option<(IpAddr, Mac)>,
    reply: Option<Vec<u8>>,
    snooped: Option<IpAddr>,
}

impl Vector {
    /// A request for a peer's address (not an announcement, probe or DAD): what suppression
    /// answers, or counts as flooded.
    fn asks(&self) -> bool {
        self.reply.is_some() || self.name.ends_with("unknown_target")
    }

    fn is_nd(&self) -> bool {
        self.name.starts_with("n")
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn entry(v: &serde_json::Value) -> Option<(IpAddr, Mac)> {
    let ip = v.get("ip")?.as_str()?.parse().unwrap();
    let mac = v.get("mac")?.as_str()?.parse().unwrap();
    Some((ip, mac))
}

fn vectors() -> Vec<Vector> {
    let path = vector_path().join("suppress.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(file["source"].as_str().unwrap().starts_with("scapy "));
    let vectors: Vec<Vector> = file["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| Vector {
            name: v["name"].as_str().unwrap().to_owned(),
            frame: unhex(v["frame"].as_str().unwrap()),
            neighbor: entry(&v["neighbor"]),
            reply: v["reply"].as_str().map(unhex),
            snooped: entry(&v["snooped"]).map(|(ip, mac)| {
                assert_eq!(mac, H1, "{}: snooped for H1 only", v["name"]);
                ip
            }),
        })
        .collect();
    assert!(vectors.len() >= 10, "{}: too few vectors", path.display());
    vectors
}

/// The requester, on port 1.
const H1: Mac = Mac([2, 0, 0, 0, 0, 1]);

/// The standard setup, suppression as asked, the vector's neighbour installed by EVPN, and the
/// vector's frame sent from port 1.
fn run(v: &Vector, suppress: bool) -> (Pipeline, Actions) {
    let mut p = setup();
    p.set_arp_suppression(VNI, suppress).unwrap();
    if let Some((ip, mac)) = v.neighbor {
        let done = p.evpn_apply(&[EvpnChange::NeighSet { vni: VNI, ip, mac }]);
        assert_eq!((done.applied, done.refused), (1, 0), "{}", v.name);
    }
    let mut actions = Actions::new();
    p.from_port(P1, &v.frame, Instant::now(), &mut actions);
    (p, actions)
}

fn flooded() -> Vec<Action> {
    vec![deliver(P2), deliver(P3), encap(r1(), VNI), encap(r2(), VNI)]
}

/// The IPs the local hosts report for H1.
fn h1_ips(p: &Pipeline) -> Vec<IpAddr> {
    let hosts = p.local_hosts().hosts;
    let h1 = hosts
        .iter()
        .find(|h| h.mac == H1)
        .expect("H1 is a local host");
    assert_eq!(h1.port, P1);
    h1.ips.clone()
}

#[test]
fn replies_are_scapys_bytes_and_the_rest_floods() {
    for v in vectors() {
        let (p, actions) = run(&v, true);
        let net = p.counters().networks[&VNI];
        let suppressed = (net.arp_suppressed, net.nd_suppressed);
        match &v.reply {
            Some(reply) => {
                assert_eq!(
                    actions.as_slice(),
                    [Action::Reply {
                        port: P1,
                        len: reply.len()
                    }],
                    "{}",
                    v.name
                );
                assert_eq!(&p.scratch()[..reply.len()], &reply[..], "{}", v.name);
                let want = if v.is_nd() { (0, 1) } else { (1, 0) };
                assert_eq!(suppressed, want, "{}", v.name);
                assert_eq!((net.arp_flooded, net.nd_flooded), (0, 0), "{}", v.name);
            }
            None => {
                assert_eq!(plain(&actions), flooded(), "{}", v.name);
                assert_eq!(suppressed, (0, 0), "{}", v.name);
                let flooded = u64::from(v.asks());
                let want = if v.is_nd() {
                    (0, flooded)
                } else {
                    (flooded, 0)
                };
                assert_eq!((net.arp_flooded, net.nd_flooded), want, "{}", v.name);
            }
        }
        let want: Vec<IpAddr> = v.snooped.into_iter().collect();
        assert_eq!(h1_ips(&p), want, "{}: snooped", v.name);
    }
}

#[test]
fn without_suppression_every_request_floods_and_is_still_snooped() {
    for v in vectors() {
        let (p, actions) = run(&v, false);
        assert_eq!(plain(&actions), flooded(), "{}", v.name);
        let net = p.counters().networks[&VNI];
        assert_eq!(
            (net.arp_suppressed, net.nd_suppressed),
            (0, 0),
            "{}",
            v.name
        );
        let flooded = u64::from(v.asks());
        let want = if v.is_nd() {
            (0, flooded)
        } else {
            (flooded, 0)
        };
        assert_eq!((net.arp_flooded, net.nd_flooded), want, "{}", v.name);
        let want: Vec<IpAddr> = v.snooped.into_iter().collect();
        assert_eq!(h1_ips(&p), want, "{}: snooped", v.name);
    }
}

/// The committed vectors are what the script writes now: they change only with it.
#[test]
fn vectors_are_what_the_script_writes() {
    common::scapy::assert_script_writes("suppress_vectors.py", "suppress.json");
}
