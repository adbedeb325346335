//! Control operations: every refusal, with its error, changes nothing; views show the tables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_pipeline::{
    BumMode, FdbDest, FlushScope, Limits, Mac, NetworkSpec, Pipeline, PortId, TableError, Vni,
};

fn small() -> Limits {
    Limits {
        max_networks: 2,
        max_ports: 3,
        max_flood: 2,
        max_static_fdb: 2,
        max_learned_fdb: 5000,
        ..Limits::default()
    }
}

#[test]
fn invalid_network_specs_are_refused() {
    let mut p = Pipeline::new(small());
    let base = NetworkSpec::new(VNI);
    let cases = [
        (
            NetworkSpec {
                vni: Vni(0),
                ..base
            },
            TableError::InvalidVni(0),
        ),
        (
            NetworkSpec {
                vni: Vni(1 << 24),
                ..base
            },
            TableError::InvalidVni(1 << 24),
        ),
        (
            NetworkSpec { mtu: 67, ..base },
            TableError::InvalidMtu {
                mtu: 67,
                min: 68,
                max: 65481,
            },
        ),
        (
            NetworkSpec { mtu: 65482, ..base },
            TableError::InvalidMtu {
                mtu: 65482,
                min: 68,
                max: 65481,
            },
        ),
        (
            NetworkSpec {
                ageing: Duration::ZERO,
                ..base
            },
            TableError::InvalidAgeing(Duration::ZERO),
        ),
        (
            NetworkSpec {
                max_learned: 5001,
                ..base
            },
            TableError::InvalidMaxLearned {
                requested: 5001,
                limit: 5000,
            },
        ),
        (
            NetworkSpec {
                bum: BumMode::Multicast(ip("192.0.2.1")),
                ..base
            },
            TableError::InvalidGroup(ip("192.0.2.1")),
        ),
    ];
    for (spec, err) in cases {
        assert_eq!(p.add_network(spec), Err(err));
    }
    assert!(p.networks().is_empty());
    p.add_network(NetworkSpec {
        max_learned: 5000,
        bum: BumMode::Multicast(ip("ff0e::1")),
        ..base
    })
    .unwrap();
}

#[test]
fn network_table_refusals() {
    let mut p = Pipeline::new(small());
    p.add_network(NetworkSpec::new(Vni(1))).unwrap();
    assert_eq!(
        p.add_network(NetworkSpec::new(Vni(1))),
        Err(TableError::NetworkExists(Vni(1)))
    );
    p.add_network(NetworkSpec::new(Vni(2))).unwrap();
    assert_eq!(
        p.add_network(NetworkSpec::new(Vni(3))),
        Err(TableError::TableFull {
            table: "networks",
            limit: 2
        })
    );
    p.add_port(P1, Vni(1)).unwrap();
    p.add_port(P2, Vni(1)).unwrap();
    assert_eq!(
        p.remove_network(Vni(1)),
        Err(TableError::NetworkHasPorts {
            vni: Vni(1),
            ports: 2
        })
    );
    assert_eq!(
        p.remove_network(Vni(9)),
        Err(TableError::NoSuchNetwork(Vni(9)))
    );
    assert_eq!(p.network(Vni(1)).unwrap().ports, [P1, P2]);
    p.remove_port(P1).unwrap();
    p.remove_port(P2).unwrap();
    p.remove_network(Vni(1)).unwrap();
    assert_eq!(p.networks().len(), 1);
}

#[test]
fn port_table_refusals() {
    let mut p = Pipeline::new(small());
    p.add_network(NetworkSpec::new(Vni(1))).unwrap();
    assert_eq!(
        p.add_port(P1, Vni(5)),
        Err(TableError::NoSuchNetwork(Vni(5)))
    );
    assert_eq!(
        p.port_network(P1),
        None,
        "a refused add_port leaves nothing behind"
    );
    p.add_port(P1, Vni(1)).unwrap();
    assert_eq!(
        p.add_port(P1, Vni(1)),
        Err(TableError::PortExists {
            port: P1,
            vni: Vni(1)
        })
    );
    p.add_port(P2, Vni(1)).unwrap();
    p.add_port(P3, Vni(1)).unwrap();
    assert_eq!(
        p.add_port(PortId(4), Vni(1)),
        Err(TableError::TableFull {
            table: "ports",
            limit: 3
        })
    );
    assert_eq!(
        p.remove_port(PortId(4)),
        Err(TableError::NoSuchPort(PortId(4)))
    );
    assert_eq!(p.port_network(P3), Some(Vni(1)));
}

