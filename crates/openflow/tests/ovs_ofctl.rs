//! The session against a controller nobody here wrote: Open vSwitch's `ovs-ofctl -O
//! OpenFlow13` (openvswitch-common, installed by scripts/setup.sh) connects to a listener on
//! loopback that runs one [`Session`] per connection over a test switch — a classifier with
//! [`apply_flow_mod`] and two ports. Flows added with ovs-ofctl come back from its
//! `dump-flows` as ovs-ofctl itself writes them (`parse-flow`); `mod-flows` and `del-flows`
//! select as OpenFlow says; `show`, `dump-ports`, `dump-tables`, `dump-aggregate` and
//! `packet-out` work; malformed messages get OFPT_ERRORs and the listener keeps serving.
// Test setup on constant input; a failure there should stop the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvo_flow::{Action, Classifier};
use nvo_openflow::wire::port;
use nvo_openflow::{
    apply_flow_mod, flow_stats, FlowFilter, FlowMod, FlowStat, MeterMod, OfError, PortDesc,
    PortStats, Session, Switch,
};

#[derive(Debug)]
struct TestSwitch {
    table: Classifier<Vec<Action>>,
    sent: Vec<(u32, Vec<Action>, Vec<u8>)>,
    meters: Vec<MeterMod>,
}

impl Switch for TestSwitch {
    fn datapath_id(&self) -> u64 {
        0x00_00_02_00_00_00_00_01
    }
    fn ports(&self) -> Vec<PortDesc> {
        vec![
            PortDesc {
                port_no: 1,
                name: "c-red1".into(),
                mac: [2, 0, 0, 0, 0, 1],
                up: true,
            },
            PortDesc {
                port_no: 2,
                name: "trunk0".into(),
                mac: [2, 0, 0, 0, 0, 2],
                up: false,
            },
        ]
    }
    fn port_stats(&self, port_no: u32) -> Result<Vec<PortStats>, OfError> {
        let all = [1, 2].map(|n| PortStats {
            port_no: n,
            rx_packets: 10 * u64::from(n),
            tx_bytes: 1000 * u64::from(n),
            ..Default::default()
        });
        match port_no {
            port::ANY => Ok(all.to_vec()),
            1 | 2 => Ok(vec![all[port_no as usize - 1]]),
            _ => Err(OfError::BAD_PORT),
        }
    }
    fn flow_mod(&mut self, m: FlowMod) -> Result<(), OfError> {
        // A rule naming a meter the switch does not have (OpenFlow 1.3 §6.4).
        let meter_exists = |n: u32| {
            self.meters.iter().fold(false, |on, m| match *m {
                MeterMod::Add { id, .. } if id == n => true,
                MeterMod::Delete { id } if id == n => false,
                _ => on,
            })
        };
        let missing = m.actions.iter().any(|a| match a {
            Action::Meter(n) => !meter_exists(*n),
            _ => false,
        });
        if missing {
            return Err(OfError::METER_UNKNOWN);
        }
        apply_flow_mod(&mut self.table, m, Instant::now()).map(|_| ())
    }
    fn meter_mod(&mut self, m: MeterMod) -> Result<(), OfError> {
        self.meters.push(m);
        Ok(())
    }
    fn flows(&self, filter: &FlowFilter) -> Vec<FlowStat> {
        flow_stats(&self.table, filter, Instant::now())
    }
    fn table_stats(&self) -> (u32, u64, u64) {
        (self.table.len() as u32, 0, 0)
    }
    fn table_capacity(&self) -> u32 {
        self.table.capacity() as u32
    }
    fn packet_out(
        &mut self,
        in_port: u32,
        actions: &[Action],
        frame: &[u8],
    ) -> Result<(), OfError> {
        self.sent.push((in_port, actions.to_vec(), frame.to_vec()));
        Ok(())
    }
}

/// Serves connections one after the other until the test ends; returns the port.
fn listener(sw: Arc<Mutex<TestSwitch>>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut s = Session::new();
            let mut buf = [0u8; 4096];
            loop {
                if c.write_all(&s.output()).is_err() || s.closed().is_some() {
                    break;
                }
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => s.input(&buf[..n], &mut *sw.lock().unwrap()),
                }
            }
        }
    });
    port
}

