//! The web → db policy both policy test files decide on, and the helpers around it.

use std::net::IpAddr;

use nvo_pipeline::policy::{PolicyCommand, PolicyCounters, PolicyReply};
use nvo_pipeline::{Mac, Pipeline};

use super::{ip, VNI};

/// web → db TCP 5432 allowed; db → web UDP 53 allowed (which makes web a selected group too).
pub const WEB_DB: &str = r#"{
  "groups": [{"id": 10, "name": "web", "selector": "app=web"},
             {"id": 20, "name": "db", "selector": "app=db"}],
  "rules": [{"name": "web-db", "from": ["web"], "to": ["db"], "action": "allow",
             "protocol": "tcp", "ports": ["5432"]},
            {"name": "dns-back", "from": ["db"], "to": ["web"], "action": "allow",
             "protocol": "udp", "ports": ["53"]}]
}"#;

/// web's (source, destination) addresses, and db's.
pub const WEB: (&str, &str) = ("10.0.0.1", "10.0.0.2");
pub const DB: (&str, &str) = ("10.0.0.2", "10.0.0.1");

/// An IPv4 TCP segment (5 bytes of payload) from `src` to `dst`.
pub fn tcp(dst: Mac, src: Mac, ips: (&str, &str), ports: (u16, u16)) -> Vec<u8> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (ip(ips.0), ip(ips.1)) else {
        panic!("v4 only")
    };
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(src.0, dst.0)
        .ipv4(s.octets(), d.octets(), 64)
        .tcp(ports.0, ports.1, 1, 1000)
        .write(&mut v, b"hello")
        .unwrap();
    v
}

/// The policy counters of network [`VNI`].
pub fn counters(p: &mut Pipeline) -> PolicyCounters {
    match p.policy_command(PolicyCommand::Show(VNI)).unwrap() {
        PolicyReply::Counters(c) => c,
        other => panic!("{other:?}"),
    }
}
