//! Text views of the API's answers: what `nvo` prints without `-o json`. Listings are aligned
//! tables with one row per object; a single object is a key/value listing, except a profile,
//! shown as the TOML `nvo profile add` reads.

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_api::{
    Bum, Counters, FdbEntry, KeyBinding, Network, NodeInfo, Origin, Port, PortKind, PortOffloads,
    ProfileInfo, ProfileSpec, RouteSpec,
};
use nvo_encap::spec::HeaderLenSpec;

use crate::table::{list, pairs, yes_no, Table};

fn bum(b: &Bum) -> String {
    match b {
        Bum::HeadEnd => "head-end".to_owned(),
        Bum::Multicast { group } => format!("multicast {group}"),
        Bum::Overlay { node } => format!("overlay tree {node}"),
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
        ("datapath", n.datapath.clone()),
        ("datapath_reason", n.datapath_reason.clone()),
        ("relay", n.relay.clone()),
        ("version", n.version.clone()),
        (
            "http_listen",
            n.http_listen
                .map_or_else(|| "off".to_owned(), |a| a.to_string()),
        ),
    ])
}

/// A network's profile name; an nvod from before profiles sends none, and spoke only VXLAN.
fn encap_name(n: &Network) -> &str {
    if n.encap.is_empty() {
        "vxlan"
    } else {
        &n.encap
    }
}

/// Profile parameters as `k=v,k=v`, or "-".
fn params(p: &BTreeMap<String, u64>) -> String {
    let items: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
    list(&items)
}

/// `nvo network list`: the profile with its parameters in brackets, `vxlan-gbp(group=100)`,
/// and an L3 network marked ` l3` after it.
pub fn networks(nets: &[Network]) -> Table {
    let mut t = Table::new(&[
        "VNI", "ENCAP", "MTU", "LEARNING", "BUM", "FLOOD", "PORTS", "LEARNED", "STATIC",
    ])
    .right(0)
    .right(2)
    .right(7)
    .right(8);
    for n in nets {
        let mut encap = if n.params.is_empty() {
            encap_name(n).to_owned()
        } else {
            format!("{}({})", encap_name(n), params(&n.params))
        };
        if n.l3 {
            encap.push_str(" l3");
        }
        t.row([
            n.vni.to_string(),
            encap,
            n.mtu.to_string(),
            learning_short(n),
            bum(&n.bum),
            list(&n.flood),
            list(&n.ports),
            n.learned.to_string(),
            n.static_entries.to_string(),
        ]);
    }
    t
}

/// The list's LEARNING column: yes (from ports and tunnels), no, or the one it learns from.
fn learning_short(n: &Network) -> String {
    match (n.learn_ports, n.learn_tunnels) {
        (true, true) => "yes",
        (true, false) => "ports",
        (false, true) => "tunnels",
        (false, false) => "no",
    }
    .to_owned()
}

/// `nvo network show` and `add`; an L3 network adds its gateway MAC and its routes, one a
/// line.
pub fn network(n: &Network) -> Table {
    let mut items = vec![
        ("vni", n.vni.to_string()),
        ("encap", encap_name(n).to_owned()),
        ("params", params(&n.params)),
        ("l3", yes_no(n.l3)),
    ];
    if n.l3 {
        items.push((
            "gateway_mac",
            n.gateway_mac.clone().unwrap_or_else(|| "-".into()),
        ));
        let routes: Vec<String> = n.routes.iter().map(route).collect();
        match routes.split_first() {
            None => items.push(("routes", "-".to_owned())),
            Some((first, rest)) => {
                items.push(("routes", first.clone()));
                items.extend(rest.iter().map(|r| ("", r.clone())));
            }
        }
    }
    items.extend([
        ("mtu", n.mtu.to_string()),
        (
            "learning",
            format!(
                "ports {}, tunnels {}",
                yes_no(n.learn_ports),
                yes_no(n.learn_tunnels)
            ),
        ),
        ("bum", bum(&n.bum)),
        ("flood", list(&n.flood)),
        ("ports", list(&n.ports)),
        ("max_learned", n.max_learned.to_string()),
        ("per_port", n.max_learned_per_port.to_string()),
        ("per_remote", n.max_learned_per_remote.to_string()),
        (
            "accept",
            match n.accept_remotes {
                nvo_api::AcceptRemotes::Known => "known remotes",
                nvo_api::AcceptRemotes::Any => "any remote",
            }
            .to_owned(),
        ),
        ("ageing", format!("{} s", n.ageing_s)),
        ("learned", n.learned.to_string()),
        ("static", n.static_entries.to_string()),
    ]);
    pairs(items)
}

