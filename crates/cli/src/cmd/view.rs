//! Text views of the API's answers: what `nvo` prints without `-o json`. Listings are aligned
//! tables with one row per object; a single object is a key/value listing.

use std::net::IpAddr;

use nvo_api::{Bum, Counters, FdbEntry, Network, NodeInfo, Origin, Port, PortKind};

use crate::table::{list, pairs, yes_no, Table};

fn bum(b: &Bum) -> String {
    match b {
        Bum::HeadEnd => "head-end".to_owned(),
        Bum::Multicast { group } => format!("multicast {group}"),
    }
}

/// `nvo node`.
pub fn node(n: &NodeInfo) -> Table {
    let mut offloads = Vec::new();
    if n.offloads.gro {
        offloads.push("gro");
    }
    if n.offloads.gso {
        offloads.push("gso");
    }
    pairs([
        ("node_id", n.node_id.to_string()),
        ("locator", n.locator.to_string()),
        ("vxlan_port", n.vxlan_port.to_string()),
        ("underlay_mtu", n.underlay_mtu.to_string()),
        (
            "offloads",
            if offloads.is_empty() {
                "none".to_owned()
            } else {
                offloads.join(" ")
            },
        ),
        ("version", n.version.clone()),
    ])
}

/// `nvo network list`.
pub fn networks(nets: &[Network]) -> Table {
    let mut t = Table::new(&[
        "VNI", "MTU", "LEARNING", "BUM", "FLOOD", "PORTS", "LEARNED", "STATIC",
    ])
    .right(0)
    .right(1)
    .right(6)
    .right(7);
    for n in nets {
        t.row([
            n.vni.to_string(),
            n.mtu.to_string(),
            yes_no(n.learning),
            bum(&n.bum),
            list(&n.flood),
            list(&n.ports),
            n.learned.to_string(),
            n.static_entries.to_string(),
        ]);
    }
    t
}

/// `nvo network show` and `add`.
pub fn network(n: &Network) -> Table {
    pairs([
        ("vni", n.vni.to_string()),
        ("mtu", n.mtu.to_string()),
        ("learning", yes_no(n.learning)),
        ("bum", bum(&n.bum)),
        ("flood", list(&n.flood)),
        ("ports", list(&n.ports)),
        ("max_learned", n.max_learned.to_string()),
        ("ageing", format!("{} s", n.ageing_s)),
        ("learned", n.learned.to_string()),
        ("static", n.static_entries.to_string()),
    ])
}

/// `nvo port list` and `add`.
pub fn ports(ports: &[Port]) -> Table {
    let mut t = Table::new(&["NAME", "VNI", "KIND", "UP"]).right(1);
    for p in ports {
        let kind = match p.kind {
            PortKind::Veth => "veth",
            PortKind::Tap => "tap",
        };
        t.row([
            p.name.clone(),
            p.vni.to_string(),
            kind.to_owned(),
            yes_no(p.up),
        ]);
    }
    t
}

/// `nvo fdb show`: local entries name their port, remote ones the VTEP.
pub fn fdb(entries: &[FdbEntry]) -> Table {
    let mut t = Table::new(&["MAC", "DESTINATION", "ORIGIN", "AGE"]).right(3);
    for e in entries {
        let dest = match (&e.port, &e.remote) {
            (Some(p), _) => format!("port {p}"),
            (None, Some(r)) => format!("remote {r}"),
            (None, None) => "-".to_owned(),
        };
        let (origin, age) = match e.origin {
            Origin::Static => ("static", "-".to_owned()),
            Origin::Learned => ("learned", format!("{}s", e.age_s)),
        };
        t.row([e.mac.clone(), dest, origin.to_owned(), age]);
    }
    t
}

/// `nvo flood list`.
pub fn flood(remotes: &[IpAddr]) -> Table {
    let mut t = Table::new(&["REMOTE"]);
    for r in remotes {
        t.row([r.to_string()]);
    }
    t
}

