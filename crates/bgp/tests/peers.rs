//! nvo's BGP session against real route reflectors: GoBGP (`gobgpd`) and FRR (`bgpd -Z`),
//! each in its own network namespace, reached over a veth. Needs root (skips, saying so,
//! otherwise) and the daemons installed (`gobgpd`, `gobgp`, `/usr/lib/frr/bgpd`, `vtysh`).
//!
//! ```text
//!  netns nvo-bgpXa-PID (this test thread,         netns nvo-bgpXb-PID
//!                       the session tasks)
//!  ┌──────────────────────────────────────┐       ┌──────────────────────────────────┐
//!  │ session 1: 10.77.0.1 ─┐              │       │ gobgpd or bgpd -Z, AS 65000       │
//!  │ session 2: 10.77.0.3 ─┴─ va ─────────┼─veth──┼─ vb 10.77.0.2 (router id)         │
//!  └──────────────────────────────────────┘       │ route reflector, l2vpn evpn,      │
//!                                                 │ both sessions are its clients     │
//!                                                 └──────────────────────────────────┘
//! ```
//!
//! Each test: the session comes up; it announces a type-2 and a type-3 route and the
//! reflector's RIB shows them; the reflector's own route (GoBGP: injected with the CLI; FRR:
//! announced by session 2 and reflected) arrives as an `Update` with MAC, VNI, next hop and
//! route target; the withdraw removes our routes from the reflector's RIB.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nvo_bgp::attribute::PMSI_INGRESS_REPLICATION;
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::session::{self, RouteAttrs, SessionConfig, SessionEvent, SessionHandle};
use nvo_bgp::*;
use nvo_io::netns::{self, unique_name, NamedNetns};
use tokio::sync::mpsc;
use tokio::time::{sleep, timeout, Instant};

const AS: u32 = 65000;
const CLIENT1: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const REFLECTOR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const CLIENT2: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 3);
const VNI: u32 = 10100;
const MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x00, 0x53, 0x01];
const MAC_TEXT: &str = "02:00:5e:00:53:01";
const WAIT: Duration = Duration::from_secs(15);

fn is_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Two namespaces, a veth, a scratch directory and the daemons: all removed on drop, daemons
/// killed by pid first.
struct Lab {
    a: NamedNetns,
    b: NamedNetns,
    dir: PathBuf,
    daemons: Vec<Child>,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let a = NamedNetns::create(&unique_name(&format!("{tag}a"))).expect("ip netns add");
        let b = NamedNetns::create(&unique_name(&format!("{tag}b"))).expect("ip netns add");
        let dir = std::env::temp_dir().join(unique_name(tag));
        let lab = Lab {
            a,
            b,
            dir,
            daemons: Vec::new(),
        };
        fs::create_dir_all(&lab.dir).unwrap();
        let b_name = lab.b.name().to_string();
        lab.a
            .ip(&[
                "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b_name,
            ])
            .unwrap();
        for (ns, dev, addrs) in [
            (&lab.a, "va", &["10.77.0.1/24", "10.77.0.3/24"][..]),
            (&lab.b, "vb", &["10.77.0.2/24"][..]),
        ] {
            for addr in addrs {
                ns.ip(&["addr", "add", addr, "dev", dev]).unwrap();
            }
            ns.ip(&["link", "set", "lo", "up"]).unwrap();
            ns.ip(&["link", "set", dev, "up"]).unwrap();
        }
        lab
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// Starts a daemon in the reflector's namespace, in the foreground, output to a log file.
    fn spawn(&mut self, program: &str, args: &[&str]) {
        let log = fs::File::create(self.dir.join(format!("{}.log", self.daemons.len()))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", self.b.name(), program])
            .args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        self.daemons.push(child);
    }

    /// Runs a command in the reflector's namespace and returns its standard output.
    fn exec(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", self.b.name()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn logs(&self) -> String {
        (0..self.daemons.len())
            .map(|i| fs::read_to_string(self.dir.join(format!("{i}.log"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in &mut self.daemons {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
        // The namespaces (and the veth) go when the fields drop.
    }
}

fn config(client: Ipv4Addr) -> SessionConfig {
    SessionConfig {
        local_as: AS,
        router_id: client,
        peer: SocketAddr::new(IpAddr::V4(REFLECTOR), 179),
        peer_as: AS,
        hold_time: 9,
        connect_retry: Duration::from_secs(1),
        passive: false,
        graceful_restart: Some(120),
        restarting: false,
        local_addr: Some(IpAddr::V4(client)),
        auth: Default::default(),
    }
}

fn rd(client: Ipv4Addr) -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 {
        addr: client,
        value: 2,
    }
}

fn type2(client: Ipv4Addr, mac: [u8; 6]) -> EvpnRoute {
    EvpnRoute::MacIp(MacIpRoute {
        rd: rd(client),
        esi: [0; 10],
        ethernet_tag: 0,
        mac,
        ip: Some(IpAddr::V4(Ipv4Addr::new(192, 168, 10, 1))),
        label1: VNI,
        label2: None,
    })
}

fn type3(client: Ipv4Addr) -> EvpnRoute {
    EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
        rd: rd(client),
        ethernet_tag: 0,
        originator: IpAddr::V4(client),
    })
}

fn route_target() -> ExtendedCommunity {
    ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
        asn: 65000,
        value: VNI,
    })
}

fn attrs(client: Ipv4Addr, pmsi: bool) -> RouteAttrs {
    RouteAttrs {
        next_hop: IpAddr::V4(client),
        communities: vec![
            route_target(),
            ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN),
        ],
        pmsi: pmsi.then(|| PmsiTunnel {
            flags: 0,
            tunnel_type: PMSI_INGRESS_REPLICATION,
            label: VNI,
            tunnel_id: client.octets().to_vec(),
        }),
        originator_id: None,
        cluster_list: vec![],
        local_pref: None,
    }
}