/// One route on one line: `10.0.0.0/24 via 192.0.2.2`.
fn route(r: &RouteSpec) -> String {
    format!("{} via {}", r.prefix, r.remote)
}

/// `nvo route list`.
pub fn routes(routes: &[RouteSpec]) -> Table {
    let mut t = Table::new(&["PREFIX", "REMOTE"]);
    for r in routes {
        t.row([r.prefix.clone(), r.remote.to_string()]);
    }
    t
}

/// A key's SPI and SI when the profile is vxlan-gpe-nsh, whose 4-byte key is the NSH service
/// path header's SPI (3 bytes) and SI (1 byte), RFC 8300 section 2.3.
fn spi_si(profile: &str, key: &str) -> Option<(u32, u8)> {
    if profile != nvo_encap::builtin::names::VXLAN_GPE_NSH || key.len() != 8 {
        return None;
    }
    let value = u32::from_str_radix(key, 16).ok()?;
    Some((value >> 8, (value & 0xff) as u8))
}

/// `nvo profile keys`: each key and where it leads; vxlan-gpe-nsh's keys with their SPI and SI.
pub fn keys(profile: &str, keys: &[KeyBinding]) -> Table {
    let nsh = profile == nvo_encap::builtin::names::VXLAN_GPE_NSH;
    let mut t = if nsh {
        Table::new(&["KEY", "SPI", "SI", "DESTINATION"])
            .right(1)
            .right(2)
    } else {
        Table::new(&["KEY", "DESTINATION"])
    };
    for k in keys {
        let dest = match (k.local, k.forward) {
            (Some(vni), _) => format!("local network {vni}"),
            (None, Some(ip)) => format!("forward {ip}"),
            (None, None) => "-".to_owned(),
        };
        let mut row = vec![k.key.clone()];
        if nsh {
            match spi_si(profile, &k.key) {
                Some((spi, si)) => row.extend([spi.to_string(), si.to_string()]),
                None => row.extend(["-".to_owned(), "-".to_owned()]),
            }
        }
        row.push(dest);
        t.row(row);
    }
    t
}

/// A profile's outer transport: `udp 4789` or `ip 47`.
fn transport(p: &ProfileSpec) -> String {
    match (p.udp_port, p.ip_protocol) {
        (Some(port), _) => format!("udp {port}"),
        (None, Some(proto)) => format!("ip {proto}"),
        (None, None) => "-".to_owned(),
    }
}

/// A profile's header length in bytes; `8+` when it varies (options, as Geneve's).
fn header_len(p: &ProfileSpec) -> String {
    match p.header_len {
        Some(HeaderLenSpec::Fixed(len)) => len.to_string(),
        Some(HeaderLenSpec::Field(f)) => format!("{}+", f.base),
        None => {
            let digits = p.template.chars().filter(|c| !c.is_whitespace()).count();
            (digits / 2).to_string()
        }
    }
}

