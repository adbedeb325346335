//! Topology parsing, validation and planning, on the shipped examples and on small broken
//! topologies, each error checked for the value it must name.

use std::path::Path;

use super::*;
use crate::lab::topology::{Flood, Topology};

fn example(name: &str) -> Topology {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/lab")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    Topology::parse(name, &text).unwrap()
}

fn plan(t: &Topology) -> Plan {
    Plan::new(t, Path::new("/run/nvo/lab")).unwrap()
}

/// The error `Topology::parse` gives for a document.
fn error(yaml: &str) -> String {
    Topology::parse("t.yaml", yaml).unwrap_err().to_string()
}

const BASE: &str = "name: t\nhosts: [{name: h1}, {name: h2}]\nnetworks: [{vni: 100}]\n";

#[test]
fn demo_plans_two_tenants_with_one_subnet_on_three_hosts() {
    let t = example("demo.yaml");
    let p = plan(&t);
    assert_eq!(p.underlay_ns, "nvo-demo-ul");
    let h: Vec<_> = p
        .hosts
        .iter()
        .map(|h| (h.ns.as_str(), h.locator.to_string()))
        .collect();
    assert_eq!(
        h,
        [
            ("nvo-demo-h1", "10.100.0.1".to_owned()),
            ("nvo-demo-h2", "10.100.0.2".into()),
            ("nvo-demo-h3", "10.100.0.3".into())
        ]
    );
    assert_eq!(p.hosts[1].ipv6.to_string(), "fd00:100::2/64");
    assert_eq!(p.hosts[0].socket, Path::new("/run/nvo/lab/demo/h1.sock"));
    assert_eq!(p.hosts[2].uplink, "u-h3");
    assert_eq!(p.hosts[2].node_id, 3);
    // Every network floods to the two other hosts, each with a container in it.
    for n in &p.networks {
        // nvod picks the MTU from the profile; kernel hosts use VXLAN's.
        assert_eq!(
            (n.mtu, n.kernel_mtu, n.encap.as_str()),
            (None, 1450, "vxlan")
        );
        let f: Vec<String> = n.flood_for("h1").iter().map(|a| a.to_string()).collect();
        assert_eq!(f, ["10.100.0.2", "10.100.0.3"]);
        assert_eq!(n.flood_for("h3").len(), 2);
    }
    let red2 = p.containers.iter().find(|c| c.name == "red2").unwrap();
    let blue2 = p.containers.iter().find(|c| c.name == "blue2").unwrap();
    assert_eq!(
        (red2.ip, red2.host_ns.as_str(), red2.port.as_str()),
        (blue2.ip, "nvo-demo-h2", "c-red2")
    );
    assert_eq!(red2.mac.to_string(), "02:00:00:64:00:02");
    assert_eq!(blue2.mac.to_string(), "02:00:00:c8:00:05");
    assert_eq!(p.namespaces().len(), 1 + 3 + 6);
}

#[test]
fn demo6_tunnels_over_ipv6_with_a_smaller_tenant_mtu() {
    let p = plan(&example("demo6.yaml"));
    assert_eq!(p.hosts[0].locator.to_string(), "fd00:100::1");
    assert_eq!(
        p.hosts[0].ipv4.to_string(),
        "10.100.0.1/24",
        "eth0 has both families"
    );
    assert!(p.networks.iter().all(|n| n.kernel_mtu == 1430));
    assert!(p.containers.iter().all(|c| c.ipv6.is_some()));
    assert_eq!(
        p.networks[0]
            .flood_for("h2")
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>(),
        ["fd00:100::1", "fd00:100::3"]
    );
}

#[test]
fn kernel_example_mixes_an_nvo_host_and_a_kernel_host() {
    let p = plan(&example("kernel.yaml"));
    assert_eq!(p.hosts[0].kind, HostKind::Nvo);
    assert_eq!(p.hosts[1].kind, HostKind::Kernel);
    assert_eq!(p.hosts[1].learning, Some(true));
    assert_eq!(
        p.networks[0]
            .flood_for("k1")
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>(),
        ["10.100.0.1"]
    );
}

#[test]
fn defaults_fill_the_underlay_and_hosts() {
    let t = Topology::parse("t.yaml", BASE).unwrap();
    assert_eq!(t.underlay.family, Family::Ipv4);
    assert_eq!(t.underlay.mtu, 1500);
    assert_eq!(t.hosts[0].vxlan_port, 4789);
    assert_eq!(t.networks[0].flood, Flood::Auto);
    assert!(t.networks[0].learning);
    // No containers: auto flooding has no one to flood to.
    assert!(plan(&t).networks[0].flood_for("h1").is_empty());
}

