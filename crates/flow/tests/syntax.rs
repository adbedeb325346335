//! The flow syntax: what nvo parses from `ovs-ofctl add-flow` text, checked against Open
//! vSwitch's own parser (`ovs-ofctl parse-flow`, Debian's openvswitch-common, installed by
//! scripts/setup.sh): for hand-written and generated flows, the text nvo writes back for what
//! it parsed is the same flow to ovs-ofctl as the original, and nvo parses ovs-ofctl's
//! canonical form into the same rule.
// Test setup on constant and generated input; a failure there should stop the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::Instant;

use nvo_flow::show::format_flow;
use nvo_flow::syntax::{parse, SyntaxError};
use nvo_flow::{Action, Classifier, Field, Key};
use proptest::prelude::*;

fn ports(name: &str) -> Option<u32> {
    match name {
        "c1" => Some(1),
        "c2" => Some(2),
        _ => None,
    }
}

fn no_names(_: u32) -> Option<String> {
    None
}

/// What ovs-ofctl makes of `flow`: its canonical text of the FLOW_MOD.
fn ovs(flow: &str) -> String {
    let out = Command::new("ovs-ofctl")
        .args(["-O", "OpenFlow13", "parse-flow", flow])
        .output()
        .expect("ovs-ofctl (openvswitch-common; scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "ovs-ofctl refused {flow:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("OFPT_FLOW_MOD"))
        .unwrap_or_else(|| panic!("no FLOW_MOD in {text}"));
    line.split_once(": ADD ")
        .map_or(line, |(_, f)| f)
        .trim()
        .to_owned()
}

fn same_to_ovs(flow: &str) {
    let ours = parse(flow, &ports).unwrap_or_else(|e| panic!("{flow:?}: {e}"));
    let written = format_flow(&ours, &no_names);
    assert_eq!(
        ovs(&written),
        ovs(flow),
        "nvo wrote {written:?} for {flow:?}"
    );
    // The FLOW_MOD's own fields (cookie:, idle:, hard:) are how parse-flow prints a message,
    // not flow syntax: the match and actions are compared.
    let canonical = ovs(flow);
    let body: Vec<&str> = canonical
        .split(' ')
        .filter(|t| {
            !["cookie:", "idle:", "hard:"]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .collect();
    let again =
        parse(&body.join(" "), &ports).unwrap_or_else(|e| panic!("ovs's {canonical:?}: {e}"));
    assert_eq!(
        (again.priority, again.pattern, &again.actions),
        (ours.priority, ours.pattern, &ours.actions),
        "ovs's canonical {canonical:?} of {flow:?}"
    );
}

#[test]
fn hand_written_flows_mean_what_they_mean_to_ovs() {
    for flow in [
        "priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop",
        "priority=100,ip,nw_src=10.0.0.0/8,nw_dst=192.168.1.0/255.255.255.0,actions=normal",
        "in_port=1,dl_vlan=10,actions=strip_vlan,output:2",
        "in_port=2,dl_vlan=0xffff,actions=push_vlan:0x8100,mod_vlan_vid:20,output:1",
        "dl_src=02:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop",
        "udp,tp_src=0x1000/0xf000,nw_tos=184,actions=mod_nw_tos:0,normal",
        "tcp6,ipv6_dst=2001:db8::/32,tp_dst=443,actions=dec_ttl,normal",
        "icmp,icmp_type=8,icmp_code=0,actions=normal",
        "arp,arp_op=1,arp_tpa=10.0.0.1,actions=normal",
        "tcp,tcp_flags=+syn-ack,actions=meter:1,normal",
        "ip,ip_dscp=46,actions=set_field:10->ip_dscp,normal",
        "tun_id=0x64,actions=set_tunnel:0xc8,set_field:192.0.2.1->tun_dst,normal",
        "in_port=3,actions=set_field:0x64->tun_id,set_field:10.100.0.2->tun_dst,output:65279",
        "in_port=3,actions=set_tunnel:200,set_field:2001:db8::2->tun_ipv6_dst,output:65279",
        "priority=1,cookie=0x42,idle_timeout=30,hard_timeout=300,actions=normal",
        "dl_type=0x88cc,actions=drop",
        "sctp,tp_dst=9,actions=mod_dl_src:02:00:00:00:00:09,mod_dl_dst:02:00:00:00:00:0a,in_port",
        "ip,actions=mod_nw_ttl:9,output:3",
    ] {
        same_to_ovs(flow);
    }
}

#[test]
fn port_names_and_the_issue_example_act_on_packets() {
    let flow = parse(
        "priority=200,in_port=c1,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop",
        &ports,
    )
    .unwrap();
    assert_eq!(flow.priority, 200);
    assert!(flow.actions.is_empty());
    let mut c = Classifier::new(4);
    let normal = parse("priority=0,actions=normal", &ports).unwrap();
    c.insert(normal, Instant::now()).unwrap();
    let drop = c.insert(flow, Instant::now()).unwrap().id;
    let mut k = Key::default();
    k.set(Field::InPort, 1);
    k.set(Field::EthType, 0x0800);
    k.set(Field::IpProto, 6);
    k.set(Field::IpDst, 0x0a5b_0002);
    k.set(Field::TpDst, 5201);
    assert_eq!(c.lookup(&k), Some(drop));
    k.set(Field::IpProto, 17);
    assert_ne!(c.lookup(&k), Some(drop));
    assert_eq!(
        parse("in_port=c9,actions=drop", &ports),
        Err(SyntaxError::UnknownPort("c9".into()))
    );
    assert_eq!(
        parse("actions=output:c2", &ports).unwrap().actions,
        vec![Action::Output(2)]
    );
}

#[test]
fn bad_flows_are_refused_with_what_is_wrong() {
    let refused = |flow: &str| parse(flow, &ports).unwrap_err().to_string();
    assert!(refused("tcp,tp_dst=22").contains("no actions="));
    assert!(refused("tp_dst=22,actions=drop").contains("tp_src/tp_dst needs tcp, udp or sctp"));
    assert!(refused("nw_dst=10.0.0.1,actions=drop").contains("ip or arp"));
    assert!(refused("ipv6_dst=::1,actions=drop").contains("ipv6"));
    assert!(refused("udp,tcp_flags=+syn,actions=drop").contains("tcp_flags needs tcp"));
    assert!(refused("bogus=1,actions=drop").contains("unknown field \"bogus\""));
    assert!(refused("priority=70000,actions=drop").contains("priority"));
    assert!(refused("ip,nw_dst=10.0.0.300,actions=drop").contains("nw_dst"));
    assert!(refused("ip,nw_tos=3,actions=drop").contains("ECN"));
    assert!(refused("dl_vlan=5000,actions=drop").contains("VLAN ID"));
    assert!(refused("tcp,tp_dst=1,tp_dst=2,actions=drop").contains("twice"));
    assert!(refused("actions=drop,normal").contains("drop cannot"));
    assert!(refused("actions=controller").contains("not one nvo carries out"));
    assert!(refused("actions=push_vlan:0x0800").contains("0x8100 or 0x88a8"));
    assert!(refused("dl_src=02:00:00:00:00,actions=drop").contains("MAC"));
    assert!(refused("table=1,actions=drop").contains("one table"));
    assert_eq!(
        parse(&format!("{},actions=drop", "ip,".repeat(2000)), &ports),
        Err(SyntaxError::TooLong)
    );
}

/// Flows built from a random subset of fields, each with its prerequisites.
fn flows() -> impl Strategy<Value = String> {
    (
        0u8..5,
        any::<u16>(),
        proptest::option::of(1u8..3),
        proptest::option::of(0u16..4096),
        proptest::option::of((any::<u32>(), 0u8..33)),
        proptest::option::of((any::<u16>(), any::<u16>())),
        proptest::option::of(0u8..64),
        0u8..4,
    )
        .prop_map(|(l3, prio, port, vlan, dst, tp, dscp, act)| {
            let mut items = vec![format!("priority={prio}")];
            if let Some(p) = port {
                items.push(format!("in_port={p}"));
            }
            if let Some(v) = vlan {
                items.push(format!("dl_vlan={v}"));
            }
            let proto = ["ip", "tcp", "udp", "ipv6", "tcp6"][usize::from(l3)];
            items.push(proto.to_owned());
            if let Some((a, len)) = dst {
                if l3 < 3 {
                    items.push(format!("nw_dst={}/{len}", std::net::Ipv4Addr::from(a)));
                } else {
                    items.push(format!(
                        "ipv6_dst=2001:db8::{:x}/{}",
                        a & 0xffff,
                        32 + u32::from(len) * 3
                    ));
                }
            }
            if let (Some((v, m)), true) = (tp, matches!(l3, 1 | 2 | 4)) {
                items.push(format!("tp_dst={v:#x}/{:#x}", m | 0x8000));
            }
            if let Some(d) = dscp {
                items.push(format!("ip_dscp={d}"));
            }
            // Open vSwitch refuses pop_vlan on a match without a tag.
            let pop = if vlan.is_some() {
                "strip_vlan,output:2"
            } else {
                "output:2"
            };
            let actions = [
                "drop",
                "normal",
                pop,
                "mod_nw_tos:8,mod_dl_dst:02:00:00:00:00:07,output:1",
            ][usize::from(act)];
            format!("{},actions={actions}", items.join(","))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn generated_flows_mean_what_they_mean_to_ovs(flow in flows()) {
        same_to_ovs(&flow);
    }
}