/// `nvo profile list`.
pub fn profiles(profiles: &[ProfileInfo]) -> Table {
    let mut t = Table::new(&["NAME", "KIND", "TRANSPORT", "HEADER", "PAYLOAD", "PARAMS"]).right(3);
    for p in profiles {
        let names: Vec<&str> = p.spec.params.iter().map(|q| q.name.as_str()).collect();
        t.row([
            p.spec.name.clone(),
            if p.builtin { "built-in" } else { "user" }.to_owned(),
            transport(&p.spec),
            header_len(&p.spec),
            p.spec.payload.to_string(),
            list(&names),
        ]);
    }
    t
}

/// `nvo profile show` and `add`: the profile as TOML, the form `nvo profile add` reads, so a
/// built-in can be copied as the start of a new profile.
pub fn profile(p: &ProfileInfo) -> String {
    let kind = if p.builtin {
        "built into nvod"
    } else {
        "user-defined"
    };
    let body = toml::to_string(&p.spec).unwrap_or_else(|e| {
        format!(
            "# (cannot be shown as TOML: {e})
"
        )
    });
    format!(
        "# profile {}, {kind}
{body}",
        p.spec.name
    )
}

/// A port's offload settings as one cell, `no-large-frames,tso=off,gro=on`; "-" when it asked
/// for none (nvod's defaults).
fn offloads(o: Option<&PortOffloads>) -> String {
    let Some(o) = o else {
        return "-".to_owned();
    };
    let mut items = Vec::new();
    match o.large_frames {
        Some(true) => items.push("large-frames".to_owned()),
        Some(false) => items.push("no-large-frames".to_owned()),
        None => {}
    }
    for (name, value) in [
        ("tso", o.tso),
        ("gso", o.gso),
        ("gro", o.gro),
        ("tx-checksum", o.tx_checksum),
    ] {
        if let Some(on) = value {
            items.push(format!("{name}={}", if on { "on" } else { "off" }));
        }
    }
    list(&items)
}

/// `nvo port list` and `add`; an OFFLOADS column only when some port set one.
pub fn ports(ports: &[Port]) -> Table {
    let any_offloads = ports
        .iter()
        .any(|p| p.offloads.is_some_and(|o| o != PortOffloads::default()));
    let mut header = vec!["NAME", "VNI", "KIND", "UP"];
    if any_offloads {
        header.push("OFFLOADS");
    }
    let mut t = Table::new(&header).right(1);
    for p in ports {
        let kind = match p.kind {
            PortKind::Veth => "veth",
            PortKind::Tap => "tap",
        };
        let mut row = vec![
            p.name.clone(),
            p.vni.to_string(),
            kind.to_owned(),
            yes_no(p.up),
        ];
        if any_offloads {
            row.push(offloads(p.offloads.as_ref()));
        }
        t.row(row);
    }
    t
}