fn setup() -> (Arc<Mutex<TestSwitch>>, String) {
    let sw = Arc::new(Mutex::new(TestSwitch {
        table: Classifier::new(1000),
        sent: Vec::new(),
        meters: Vec::new(),
    }));
    let port = listener(sw.clone());
    (sw, format!("tcp:127.0.0.1:{port}"))
}

fn ofctl(args: &[&str]) -> String {
    let out = Command::new("ovs-ofctl")
        .args(["-O", "OpenFlow13"])
        .args(args)
        .output()
        .expect("ovs-ofctl (openvswitch-common; scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "ovs-ofctl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// ovs-ofctl's own text of `flow` (what dump-flows prints of its match and actions).
fn canonical(flow: &str) -> String {
    let out = ofctl(&["parse-flow", flow]);
    let line = out.lines().find(|l| l.contains("OFPT_FLOW_MOD")).unwrap();
    line.split_once(": ADD ").unwrap().1.trim().to_owned()
}

/// The match-and-actions part of each dump-flows line.
fn dumped(target: &str) -> Vec<String> {
    ofctl(&["dump-flows", target])
        .lines()
        .filter(|l| l.contains("actions="))
        .map(|l| {
            let fields: Vec<&str> = l.trim().split(", ").collect();
            let keep: Vec<&str> = fields
                .into_iter()
                .filter(|f| {
                    ![
                        "cookie=",
                        "duration=",
                        "table=",
                        "n_packets=",
                        "n_bytes=",
                        "idle_age=",
                        "hard_age=",
                    ]
                    .iter()
                    .any(|p| f.starts_with(p))
                })
                .collect();
            keep.join(", ")
        })
        .collect()
}

const FLOWS: [&str; 7] = [
    "priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop",
    "priority=100,ip,nw_src=10.0.0.0/8,actions=normal",
    "priority=300,in_port=1,dl_vlan=10,actions=pop_vlan,output:2",
    "priority=50,udp,tp_src=0x1000/0xf000,nw_tos=184,actions=mod_nw_tos:0,normal",
    "priority=60,tcp6,ipv6_dst=2001:db8::/32,tp_dst=443,actions=dec_ttl,normal",
    "priority=70,tcp,tcp_flags=+syn-ack,actions=meter:1,normal",
    "priority=80,arp,arp_op=1,arp_tpa=10.0.0.1,actions=set_field:02:00:00:00:00:09->eth_src,in_port",
];

#[test]
fn flows_added_by_ovs_ofctl_dump_as_it_writes_them() {
    let (sw, target) = setup();
    // A rule below names meter 1: the switch has it.
    ofctl(&[
        "add-meter",
        &target,
        "meter=1,kbps,band=type=drop,rate=1000",
    ]);
    for f in FLOWS {
        ofctl(&["add-flow", &target, f]);
    }
    assert_eq!(sw.lock().unwrap().table.len(), FLOWS.len());
    let mut want: Vec<String> = FLOWS.iter().map(|f| canonical(f)).collect();
    let mut got = dumped(&target);
    want.sort();
    got.sort();
    assert_eq!(got, want);

    // Adding the same match and priority replaces; mod-flows changes actions of the rules
    // within its match; del-flows removes only those.
    ofctl(&[
        "add-flow",
        &target,
        "priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=normal",
    ]);
    assert_eq!(sw.lock().unwrap().table.len(), FLOWS.len());
    ofctl(&["mod-flows", &target, "tcp,actions=output:1"]);
    let after = dumped(&target);
    let tcp: Vec<&String> = after.iter().filter(|l| l.contains("tcp,")).collect();
    assert_eq!(tcp.len(), 2, "{after:?}");
    assert!(
        tcp.iter().all(|l| l.ends_with("actions=output:1")),
        "{after:?}"
    );
    assert!(
        after
            .iter()
            .any(|l| l.contains("tcp6") && l.ends_with("actions=dec_ttl,NORMAL")),
        "{after:?}"
    );
    ofctl(&[
        "--strict",
        "del-flows",
        &target,
        "priority=100,ip,nw_src=10.0.0.0/8",
    ]);
    ofctl(&["del-flows", &target, "tcp"]);
    let left = dumped(&target);
    assert_eq!(left.len(), FLOWS.len() - 3, "{left:?}");
    assert!(
        !left
            .iter()
            .any(|l| l.contains("tcp,") || l.contains("nw_src=10.0.0.0/8")),
        "{left:?}"
    );
    let agg = ofctl(&["dump-aggregate", &target]);
    assert!(
        agg.contains(&format!("flow_count={}", FLOWS.len() - 3)),
        "{agg}"
    );
    ofctl(&["del-flows", &target]);
    assert!(dumped(&target).is_empty());
}

#[test]
fn tunnel_actions_from_ovs_ofctl_read_and_dump_back() {
    // Open vSwitch's flow-based tunnel (issue 17): tun_id is OXM TUNNEL_ID, tun_dst and
    // tun_ipv6_dst are Nicira NXM_1 fields; output:65279 is nvo's tunnel port.
    let (sw, target) = setup();
    let flows = [
        "priority=300,in_port=1,actions=set_field:0x64->tun_id,set_field:10.100.0.2->tun_dst,output:65279",
        "priority=301,in_port=1,actions=set_field:0xc8->tun_id,set_field:2001:db8::2->tun_ipv6_dst,output:65279",
    ];
    for f in flows {
        ofctl(&["add-flow", &target, f]);
    }
    let actions: Vec<Vec<Action>> = sw
        .lock()
        .unwrap()
        .table
        .rules()
        .into_iter()
        .map(|(_, r, _)| r.actions.clone())
        .collect();
    let tunnel = |key, dst: &str| {
        vec![
            Action::SetTunnelKey(key),
            Action::SetTunnelDst(dst.parse().unwrap()),
            Action::Output(65279),
        ]
    };
    assert!(actions.contains(&tunnel(0x64, "10.100.0.2")), "{actions:?}");
    assert!(
        actions.contains(&tunnel(0xc8, "2001:db8::2")),
        "{actions:?}"
    );
    let mut want: Vec<String> = flows.iter().map(|f| canonical(f)).collect();
    let mut got = dumped(&target);
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn show_ports_tables_and_packet_out() {
    let (sw, target) = setup();
    let show = ofctl(&["show", &target]);
    assert!(show.contains("dpid:0000020000000001"), "{show}");
    assert!(show.contains("1(c-red1): addr:02:00:00:00:00:01"), "{show}");
    assert!(show.contains("2(trunk0): addr:02:00:00:00:00:02"), "{show}");
    assert!(show.contains("LINK_DOWN"), "{show}");
    let ports = ofctl(&["dump-ports", &target]);
    assert!(ports.contains("port  2: rx pkts=20"), "{ports}");
    assert!(ports.contains("bytes=2000"), "{ports}");
    let one = ofctl(&["dump-ports", &target, "1"]);
    assert!(
        one.contains("port  1: rx pkts=10") && !one.contains("port  2"),
        "{one}"
    );
    ofctl(&["add-flow", &target, "actions=normal"]);
    let tables = ofctl(&["dump-tables", &target]);
    assert!(tables.contains("active=1"), "{tables}");
    ofctl(&[
        "packet-out",
        &target,
        "in_port=controller packet=ffffffffffff020000000001080600 actions=output:1",
    ]);
    let sent = sw.lock().unwrap().sent.clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, port::CONTROLLER);
    assert_eq!(sent[0].1, vec![Action::Output(1)]);
    assert_eq!(sent[0].2[..6], [0xff; 6]);
}

#[test]
fn meters_added_and_deleted_by_ovs_ofctl() {
    let (sw, target) = setup();
    ofctl(&[
        "add-meter",
        &target,
        "meter=1,kbps,band=type=drop,rate=100000",
    ]);
    ofctl(&[
        "add-meter",
        &target,
        "meter=2,kbps,burst,band=type=drop,rate=8000,burst_size=512",
    ]);
    ofctl(&["del-meter", &target, "meter=1"]);
    let got = sw.lock().unwrap().meters.clone();
    assert_eq!(
        got,
        [
            MeterMod::Add {
                id: 1,
                rate: 100_000_000,
                burst: None
            },
            MeterMod::Add {
                id: 2,
                rate: 8_000_000,
                burst: Some(512 * 1000 / 8)
            },
            MeterMod::Delete { id: 1 },
        ]
    );
    // A rule names meter 2 (the METER instruction, back in dump-flows); meter 9 does not exist.
    ofctl(&["add-flow", &target, "tcp,actions=meter:2,normal"]);
    let flows = dumped(&target);
    assert!(flows.iter().any(|f| f.contains("meter:2")), "{flows:?}");
    let out = Command::new("ovs-ofctl")
        .args([
            "-O",
            "OpenFlow13",
            "add-flow",
            &target,
            "udp,actions=meter:9,normal",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("OFPMMFC_UNKNOWN_METER"),
        "{err}"
    );
    // Packets per second and DSCP remarking are no nvo meter: refused, nothing recorded.
    for spec in [
        "meter=3,pktps,band=type=drop,rate=1000",
        "meter=3,kbps,band=type=dscp_remark,rate=1000,prec_level=1",
    ] {
        let out = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", "add-meter", &target, spec])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("OFPMMFC_BAD_"),
            "{spec}: {err}"
        );
    }
    assert_eq!(sw.lock().unwrap().meters.len(), 3);
}

/// Sends `bytes` after the hello exchange and returns the error (type, code) pairs that come
/// back before the connection goes quiet.
fn errors_for(target: &str, bytes: &[u8]) -> Vec<(u16, u16)> {
    let addr = target.strip_prefix("tcp:").unwrap();
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    c.write_all(&[4, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    c.write_all(bytes).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut all = Vec::new();
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    let mut at = 0;
    while at + 8 <= all.len() {
        let len = usize::from(u16::from_be_bytes([all[at + 2], all[at + 3]]));
        if all[at + 1] == 1 && at + 12 <= all.len() {
            let t = u16::from_be_bytes([all[at + 8], all[at + 9]]);
            let code = u16::from_be_bytes([all[at + 10], all[at + 11]]);
            got.push((t, code));
        }
        at += len.max(8);
    }
    got
}

#[test]
fn malformed_messages_get_errors_and_the_switch_keeps_serving() {
    let (_sw, target) = setup();
    // An unknown type, a FLOW_MOD cut short, a multipart of an unknown kind, a FLOW_MOD with
    // a match TLV running past its end, an experimenter message.
    let mut bad = Vec::new();
    bad.extend_from_slice(&[4, 99, 0, 8, 0, 0, 0, 2]);
    bad.extend_from_slice(&[4, 14, 0, 16, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0]);
    bad.extend_from_slice(&[4, 18, 0, 16, 0, 0, 0, 4, 0x77, 0x77, 0, 0, 0, 0, 0, 0]);
    let mut fm = vec![4, 14, 0, 0, 0, 0, 0, 5];
    fm.extend_from_slice(&[0; 16]); // cookie, mask
    fm.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x80, 0]); // table, ADD, timeouts, priority
    fm.extend_from_slice(&[0xff; 12]); // buffer, out_port, out_group
    fm.extend_from_slice(&[0, 0, 0, 0]); // flags, pad
    fm.extend_from_slice(&[0, 1, 0, 12, 0x80, 0, 10, 2, 8, 0, 0, 0]); // TLV says 2, match says 12
    let len = fm.len() as u16;
    fm[2..4].copy_from_slice(&len.to_be_bytes());
    bad.extend_from_slice(&fm);
    bad.extend_from_slice(&[4, 4, 0, 16, 0, 0, 0, 6, 0, 0, 0x23, 0x20, 0, 0, 0, 1]);
    let errors = errors_for(&target, &bad);
    assert_eq!(
        errors,
        vec![(1, 1), (1, 6), (1, 2), (4, 1), (1, 3)],
        "BAD_TYPE, BAD_LEN, BAD_MULTIPART, MATCH BAD_LEN, BAD_EXPERIMENTER"
    );
    // A wrong version after the hello.
    assert_eq!(errors_for(&target, &[1, 2, 0, 8, 0, 0, 0, 9]), vec![(1, 0)]);
    // 64 KiB of one garbage message (a valid length, an unknown type), then a length below
    // the header's: one error each, and that connection is closed.
    let mut flood = vec![4, 200, 0xff, 0xff, 0, 0, 0, 7];
    flood.resize(0xffff, 0xab);
    flood.extend_from_slice(&[4, 2, 0, 4, 0, 0, 0, 8]);
    assert_eq!(errors_for(&target, &flood), vec![(1, 1), (1, 6)]);
    // An incompatible hello (1.0 only) is refused.
    assert_eq!(
        errors_for(&target, &[1, 0, 0, 8, 0, 0, 0, 1]).first(),
        Some(&(0, 0))
    );
    // And ovs-ofctl is still served.
    ofctl(&["add-flow", &target, "priority=5,actions=normal"]);
    assert_eq!(
        dumped(&target),
        vec!["priority=5 actions=NORMAL".to_owned()]
    );
}
