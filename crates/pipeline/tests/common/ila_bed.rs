//! The two-host ILA test bed of tests/ila.rs (IPv6 tenants) and tests/ila4.rs (IPv4 tenants):
//! a pipeline per host with its locator, ILA networks with the gateway MAC [`GW`], one port
//! each, and the same mappings on every host (a static control plane, as `nvo lab` installs).
#![allow(clippy::unwrap_used, dead_code)]

use std::time::Instant;

use nvo_pipeline::{Action, Actions, IpFamilies, Limits, Mac, NetworkSpec, Pipeline, PortId, Vni};

use super::ip;

/// The gateway MAC of every ILA network of the bed.
pub const GW: Mac = Mac([0x02, 0x6e, 0x76, 0, 0, 100]);
pub const C1: Mac = Mac([0x02, 0, 0, 0, 0, 1]);
pub const C2: Mac = Mac([0x02, 0, 0, 0, 0, 2]);
pub const C3: Mac = Mac([0x02, 0, 0, 0, 0, 3]);

/// A bare host: its locator (`"fd00:a::"`), no network yet.
pub fn ila_host(locator: &str) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.set_ila_locator(Some(locator.parse().unwrap()));
    p
}

/// Adds ILA network `vni` (families `families`, None for the default) on `ports`, with
/// `mappings` (prefix, prefix length, an address of the locator it lives at).
pub fn ila_network(
    p: &mut Pipeline,
    (vni, families): (Vni, Option<IpFamilies>),
    ports: &[PortId],
    mappings: &[(&str, u8, &str)],
) {
    let spec = NetworkSpec {
        l3_gateway: Some(GW),
        ..NetworkSpec::new(vni)
    };
    let spec = match families {
        Some(l3_families) => NetworkSpec {
            l3_families,
            ..spec
        },
        None => spec,
    };
    p.add_network(spec).unwrap();
    p.set_ila(vni).unwrap();
    for &port in ports {
        p.add_port(port, vni).unwrap();
    }
    for &(prefix, len, locator) in mappings {
        p.route_add(vni, ip(prefix), len, ip(locator)).unwrap();
    }
}

/// `packet` (IPv4 or IPv6, by its version nibble) in an Ethernet frame `src` → `dst`.
pub fn framed(dst: Mac, src: Mac, packet: &[u8]) -> Vec<u8> {
    let ethertype: [u8; 2] = match packet.first().map(|b| b >> 4) {
        Some(4) => [0x08, 0x00],
        _ => [0x86, 0xdd],
    };
    let mut f = dst.0.to_vec();
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&ethertype);
    f.extend_from_slice(packet);
    f
}

/// The frame of `packet` from `port` (sender `mac`) to the gateway: its actions.
pub fn send(p: &mut Pipeline, port: PortId, mac: Mac, packet: &[u8]) -> Vec<Action> {
    let mut a = Actions::new();
    p.from_port(port, &framed(GW, mac, packet), Instant::now(), &mut a);
    a.as_slice().to_vec()
}