/// `nvo counters`: one row per counter, grouped by what it counts; zeros hidden unless `all`.
pub fn counters(c: &Counters, all: bool) -> String {
    let mut t = Table::new(&["SCOPE", "NAME", "COUNTER", "VALUE"]).right(3);
    let mut hidden = 0usize;
    let mut add = |scope: &str, name: String, counter: &str, value: u64| {
        if value == 0 && !all {
            hidden += 1;
        } else {
            t.row([
                scope.to_owned(),
                name,
                counter.to_owned(),
                value.to_string(),
            ]);
        }
    };
    for (k, v) in &c.underlay {
        add("underlay", "-".to_owned(), k, *v);
    }
    for (vni, counters) in &c.networks {
        for (k, v) in counters {
            add("network", vni.to_string(), k, *v);
        }
    }
    for (port, counters) in &c.ports {
        for (k, v) in counters {
            add("port", port.clone(), k, *v);
        }
    }
    for (reason, v) in &c.drops {
        add("drop", "-".to_owned(), reason, *v);
    }
    let mut out = if t.is_empty() {
        String::new()
    } else {
        t.to_string()
    };
    if hidden > 0 {
        out.push_str(&format!(
            "({hidden} zero counters hidden; --all shows them)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn net() -> Network {
        Network {
            vni: 100,
            mtu: 1450,
            learning: true,
            bum: Bum::HeadEnd,
            max_learned: 4096,
            ageing_s: 300,
            flood: vec!["10.100.0.2".parse().unwrap(), "10.100.0.3".parse().unwrap()],
            ports: vec!["c-red1".into()],
            learned: 2,
            static_entries: 0,
        }
    }

    #[test]
    fn network_list_is_one_aligned_row_per_network() {
        let mut other = net();
        other.vni = 200;
        other.learning = false;
        other.bum = Bum::Multicast {
            group: "239.1.1.1".parse().unwrap(),
        };
        other.flood.clear();
        other.ports.clear();
        let text = networks(&[net(), other]).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("VNI   MTU  LEARNING  BUM"), "{text}");
        assert_eq!(lines[1], "100  1450  yes       head-end             10.100.0.2,10.100.0.3  c-red1        2       0");
        assert!(
            lines[2].starts_with("200  1450  no        multicast 239.1.1.1  -  "),
            "{text}"
        );
        // Right-aligned numbers line up on their last digit.
        assert_eq!(lines[0].find("STATIC").map(|i| i + 6), Some(lines[1].len()));
    }

    #[test]
    fn fdb_names_ports_and_remotes() {
        let entries = vec![
            FdbEntry {
                mac: "02:00:00:64:00:01".into(),
                port: Some("c-red1".into()),
                remote: None,
                origin: Origin::Learned,
                age_s: 3,
            },
            FdbEntry {
                mac: "02:00:00:64:00:02".into(),
                port: None,
                remote: Some("10.100.0.2".parse().unwrap()),
                origin: Origin::Static,
                age_s: 0,
            },
        ];
        assert_eq!(
            fdb(&entries).to_string(),
            "MAC                DESTINATION        ORIGIN   AGE\n\
             02:00:00:64:00:01  port c-red1        learned   3s\n\
             02:00:00:64:00:02  remote 10.100.0.2  static     -\n"
        );
    }

    #[test]
    fn counters_hide_zeros_unless_asked() {
        let mut c = Counters::default();
        c.drops.insert("no_network".into(), 0);
        c.drops.insert("mtu_exceeded".into(), 2);
        c.networks.insert(
            100,
            BTreeMap::from([("rx_frames".into(), 5), ("tx_frames".into(), 0)]),
        );
        c.underlay.insert("rx_packets".into(), 9);
        let text = counters(&c, false);
        assert_eq!(
            text,
            "SCOPE     NAME  COUNTER       VALUE\n\
             underlay  -     rx_packets        9\n\
             network   100   rx_frames         5\n\
             drop      -     mtu_exceeded      2\n\
             (2 zero counters hidden; --all shows them)\n"
        );
        let all = counters(&c, true);
        assert_eq!(all.lines().count(), 6);
        assert!(all.contains("no_network"));
        assert_eq!(counters(&Counters::default(), false), "");
    }

    #[test]
    fn node_and_ports() {
        let n = NodeInfo {
            node_id: 1,
            locator: "10.100.0.1".parse().unwrap(),
            vxlan_port: 4789,
            underlay_mtu: 1500,
            offloads: nvo_api::Offloads {
                gro: true,
                gso: false,
            },
            version: "0.1.0".into(),
        };
        let text = node(&n).to_string();
        assert!(text.contains("locator       10.100.0.1\n"), "{text}");
        assert!(text.contains("offloads      gro\n"), "{text}");
        let p = Port {
            name: "c-red1".into(),
            vni: 100,
            kind: PortKind::Veth,
            up: true,
        };
        assert_eq!(
            ports(&[p]).to_string(),
            "NAME    VNI  KIND  UP\nc-red1  100  veth  yes\n"
        );
        assert_eq!(flood(&[]).to_string(), "REMOTE\n");
    }
}