#[test]
fn explicit_flood_lists_skip_the_sender() {
    let t = Topology::parse(
        "t.yaml",
        &BASE.replace("{vni: 100}", "{vni: 100, flood: [h1, h2]}"),
    )
    .unwrap();
    let p = plan(&t);
    assert_eq!(
        p.networks[0].flood_for("h1"),
        ["10.100.0.2".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        p.networks[0].flood_for("h2"),
        ["10.100.0.1".parse::<IpAddr>().unwrap()]
    );
    let t = Topology::parse(
        "t.yaml",
        &BASE.replace("{vni: 100}", "{vni: 100, flood: []}"),
    )
    .unwrap();
    assert!(plan(&t).networks[0].flood_for("h1").is_empty());
}

#[test]
fn long_names_become_unique_interface_names() {
    let mut taken = BTreeSet::new();
    assert_eq!(ifname("c-", "red1", &mut taken), "c-red1");
    let a = ifname("c-", "averyveryverylongname", &mut taken);
    let b = ifname("c-", "averyveryverylongname2", &mut taken);
    assert!(a.len() <= IFNAME_MAX && b.len() <= IFNAME_MAX, "{a} {b}");
    assert_ne!(a, b);
    assert_eq!(a, "c-averyveryve-1");
    let yaml = "name: t\nhosts: [{name: hostwithalongname1}, {name: hostwithalongname2}]\n";
    let p = plan(&Topology::parse("t.yaml", yaml).unwrap());
    assert_ne!(p.hosts[0].uplink, p.hosts[1].uplink);
    assert!(p.hosts.iter().all(|h| h.uplink.len() <= IFNAME_MAX));
}

#[test]
fn syntax_errors_name_the_file_and_the_place() {
    let e = error("name: t\nhosts: [{name: h1, colour: red}]\n");
    assert!(e.starts_with("t.yaml: ") && e.contains("colour"), "{e}");
    let e = error("name: t\nunderlay: {ipv4: 10.0.0.0/33}\nhosts: [{name: h1}]\n");
    assert!(
        e.contains("10.0.0.0/33") && e.contains("longer than the address"),
        "{e}"
    );
    let e = error("name: t\nhosts: [{name: h1, kind: vpp}]\n");
    assert!(e.contains("vpp"), "{e}");
    let e = error(&BASE.replace("{vni: 100}", "{vni: 100, flood: everyone}"));
    assert!(e.contains("\"everyone\""), "{e}");
    let e = error(&format!(
        "{BASE}containers: [{{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, mac: 02:00}}]\n"
    ));
    assert!(e.contains("\"02:00\""), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn invalid_topologies_fail_with_one_line_naming_the_value() {
    let c = |extra: &str| format!("{BASE}containers:\n{extra}");
    let cases: Vec<(String, &str)> = vec![
        ("name: t\nhosts: []\n".into(), "at least one host"),
        ("name: 'bad name'\nhosts: [{name: h1}]\n".into(), "\"bad name\""),
        ("name: t\nhosts: [{name: h1}, {name: h1}]\n".into(), "\"h1\" is used twice"),
        ("name: t\nhosts: [{name: ul}]\n".into(), "reserved"),
        (format!("name: t\nhosts: [{{name: {}}}]\n", "x".repeat(33)), "longer than 32"),
        ("name: t\nhosts: [{name: h1, learning: false}]\n".into(), "kind: kernel"),
        (BASE.replace("100", "0"), "vni 0 is outside"),
        (BASE.replace("100", "16777216"), "vni 16777216 is outside"),
        (BASE.replace("{vni: 100}", "{vni: 100}, {vni: 100}"), "vni 100 is defined twice"),
        (BASE.replace("{vni: 100}", "{vni: 100, flood: [h9]}"), "unknown host \"h9\""),
        (BASE.replace("{vni: 100}", "{vni: 100, mtu: 1460}"), "mtu 1460 is outside 68..=1450"),
        ("name: t\nunderlay: {ipv4: 10.0.0.0/31}\nhosts: [{name: a}, {name: b}]\n".into(), "no room for 2 hosts"),
        ("name: t\nunderlay: {ipv4: 'fd00::/64'}\nhosts: [{name: a}]\n".into(), "not an IPv4 prefix"),
        ("name: t\nunderlay: {mtu: 1000}\nhosts: [{name: a}]\n".into(), "mtu 1000"),
        (c("  - {name: h2x, host: h9, vni: 100, ip: 10.0.0.1/24}\n"), "container h2x: unknown host \"h9\""),
        (c("  - {name: c1, host: h1, vni: 300, ip: 10.0.0.1/24}\n"), "vni 300 is not in networks"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 10.0.0.0/24}\n"), "ip 10.0.0.0/24"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 'fd00::1/64'}\n"), "not an IPv4 host address"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, ipv6: 10.0.0.1/24}\n"), "ipv6 10.0.0.1/24"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}\n  - {name: c2, host: h2, vni: 100, ip: 10.0.0.1/24}\n"), "address 10.0.0.1 is already c1's"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, mac: '01:00:00:00:00:01'}\n"), "not a unicast"),
        (c("  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, mac: '02:00:00:00:00:01'}\n  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24, mac: '02:00:00:00:00:01'}\n"), "mac 02:00:00:00:00:01 is already c1's"),
        (c("  - {name: h1, host: h1, vni: 100, ip: 10.0.0.1/24}\n"), "\"h1\" is used twice"),
        (
            "name: t\nhosts: [{name: a}, {name: b, vxlan_port: 8472}]\nnetworks: [{vni: 1}]\ncontainers: [{name: x, host: a, vni: 1, ip: 10.0.0.1/24}, {name: y, host: b, vni: 1, ip: 10.0.0.2/24}]\n".into(),
            "hosts a (vxlan_port 4789) and b (vxlan_port 8472) must use the same port",
        ),
    ];
    for (yaml, want) in cases {
        let e = error(&yaml);
        assert!(e.contains(want), "for\n{yaml}\nwanted {want:?} in: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn the_same_address_in_two_networks_is_fine() {
    let yaml = "name: t\nhosts: [{name: h1}]\nnetworks: [{vni: 1}, {vni: 2}]\ncontainers:\n  - {name: a, host: h1, vni: 1, ip: 10.0.0.1/24}\n  - {name: b, host: h1, vni: 2, ip: 10.0.0.1/24}\n";
    let p = plan(&Topology::parse("t.yaml", yaml).unwrap());
    assert_eq!(p.containers[0].ip, p.containers[1].ip);
    assert_ne!(p.containers[0].mac, p.containers[1].mac);
}

#[test]
fn a_multicast_network_floods_to_its_group_and_to_no_host() {
    let yaml = "name: t\nhosts: [{name: h1}, {name: k1, kind: kernel}]\nnetworks: [{vni: 100, multicast: 239.1.1.1}, {vni: 200}]\ncontainers:\n  - {name: a, host: h1, vni: 100, ip: 10.0.0.1/24}\n  - {name: b, host: k1, vni: 100, ip: 10.0.0.2/24}\n  - {name: c, host: h1, vni: 200, ip: 10.0.0.1/24}\n  - {name: d, host: k1, vni: 200, ip: 10.0.0.2/24}\n";
    let p = plan(&Topology::parse("t.yaml", yaml).unwrap());
    assert_eq!(p.networks[0].multicast, Some("239.1.1.1".parse().unwrap()));
    assert!(p.networks[0].flood_for("h1").is_empty() && p.networks[0].flood_for("k1").is_empty());
    assert_eq!(p.networks[1].multicast, None);
    assert_eq!(p.networks[1].flood_for("h1").len(), 1);

    let v6 = "name: t\nunderlay: {family: ipv6}\nhosts: [{name: h1}]\nnetworks: [{vni: 1, multicast: 'ff0e::1:1'}]\n";
    assert!(Topology::parse("t.yaml", v6).is_ok());
}

#[test]
fn a_multicast_group_must_fit_the_underlay_and_exclude_flood_lists() {
    for (network, want) in [
        (
            "{vni: 100, multicast: 10.1.1.1}",
            "multicast 10.1.1.1 is not a multicast address",
        ),
        (
            "{vni: 100, multicast: 'ff0e::1'}",
            "multicast ff0e::1 is not a multicast address of the underlay's family",
        ),
        (
            "{vni: 100, multicast: 239.1.1.1, flood: [h2]}",
            "network 100: give either multicast or flood",
        ),
    ] {
        let e = error(&BASE.replace("{vni: 100}", network));
        assert!(e.contains(want), "for {network} wanted {want:?} in: {e}");
    }
    let e = error("name: t\nhosts: [{name: h1}]\nnetworks: [{vni: 1, multicast: nope}]\n");
    assert!(e.contains("multicast"), "{e}");
}

#[test]
fn encaps_example_has_one_network_per_ethernet_profile_and_a_user_defined_one() {
    let t = example("encaps.yaml");
    let p = plan(&t);
    let encaps: Vec<&str> = p.networks.iter().map(|n| n.encap.as_str()).collect();
    assert_eq!(
        encaps,
        [
            "vxlan",
            "vxlan-gbp",
            "vxlan-gpe",
            "geneve",
            "nvgre",
            "overlay",
            "stt",
            "demotun"
        ]
    );
    assert_eq!(t.profiles.len(), 1);
    assert_eq!(t.profiles[0].udp_port, Some(7777));
    assert_eq!(p.networks[1].params.get("group"), Some(&100));
    assert!(p.networks.iter().all(|n| n.mtu.is_none()));
    // Two containers per network, one on each host, flooding to each other.
    for n in &p.networks {
        let on = |h: &str| {
            p.containers
                .iter()
                .filter(|c| c.vni == n.vni && c.host == h)
                .count()
        };
        assert_eq!((on("h1"), on("h2")), (1, 1), "network {}", n.vni);
        assert_eq!(n.flood_for("h1"), ["10.100.0.2".parse::<IpAddr>().unwrap()]);
    }
}

#[test]
fn a_network_names_its_profile_and_parameters() {
    let yaml = BASE.replace(
        "{vni: 100}",
        "{vni: 100, encap: vxlan-gbp, params: {group: 65535}, mtu: 1400}",
    );
    let p = plan(&Topology::parse("t.yaml", &yaml).unwrap());
    let n = &p.networks[0];
    assert_eq!(
        (n.encap.as_str(), n.mtu, n.kernel_mtu),
        ("vxlan-gbp", Some(1400), 1400)
    );
    assert_eq!(n.params.get("group"), Some(&65535));
    // A non-VXLAN profile's MTU is bounded by the underlay's only; nvod knows its overhead.
    let yaml = BASE.replace("{vni: 100}", "{vni: 100, encap: stt, mtu: 1460}");
    assert!(Topology::parse("t.yaml", &yaml).is_ok());
}

#[test]
fn nvod_extras_go_to_nvo_hosts_only_and_within_nvods_bounds() {
    let yaml =
        "name: t\nhosts: [{name: h1, nvod: {outer_ttl: 9, outer_tos: inherit, outer_df: true}}]\n";
    let p = plan(&Topology::parse("t.yaml", yaml).unwrap());
    assert_eq!(
        (
            p.hosts[0].nvod.outer_ttl.clone(),
            p.hosts[0].nvod.outer_tos.clone(),
            p.hosts[0].nvod.outer_df
        ),
        (
            Some(crate::lab::topology::OuterValue::Fixed(9)),
            Some(crate::lab::topology::OuterValue::Word("inherit".into())),
            Some(true)
        )
    );
    for (yaml, want) in [
        (
            "name: t\nhosts: [{name: k1, kind: kernel, nvod: {outer_ttl: 9}}]\n",
            "host k1: nvod is for kind: nvo hosts",
        ),
        (
            "name: t\nhosts: [{name: h1, nvod: {outer_ttl: 0}}]\n",
            "host h1: nvod.outer_ttl 0 is outside 1..=255",
        ),
        (
            "name: t\nhosts: [{name: h1, nvod: {stt_reassembly_bytes: 10}}]\n",
            "nvod.stt_reassembly_bytes 10 is outside",
        ),
        (
            "name: t\nhosts: [{name: h1, nvod: {stt_reassembly_timeout_s: 0}}]\n",
            "nvod.stt_reassembly_timeout_s 0",
        ),
        (
            "name: t\nhosts: [{name: h1, nvod: {busy_poll_us: 200000}}]\n",
            "nvod.busy_poll_us 200000 is outside 0..=100000",
        ),
        (
            "name: t\nhosts: [{name: h1, nvod: {workers: 0}}]\n",
            "nvod.workers 0 is outside 1..=64",
        ),
        ("name: t\nhosts: [{name: h1, nvod: {ttl: 3}}]\n", "ttl"),
    ] {
        let e = error(yaml);
        assert!(e.contains(want), "wanted {want:?} in: {e}");
    }
}

#[test]
fn profiles_and_encaps_are_checked_before_anything_is_made() {
    let mytun = "profiles: [{name: mytun, udp_port: 7777, template: '0800 0000 0000 0000', vni: {offset: 4, len: 3}, params: [{name: tag, offset: 2, len: 1}]}]\n";
    let ok = format!(
        "{}{mytun}",
        BASE.replace("{vni: 100}", "{vni: 100, encap: mytun, params: {tag: 255}}")
    );
    assert!(Topology::parse("t.yaml", &ok).is_ok(), "{}", error(&ok));
    let with = |network: &str, profiles: &str| {
        format!("{}{profiles}", BASE.replace("{vni: 100}", network))
    };
    let kernel = "name: t\nhosts: [{name: h1}, {name: k1, kind: kernel}]\nnetworks: [{vni: 100, encap: geneve}]\ncontainers:\n  - {name: a, host: h1, vni: 100, ip: 10.0.0.1/24}\n  - {name: b, host: k1, vni: 100, ip: 10.0.0.2/24}\n";
    let cases: Vec<(String, &str)> = vec![
        (with("{vni: 100, encap: vxlan-bgp}", ""), "network 100: encap \"vxlan-bgp\" is neither a built-in profile nor in profiles (known: vxlan, vxlan-gbp"),
        (with("{vni: 100, encap: vxlan-gbp, params: {grp: 1}}", ""), "encap vxlan-gbp has no parameter \"grp\" (its parameters: group)"),
        (with("{vni: 100, params: {group: 1}}", ""), "encap vxlan has no parameter \"group\" (its parameters: none)"),
        (with("{vni: 100, encap: mytun, params: {tag: 256}}", mytun), "parameter tag = 256 does not fit its 1 bytes (at most 255)"),
        (with("{vni: 100, encap: geneve, mtu: 1501}", ""), "mtu 1501 is outside 68..=1500 (the underlay mtu)"),
        (with("{vni: 100}", "profiles: [{name: geneve, udp_port: 1, template: '00'}]\n"), "\"geneve\" is the name of a built-in profile"),
        (with("{vni: 100}", "profiles: [{name: a, udp_port: 1, template: '00'}, {name: a, udp_port: 2, template: '00'}]\n"), "profiles: \"a\" is defined twice"),
        (with("{vni: 100}", "profiles: [{name: a, template: '00'}]\n"), "profiles: profile a: give exactly one of udp_port and ip_protocol"),
        (with("{vni: 100}", "profiles: [{name: a, udp_port: 1, template: 'xyz'}]\n"), "\"xyz\" is not hex"),
        (with("{vni: 100}", "profiles: [{name: a, udp_port: 1, colour: red}]\n"), "colour"),
        (kernel.to_owned(), "network 100: host k1 is kind: kernel, whose VXLAN device speaks encap vxlan only, not geneve"),
    ];
    for (yaml, want) in cases {
        let e = error(&yaml);
        assert!(e.contains(want), "for\n{yaml}\nwanted {want:?} in: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // A kernel host outside a non-VXLAN network is fine: it does not make that network.
    let apart = kernel.replace(
        "{name: b, host: k1, vni: 100",
        "{name: b, host: h1, vni: 100",
    );
    assert!(
        Topology::parse("t.yaml", &apart).is_ok(),
        "{}",
        error(&apart)
    );
    // Different VXLAN ports matter only to VXLAN networks.
    let ports = "name: t\nhosts: [{name: a}, {name: b, vxlan_port: 8472}]\nnetworks: [{vni: 1, encap: geneve}]\ncontainers: [{name: x, host: a, vni: 1, ip: 10.0.0.1/24}, {name: y, host: b, vni: 1, ip: 10.0.0.2/24}]\n";
    assert!(Topology::parse("t.yaml", ports).is_ok(), "{}", error(ports));
}

#[test]
fn container_labels_reach_the_plan_and_are_refused_on_kernel_hosts() {
    let yaml = "name: t\nhosts: [{name: h1}, {name: k1, kind: kernel}]\nnetworks: [{vni: 100}]\n\
                containers: [{name: a, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}]\n";
    let p = plan(&Topology::parse("t.yaml", yaml).unwrap());
    assert_eq!(
        p.containers[0].labels.get("app").map(String::as_str),
        Some("web")
    );
    let on_kernel = yaml.replace("host: h1, vni", "host: k1, vni");
    let e = Topology::parse("t.yaml", &on_kernel)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("container a") && e.contains("kernel host"),
        "{e}"
    );
}