#[test]
fn fdb_refusals() {
    let mut p = Pipeline::new(small());
    p.add_network(NetworkSpec::new(Vni(1))).unwrap();
    p.add_network(NetworkSpec::new(Vni(2))).unwrap();
    p.add_port(P1, Vni(1)).unwrap();
    p.add_port(P2, Vni(2)).unwrap();
    let v1 = Vni(1);
    let cases = [
        (
            Vni(7),
            mac(1),
            FdbDest::Port(P1),
            TableError::NoSuchNetwork(Vni(7)),
        ),
        (
            v1,
            Mac::BROADCAST,
            FdbDest::Port(P1),
            TableError::InvalidMac(Mac::BROADCAST),
        ),
        (
            v1,
            Mac::ZERO,
            FdbDest::Port(P1),
            TableError::InvalidMac(Mac::ZERO),
        ),
        (v1, mac(1), FdbDest::Port(P3), TableError::NoSuchPort(P3)),
        (
            v1,
            mac(1),
            FdbDest::Port(P2),
            TableError::PortInOtherNetwork {
                port: P2,
                vni: v1,
                port_vni: Vni(2),
            },
        ),
        (
            v1,
            mac(1),
            FdbDest::Remote(ip("239.0.0.1")),
            TableError::InvalidRemote(ip("239.0.0.1")),
        ),
        (
            v1,
            mac(1),
            FdbDest::Remote(ip("::")),
            TableError::InvalidRemote(ip("::")),
        ),
    ];
    for (vni, m, dest, err) in cases {
        assert_eq!(p.fdb_add_static(vni, m, dest), Err(err));
    }
    assert!(p.fdb_entries(v1, Instant::now()).unwrap().is_empty());
    p.fdb_add_static(v1, mac(1), FdbDest::Port(P1)).unwrap();
    p.fdb_add_static(v1, mac(2), FdbDest::Remote(r1())).unwrap();
    // Replacing is allowed at the limit; a third entry is not.
    p.fdb_add_static(v1, mac(2), FdbDest::Remote(r2())).unwrap();
    assert_eq!(
        p.fdb_add_static(v1, mac(3), FdbDest::Remote(r1())),
        Err(TableError::TableFull {
            table: "static fdb",
            limit: 2
        })
    );
    assert_eq!(
        p.fdb_remove(v1, mac(3)),
        Err(TableError::NoSuchEntry {
            vni: v1,
            mac: mac(3)
        })
    );
    assert_eq!(
        p.fdb_flush(Vni(7), FlushScope::All),
        Err(TableError::NoSuchNetwork(Vni(7)))
    );
    assert_eq!(p.fdb_flush(v1, FlushScope::Learned), Ok(0));
    p.fdb_remove(v1, mac(1)).unwrap();
    assert_eq!(
        p.fdb_entries(v1, Instant::now()).unwrap()[0].dest,
        FdbDest::Remote(r2())
    );
}

#[test]
fn flood_list_refusals() {
    let mut p = Pipeline::new(small());
    p.add_network(NetworkSpec::new(VNI)).unwrap();
    for bad in ["0.0.0.0", "255.255.255.255", "224.0.0.1", "ff02::1", "::"] {
        assert_eq!(
            p.flood_add(VNI, ip(bad)),
            Err(TableError::InvalidRemote(ip(bad)))
        );
    }
    p.flood_add(VNI, r1()).unwrap();
    assert_eq!(
        p.flood_add(VNI, r1()),
        Err(TableError::FloodExists {
            vni: VNI,
            remote: r1()
        })
    );
    p.flood_add(VNI, ip("2001:db8::1")).unwrap();
    assert_eq!(
        p.flood_add(VNI, r2()),
        Err(TableError::TableFull {
            table: "flood list",
            limit: 2
        })
    );
    assert_eq!(
        p.flood_remove(VNI, r2()),
        Err(TableError::NoSuchFlood {
            vni: VNI,
            remote: r2()
        })
    );
    assert_eq!(
        p.flood_add(Vni(9), r2()),
        Err(TableError::NoSuchNetwork(Vni(9)))
    );
    assert_eq!(p.flood_list(VNI).unwrap(), [r1(), ip("2001:db8::1")]);
}

#[test]
fn error_messages_name_the_value_and_the_fix() {
    let msgs = [
        TableError::NetworkHasPorts {
            vni: Vni(100),
            ports: 2,
        }
        .to_string(),
        TableError::InvalidVni(0).to_string(),
        TableError::TableFull {
            table: "flood list",
            limit: 256,
        }
        .to_string(),
        TableError::NoSuchEntry {
            vni: Vni(5),
            mac: mac(1),
        }
        .to_string(),
    ];
    assert_eq!(
        msgs[0],
        "network 100 still has 2 port(s) attached; remove them first"
    );
    assert_eq!(msgs[1], "vni 0 is out of range; a vni is 1..=16777215");
    assert!(msgs[2].contains("flood list") && msgs[2].contains("256"));
    assert!(msgs[3].contains("02:00:00:00:00:01"));
    for m in msgs {
        assert_eq!(m, m.to_lowercase());
    }
}

#[test]
fn network_view_json() {
    let mut p = setup();
    p.fdb_add_static(VNI, mac(9), FdbDest::Port(P2)).unwrap();
    let json = serde_json::to_value(p.network(VNI).unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "vni": 100, "mtu": 1450, "learning": true, "learn_ports": true,
            "learn_tunnels": true, "bum": {"mode": "head_end"}, "max_learned": 4096, "ageing_s": 300, "flood": ["192.0.2.11", "192.0.2.12"],
            "ports": [1, 2, 3], "learned": 0, "static": 1, "profile": 0,
            "accept_remotes": "known"
        })
    );
    let entries = serde_json::to_value(p.fdb_entries(VNI, Instant::now()).unwrap()).unwrap();
    assert_eq!(
        entries,
        serde_json::json!([{"mac": "02:00:00:00:00:09", "port": 2, "origin": "static", "age_s": 0}])
    );
}