/// Announces our type-2 and type-3 routes and our End-of-RIB.
fn announce_ours(handle: &SessionHandle, client: Ipv4Addr, mac: [u8; 6]) {
    let cfg = config(client);
    let t2 = session::announce(&cfg, &[type2(client, mac)], &attrs(client, false)).unwrap();
    let t3 = session::announce(&cfg, &[type3(client)], &attrs(client, true)).unwrap();
    handle.send_update(t2).unwrap();
    handle.send_update(t3).unwrap();
    handle.send_end_of_rib().unwrap();
}

fn withdraw_ours(handle: &SessionHandle, client: Ipv4Addr, mac: [u8; 6]) {
    let update = session::withdraw(&[type2(client, mac), type3(client)]).unwrap();
    handle.send_update(update).unwrap();
}

/// Runs `f` on a single-threaded runtime on this thread, inside namespace `ns`.
fn in_namespace<F: std::future::Future<Output = ()>>(ns: &NamedNetns, f: impl FnOnce() -> F) {
    let _inside = netns::enter(ns.name()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(f());
}

/// Waits for an event matching `want` on `events`, within [`WAIT`].
async fn wait_event(
    events: &mut mpsc::Receiver<(usize, SessionEvent)>,
    lab: &Lab,
    what: &str,
    mut want: impl FnMut(&SessionEvent) -> bool,
) -> SessionEvent {
    let deadline = Instant::now() + WAIT;
    loop {
        match timeout(
            deadline.saturating_duration_since(Instant::now()),
            events.recv(),
        )
        .await
        {
            Ok(Some((_, event))) if want(&event) => return event,
            Ok(Some(_)) => continue,
            _ => panic!("no {what} within {WAIT:?}; daemon log:\n{}", lab.logs()),
        }
    }
}

/// Polls the reflector's RIB (as text) until `want` holds, within [`WAIT`].
async fn wait_rib(lab: &Lab, what: &str, rib: impl Fn() -> String, want: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT;
    let mut last = String::new();
    while Instant::now() < deadline {
        last = rib();
        if want(&last) {
            return;
        }
        sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "{what}: reflector rib was:\n{last}\ndaemon log:\n{}",
        lab.logs()
    );
}

/// The route with `mac` from an `Update` event, with its attributes.
fn reached(event: &SessionEvent, mac: [u8; 6]) -> Option<(MacIpRoute, RouteAttrs)> {
    let SessionEvent::Update { reach, .. } = event else {
        return None;
    };
    reach.iter().find_map(|(route, attrs)| match route {
        EvpnRoute::MacIp(m) if m.mac == mac => Some((m.clone(), attrs.clone())),
        _ => None,
    })
}

const GOBGP_CONF: &str = r#"
[global.config]
  as = 65000
  router-id = "10.77.0.2"

[[neighbors]]
  [neighbors.config]
    neighbor-address = "10.77.0.1"
    peer-as = 65000
  [neighbors.timers.config]
    connect-retry = 1
  [neighbors.route-reflector.config]
    route-reflector-client = true
    route-reflector-cluster-id = "10.77.0.2"
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "l2vpn-evpn"
"#;

#[test]
fn gobgp_route_reflector() {
    if !is_root() {
        eprintln!("skipping gobgp_route_reflector: needs root for network namespaces");
        return;
    }
    let mut lab = Lab::new("bgpg");
    let conf = lab.file("gobgpd.toml", GOBGP_CONF);
    lab.spawn(
        "gobgpd",
        &[
            "-f",
            &conf,
            "-t",
            "toml",
            "-p",
            "--pprof-disable",
            "--api-hosts",
            "127.0.0.1:50051",
        ],
    );
    let rib = || lab.exec(&["gobgp", "global", "rib", "-a", "evpn", "-j"]);
    in_namespace(&lab.a, || async {
        let (tx, mut events) = mpsc::channel(256);
        let handle = session::spawn(config(CLIENT1), 0, tx);
        let up = wait_event(&mut events, &lab, "established", |e| {
            matches!(e, SessionEvent::Established { .. })
        })
        .await;
        let SessionEvent::Established { peer_id, .. } = up else {
            unreachable!()
        };
        assert_eq!(peer_id, REFLECTOR);

        announce_ours(&handle, CLIENT1, MAC);
        wait_rib(&lab, "our type 2 and 3 in gobgp", rib, |r| {
            r.contains(MAC_TEXT) && r.contains("10.77.0.1:2") && r.contains("multicast")
        })
        .await;

        // A route injected at the reflector reaches us with its MAC, VNI, next hop and RT.
        let mac2 = [0x02, 0x00, 0x5e, 0x00, 0x53, 0x99];
        lab.exec(&[
            "gobgp",
            "global",
            "rib",
            "-a",
            "evpn",
            "add",
            "macadv",
            "02:00:5e:00:53:99",
            "192.168.10.99",
            "etag",
            "0",
            "label",
            "10200",
            "rd",
            "10.77.0.2:9",
            "rt",
            "65000:10200",
            "encap",
            "vxlan",
            "nexthop",
            "10.77.0.2",
        ]);
        let event = wait_event(&mut events, &lab, "the injected route", |e| {
            reached(e, mac2).is_some()
        })
        .await;
        let (route, got) = reached(&event, mac2).unwrap();
        assert_eq!(route.vni(), 10200);
        assert_eq!(route.ip, Some(IpAddr::V4(Ipv4Addr::new(192, 168, 10, 99))));
        assert_eq!(got.next_hop, IpAddr::V4(REFLECTOR));
        assert!(got.communities.contains(&ExtendedCommunity::RouteTarget(
            RouteTarget::TwoOctetAs {
                asn: 65000,
                value: 10200
            }
        )));
        assert!(got
            .communities
            .contains(&ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN)));

        withdraw_ours(&handle, CLIENT1, MAC);
        wait_rib(&lab, "our routes withdrawn from gobgp", rib, |r| {
            !r.contains(MAC_TEXT) && !r.contains("10.77.0.1:2")
        })
        .await;
        let stats = handle.stats();
        assert_eq!(stats.treat_as_withdraw, 0);
        handle.stop().await;
    });
}

