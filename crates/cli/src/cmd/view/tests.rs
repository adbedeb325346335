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
        gateway_ipv6: None,
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
        lines[2].starts_with("200  vxlan-gbp(group=100)  1450  no        multicast 239.1.1.1  -  "),
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
        vlan: None,
        shared: None,
        qos: None,
        acl: None,
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
        cluster: None,
        workers: 2,
        worker_packets: vec![10, 7],
    };
    let text = node(&n).to_string();
    assert!(
        text.contains("workers          2 (packets 10 7)\n"),
        "{text}"
    );
    assert!(text.contains("locator          10.100.0.1\n"), "{text}");
    assert!(text.contains("offloads         gro\n"), "{text}");
    assert!(text.contains("datapath         ebpf\n"), "{text}");
    let p = Port {
        name: "c-red1".into(),
        vni: 100,
        kind: PortKind::Veth,
        up: true,
        offloads: None,
        vlan: None,
        shared: None,
        qos: None,
        acl: None,
    };
    assert_eq!(
        ports(&[p]).to_string(),
        "NAME    VNI  KIND  UP\nc-red1  100  veth  yes\n"
    );
    let trunk = Port {
        name: "eth1".into(),
        vni: 0,
        kind: PortKind::Veth,
        up: true,
        offloads: None,
        vlan: Some(nvo_api::PortVlan {
            access: None,
            trunk: Some(nvo_api::TrunkMap(vec![(10, 100), (20, 200)])),
            ethertype: Some(nvo_api::Ethertype(0x88a8)),
        }),
        shared: None,
        qos: None,
        acl: None,
    };
    let access = Port {
        name: "eth2".into(),
        vni: 100,
        kind: PortKind::Veth,
        up: false,
        offloads: None,
        vlan: Some(nvo_api::PortVlan {
            access: Some(10),
            trunk: None,
            ethertype: Some(nvo_api::Ethertype(0x8100)),
        }),
        shared: None,
        qos: None,
        acl: None,
    };
    assert_eq!(
        ports(&[trunk, access]).to_string(),
        "NAME  VNI  KIND  UP   VLAN\n\
         eth1    -  veth  yes  trunk 10=100,20=200 (0x88a8)\n\
         eth2  100  veth  no   access 10\n"
    );
    assert_eq!(flood(&[]).to_string(), "REMOTE\n");
}