/// `nvo fdb show`: local entries name their port, remote ones the VTEP.
pub fn fdb(entries: &[FdbEntry]) -> Table {
    let mut t = Table::new(&["MAC", "DESTINATION", "ORIGIN", "AGE"]).right(3);
    for e in entries {
        let mut dest = match (&e.port, &e.remote, e.node) {
            (Some(p), _, _) => format!("port {p}"),
            (None, Some(r), _) => format!("remote {r}"),
            (None, None, Some(n)) => format!("node {n}"),
            (None, None, None) => "-".to_owned(),
        };
        if !e.ips.is_empty() {
            let ips: Vec<String> = e.ips.iter().map(ToString::to_string).collect();
            dest = format!("{dest} ({})", ips.join(", "));
        }
        let (origin, age) = match e.origin {
            Origin::Static => ("static", "-".to_owned()),
            Origin::Learned => ("learned", format!("{}s", e.age_s)),
            Origin::Evpn => ("evpn", "-".to_owned()),
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

/// `nvo counters`: one row per counter, grouped by what it counts (underlay, networks, ports,
/// STT reassembly, drops by reason); zeros hidden unless `all`.
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
    for (remote, counters) in &c.remotes {
        for (k, v) in counters {
            add("remote", remote.to_string(), k, *v);
        }
    }
    for (k, v) in &c.stt {
        add("stt", "-".to_owned(), k, *v);
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
            learn_ports: true,
            learn_tunnels: true,
            bum: Bum::HeadEnd,
            max_learned: 4096,
            ageing_s: 300,
            flood: vec!["10.100.0.2".parse().unwrap(), "10.100.0.3".parse().unwrap()],
            ports: vec!["c-red1".into()],
            learned: 2,
            static_entries: 0,
            encap: "vxlan".into(),
            params: BTreeMap::new(),
            l3: false,
            gateway_mac: None,
            routes: Vec::new(),
            accept_remotes: nvo_api::AcceptRemotes::Known,
            accept_remotes_set: false,
            max_learned_per_port: 1024,
            max_learned_per_remote: 1024,
        }
    }

    #[test]
    fn network_list_is_one_aligned_row_per_network() {
        let mut other = net();
        other.vni = 200;
        other.learning = false;
        other.learn_ports = false;
        other.learn_tunnels = false;
        other.bum = Bum::Multicast {
            group: "239.1.1.1".parse().unwrap(),
        };
        other.flood.clear();
        other.ports.clear();
        other.encap = "vxlan-gbp".into();
        other.params.insert("group".into(), 100);
        let text = networks(&[net(), other]).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with("VNI  ENCAP                  MTU  LEARNING  BUM"),
            "{text}"
        );
        assert_eq!(lines[1], "100  vxlan                 1450  yes       head-end             10.100.0.2,10.100.0.3  c-red1        2       0");
        assert!(
            lines[2]
                .starts_with("200  vxlan-gbp(group=100)  1450  no        multicast 239.1.1.1  -  "),
            "{text}"
        );
        // Right-aligned numbers line up on their last digit.
        assert_eq!(lines[0].find("STATIC").map(|i| i + 6), Some(lines[1].len()));
    }

    #[test]
    fn network_show_and_list_tell_both_learning_settings() {
        let mut n = net();
        n.learn_tunnels = false;
        let text = network(&n).to_string();
        assert!(
            text.contains("learning     ports yes, tunnels no\n"),
            "{text}"
        );
        assert!(networks(&[n.clone()]).to_string().contains(" ports "));
        n.learn_ports = false;
        n.learn_tunnels = true;
        assert!(networks(&[n]).to_string().contains(" tunnels "));
    }

    #[test]
    fn network_show_names_the_profile_and_its_params() {
        let mut n = net();
        let text = network(&n).to_string();
        assert!(
            text.contains("encap        vxlan\nparams       -\n"),
            "{text}"
        );
        n.encap = "overlay".into();
        n.params = BTreeMap::from([("dst_node".into(), 2), ("src_node".into(), 1)]);
        let text = network(&n).to_string();
        assert!(
            text.contains("encap        overlay\nparams       dst_node=2,src_node=1\n"),
            "{text}"
        );
        // An nvod from before profiles sends no encap: it spoke VXLAN only.
        n.encap.clear();
        assert!(network(&n).to_string().contains("encap        vxlan\n"));
    }

    #[test]
    fn l3_networks_show_their_gateway_and_routes() {
        let mut n = net();
        assert!(network(&n).to_string().contains("l3           no\nmtu"));
        assert!(!network(&n).to_string().contains("gateway_mac"));
        n.encap = "vxlan-gpe".into();
        n.l3 = true;
        n.gateway_mac = Some("02:00:00:00:00:fe".into());
        let text = network(&n).to_string();
        assert!(
            text.contains("l3           yes\ngateway_mac  02:00:00:00:00:fe\nroutes       -\n"),
            "{text}"
        );
        n.routes = vec![
            RouteSpec {
                prefix: "10.0.0.2/32".into(),
                remote: "192.0.2.2".parse().unwrap(),
            },
            RouteSpec {
                prefix: "10.1.0.0/16".into(),
                remote: "fd00::3".parse().unwrap(),
            },
        ];
        let text = network(&n).to_string();
        assert!(
            text.contains(
                "routes       10.0.0.2/32 via 192.0.2.2\n             10.1.0.0/16 via fd00::3\nmtu"
            ),
            "{text}"
        );
        let list = networks(&[n.clone(), net()]).to_string();
        let lines: Vec<&str> = list.lines().collect();
        assert!(lines[1].starts_with("100  vxlan-gpe l3  1450"), "{list}");
        assert!(lines[2].starts_with("100  vxlan         1450"), "{list}");
        assert_eq!(
            routes(&n.routes).to_string(),
            "PREFIX       REMOTE\n10.0.0.2/32  192.0.2.2\n10.1.0.0/16  fd00::3\n"
        );
    }

    #[test]
    fn nsh_keys_show_their_service_path() {
        let bindings = vec![
            KeyBinding {
                key: "00000aff".into(),
                local: None,
                forward: Some("192.0.2.3".parse().unwrap()),
            },
            KeyBinding {
                key: "ffffff01".into(),
                local: Some(100),
                forward: None,
            },
            KeyBinding {
                key: "0a".into(),
                local: Some(7),
                forward: None,
            },
        ];
        assert_eq!(
            keys("vxlan-gpe-nsh", &bindings).to_string(),
            "KEY            SPI   SI  DESTINATION\n\
             00000aff        10  255  forward 192.0.2.3\n\
             ffffff01  16777215    1  local network 100\n\
             0a               -    -  local network 7\n"
        );
        assert_eq!(
            keys("mytun", &bindings[..1]).to_string(),
            "KEY       DESTINATION\n00000aff  forward 192.0.2.3\n"
        );
    }

    #[test]
    fn port_offloads_show_only_when_set() {
        let plain = Port {
            name: "c-red1".into(),
            vni: 100,
            kind: PortKind::Veth,
            up: true,
            offloads: Some(PortOffloads::default()),
        };
        assert_eq!(
            ports(std::slice::from_ref(&plain)).to_string(),
            "NAME    VNI  KIND  UP\nc-red1  100  veth  yes\n"
        );
        let tuned = Port {
            name: "c-red2".into(),
            offloads: Some(PortOffloads {
                large_frames: Some(false),
                tso: Some(false),
                gso: None,
                gro: Some(true),
                tx_checksum: Some(false),
            }),
            ..plain.clone()
        };
        assert_eq!(
            ports(&[plain, tuned]).to_string(),
            "NAME    VNI  KIND  UP   OFFLOADS\n\
             c-red1  100  veth  yes  -\n\
             c-red2  100  veth  yes  no-large-frames,tso=off,gro=on,tx-checksum=off\n"
        );
    }

    fn builtin(name: &str) -> ProfileInfo {
        let p = nvo_encap::builtin::all()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap();
        ProfileInfo {
            builtin: true,
            spec: ProfileSpec::from(&p),
        }
    }

    #[test]
    fn profile_list_shows_transport_header_payload_and_params() {
        let user: ProfileInfo = serde_json::from_value(serde_json::json!({
            "builtin": false, "name": "mytun", "udp_port": 7777,
            "template": "0800 0000 0000 0000", "vni": {"offset": 4, "len": 3},
            "params": [{"name": "tag", "offset": 2, "len": 2}]
        }))
        .unwrap();
        let all = [
            builtin("vxlan-gbp"),
            builtin("geneve"),
            builtin("nvgre"),
            user,
        ];
        let text = profiles(&all).to_string();
        assert_eq!(
            text,
            "NAME       KIND      TRANSPORT  HEADER  PAYLOAD   PARAMS\n\
             vxlan-gbp  built-in  udp 4789        8  ethernet  group\n\
             geneve     built-in  udp 6081       8+  ethernet  -\n\
             nvgre      built-in  ip 47           8  ethernet  -\n\
             mytun      user      udp 7777        8  ethernet  tag\n"
        );
    }

    #[test]
    fn a_profile_shows_as_toml_that_reads_back() {
        for name in [
            "vxlan",
            "vxlan-gbp",
            "vxlan-gpe",
            "geneve",
            "nvgre",
            "overlay",
            "stt",
        ] {
            let p = builtin(name);
            let text = profile(&p);
            let head = format!("# profile {name}, built into nvod\n");
            assert!(text.starts_with(&head), "{text}");
            let back: ProfileSpec = toml::from_str(&text).unwrap();
            assert_eq!(back, p.spec, "{text}");
        }
    }

    #[test]
    fn fdb_names_ports_and_remotes() {
        let entries = vec![
            FdbEntry {
                mac: "02:00:00:64:00:01".into(),
                port: Some("c-red1".into()),
                remote: None,
                node: None,
                origin: Origin::Learned,
                age_s: 3,
                ips: vec![],
            },
            FdbEntry {
                mac: "02:00:00:64:00:02".into(),
                port: None,
                remote: Some("10.100.0.2".parse().unwrap()),
                node: None,
                origin: Origin::Static,
                age_s: 0,
                ips: vec![],
            },
            FdbEntry {
                mac: "02:00:00:64:00:03".into(),
                port: Some("c-red3".into()),
                remote: None,
                node: None,
                origin: Origin::Static,
                age_s: 0,
                ips: vec!["10.0.0.3".parse().unwrap()],
            },
        ];
        assert_eq!(
            fdb(&entries).to_string(),
            "MAC                DESTINATION             ORIGIN   AGE\n\
             02:00:00:64:00:01  port c-red1             learned   3s\n\
             02:00:00:64:00:02  remote 10.100.0.2       static     -\n\
             02:00:00:64:00:03  port c-red3 (10.0.0.3)  static     -\n"
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
        c.stt.insert("frames_reassembled".into(), 4);
        c.stt.insert("evicted".into(), 0);
        c.drops.insert("profile_mismatch".into(), 1);
        let text = counters(&c, false);
        assert_eq!(
            text,
            "SCOPE     NAME  COUNTER             VALUE\n\
             underlay  -     rx_packets              9\n\
             network   100   rx_frames               5\n\
             stt       -     frames_reassembled      4\n\
             drop      -     mtu_exceeded            2\n\
             drop      -     profile_mismatch        1\n\
             (3 zero counters hidden; --all shows them)\n"
        );
        let all = counters(&c, true);
        assert_eq!(all.lines().count(), 9);
        assert!(all.contains("stt       -     evicted"), "{all}");
        assert!(all.contains("no_network"));
        assert_eq!(counters(&Counters::default(), false), "");
        c.remotes.insert(
            "10.100.0.2".parse().unwrap(),
            BTreeMap::from([("tx_packets".into(), 3), ("rx_packets".into(), 0)]),
        );
        let text = counters(&c, false);
        assert!(
            text.lines().any(|l| l.starts_with("remote ")
                && l.contains("10.100.0.2")
                && l.contains("tx_packets")
                && l.ends_with(" 3")),
            "{text}"
        );
        assert!(text.contains("(4 zero counters hidden"), "{text}");
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
            datapath: "ebpf".into(),
            datapath_reason: "configured: datapath = \"ebpf\"".into(),
            relay: "tc on eth0".into(),
            version: "0.1.0".into(),
            http_listen: None,
        };
        let text = node(&n).to_string();
        assert!(text.contains("locator          10.100.0.1\n"), "{text}");
        assert!(text.contains("offloads         gro\n"), "{text}");
        assert!(text.contains("datapath         ebpf\n"), "{text}");
        let p = Port {
            name: "c-red1".into(),
            vni: 100,
            kind: PortKind::Veth,
            up: true,
            offloads: None,
        };
        assert_eq!(
            ports(&[p]).to_string(),
            "NAME    VNI  KIND  UP\nc-red1  100  veth  yes\n"
        );
        assert_eq!(flood(&[]).to_string(), "REMOTE\n");
    }
}