fn frr_conf() -> String {
    let mut conf = String::from(
        "hostname rr\n\
         router bgp 65000\n \
         bgp router-id 10.77.0.2\n \
         no bgp default ipv4-unicast\n \
         no bgp ebgp-requires-policy\n \
         bgp cluster-id 10.77.0.2\n",
    );
    for client in [CLIENT1, CLIENT2] {
        conf +=
            &format!(" neighbor {client} remote-as 65000\n neighbor {client} timers connect 1\n");
    }
    conf += " address-family l2vpn evpn\n";
    for client in [CLIENT1, CLIENT2] {
        conf +=
            &format!("  neighbor {client} activate\n  neighbor {client} route-reflector-client\n");
    }
    conf += " exit-address-family\n";
    conf
}

#[test]
fn frr_route_reflector() {
    if !is_root() {
        eprintln!("skipping frr_route_reflector: needs root for network namespaces");
        return;
    }
    let mut lab = Lab::new("bgpf");
    let conf = lab.file("bgpd.conf", &frr_conf());
    let dir = lab.dir.to_string_lossy().into_owned();
    let chown = Command::new("chown")
        .args(["-R", "frr:frr", &dir])
        .status()
        .unwrap();
    assert!(chown.success());
    let pid = format!("{dir}/bgpd.pid");
    let zserv = format!("{dir}/zserv.api");
    lab.spawn(
        "/usr/lib/frr/bgpd",
        &[
            "-Z",
            "-f",
            &conf,
            "-i",
            &pid,
            "-z",
            &zserv,
            "--vty_socket",
            &dir,
            "-u",
            "frr",
            "-g",
            "frr",
        ],
    );
    let rib = || {
        lab.exec(&[
            "vtysh",
            "--vty_socket",
            &dir,
            "-c",
            "show bgp l2vpn evpn json",
        ])
    };
    in_namespace(&lab.a, || async {
        let (tx, mut events) = mpsc::channel(256);
        let handle = session::spawn(config(CLIENT1), 1, tx.clone());
        let other = session::spawn(config(CLIENT2), 2, tx);
        for _ in 0..2 {
            wait_event(&mut events, &lab, "established", |e| {
                matches!(e, SessionEvent::Established { .. })
            })
            .await;
        }

        announce_ours(&handle, CLIENT1, MAC);
        wait_rib(&lab, "our type 2 and 3 in frr", rib, |r| {
            r.contains(MAC_TEXT) && r.contains("[3]:[0]:[32]:[10.77.0.1]")
        })
        .await;

        // Session 2's route, reflected to session 1 with the reflector's attributes.
        let mac2 = [0x02, 0x00, 0x5e, 0x00, 0x53, 0x77];
        announce_ours(&other, CLIENT2, mac2);
        let event = wait_event(&mut events, &lab, "the reflected route", |e| {
            reached(e, mac2).is_some()
        })
        .await;
        let (route, got) = reached(&event, mac2).unwrap();
        assert_eq!(route.vni(), VNI);
        assert_eq!(route.rd, rd(CLIENT2));
        assert_eq!(got.next_hop, IpAddr::V4(CLIENT2));
        assert!(got.communities.contains(&route_target()));
        assert_eq!(got.originator_id, Some(CLIENT2));
        assert_eq!(got.cluster_list, vec![REFLECTOR]);

        withdraw_ours(&handle, CLIENT1, MAC);
        wait_rib(&lab, "our routes withdrawn from frr", rib, |r| {
            !r.contains(MAC_TEXT) && !r.contains("[3]:[0]:[32]:[10.77.0.1]")
        })
        .await;
        // Session 1 hears the withdraw of session 2's route when session 2 stops.
        other.stop().await;
        wait_event(&mut events, &lab, "the reflected withdraw", |e| {
            matches!(e, SessionEvent::Update { withdraw, .. }
                if withdraw.iter().any(|r| matches!(r, EvpnRoute::MacIp(m) if m.mac == mac2)))
        })
        .await;
        handle.stop().await;
    });
}
