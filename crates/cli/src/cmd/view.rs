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
        (
            "workers",
            if n.worker_packets.is_empty() {
                n.workers.to_string()
            } else {
                let packets: Vec<String> = n.worker_packets.iter().map(u64::to_string).collect();
                format!("{} (packets {})", n.workers, packets.join(" "))
            },
        ),
        ("relay", n.relay.clone()),
        ("version", n.version.clone()),
        (
            "http_listen",
            n.http_listen
                .map_or_else(|| "off".to_owned(), |a| a.to_string()),
        ),
        (
            "cluster",
            match &n.cluster {
                None => "off".to_owned(),
                Some(c) if c.connected => format!("connected, revision {}", c.revision),
                Some(c) => format!("not connected, last applied revision {}", c.revision),
            },
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
        if let Some(v6) = n.gateway_ipv6 {
            items.push(("gateway_ipv6", v6.to_string()));
        }
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
    let any_vlan = ports.iter().any(|p| p.vlan.is_some() || p.shared.is_some());
    let mut header = vec!["NAME", "VNI", "KIND", "UP"];
    if any_offloads {
        header.push("OFFLOADS");
    }
    if any_vlan {
        header.push("VLAN");
    }
    let mut t = Table::new(&header).right(1);
    for p in ports {
        let kind = match p.kind {
            PortKind::Veth => "veth",
            PortKind::Tap => "tap",
        };
        let vni = if p.vni == 0 {
            "-".to_owned()
        } else {
            p.vni.to_string()
        };
        let mut row = vec![p.name.clone(), vni, kind.to_owned(), yes_no(p.up)];
        if any_offloads {
            row.push(offloads(p.offloads.as_ref()));
        }
        if any_vlan {
            let shared = p.shared.map(|s| match s.default_vni {
                Some(vni) => format!("shared by mac (default {vni})"),
                None => "shared by mac".to_owned(),
            });
            row.push(
                shared.unwrap_or_else(|| p.vlan.as_ref().map_or_else(|| "-".to_owned(), vlan)),
            );
        }
        t.row(row);
    }
    t
}

/// A port's VLAN column: `access 10`, or `trunk 10=100,20=200`, with `(0x88a8)` for 802.1ad.
fn vlan(v: &nvo_api::PortVlan) -> String {
    let mut out = match (&v.access, &v.trunk) {
        (Some(vid), _) => format!("access {vid}"),
        (None, Some(t)) => {
            let pairs: Vec<String> =
                t.0.iter()
                    .map(|(vid, vni)| format!("{vid}={vni}"))
                    .collect();
            format!("trunk {}", pairs.join(","))
        }
        (None, None) => "-".to_owned(),
    };
    if let Some(e) = v.ethertype.filter(|e| e.0 != 0x8100) {
        out.push_str(&format!(" ({e})"));
    }
    out
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
mod tests;
