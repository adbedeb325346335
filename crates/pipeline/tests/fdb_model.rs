//! Differential test of the pipeline's FDB and forwarding against a deliberately naive model (in
//! the manner of WireGuard's allowedips selftest): one flat `Vec` of entries, linear scans, no
//! counters kept apart from the entries, every rule of docs/design/dataplane.md written out
//! plainly. Random sequences of frames (learning), static adds, removals, flushes, port
//! detach/attach, clock advances and ageing run through both; after every step the FDB of every
//! network, the learning counters and the forwarding decision must agree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use common::{frame, ip, mac, plain, vxlan, ReceiveVxlan};
use nvo_pipeline::{
    Action, Actions, DropReason, FdbDest, FlushScope, Limits, Mac, NetworkSpec, Origin, Pipeline,
    PortId, TableError, Vni,
};
use proptest::prelude::*;

const MAX_STATIC: usize = 2;

/// (vni, learning, max_learned, ageing in seconds, flood list indexes)
const NETS: [(u32, bool, u32, u64, &[usize]); 3] = [
    (1, true, 3, 10, &[0, 1]),
    (2, true, 2, 4, &[0]),
    (3, false, 3, 10, &[]),
];
/// (port, vni) in the order they are first attached.
const PORTS: [(u32, u32); 5] = [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)];

fn remote(i: usize) -> IpAddr {
    [ip("192.0.2.1"), ip("192.0.2.2"), ip("2001:db8::3")][i]
}

/// A MAC from the pool, or broadcast for index 5.
fn pool_mac(i: u8) -> Mac {
    if i >= 5 {
        Mac::BROADCAST
    } else {
        mac(i + 1)
    }
}

#[derive(Debug, Clone)]
enum Op {
    FromPort {
        port: usize,
        src: u8,
        dst: u8,
    },
    FromUnderlay {
        net: usize,
        remote: usize,
        src: u8,
        dst: u8,
        dont_learn: bool,
    },
    AddStatic {
        net: usize,
        mac: u8,
        to_port: Option<usize>,
        remote: usize,
    },
    Remove {
        net: usize,
        mac: u8,
    },
    Flush {
        net: usize,
        all: bool,
    },
    Advance {
        secs: u64,
    },
    Age,
    TogglePort {
        port: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..5usize, 0..5u8, 0..6u8).prop_map(|(port, src, dst)| Op::FromPort { port, src, dst }),
        4 => (0..3usize, 0..3usize, 0..5u8, 0..6u8, any::<bool>()).prop_map(
            |(net, remote, src, dst, dont_learn)| Op::FromUnderlay { net, remote, src, dst, dont_learn }
        ),
        2 => (0..3usize, 0..5u8, proptest::option::of(0..5usize), 0..3usize)
            .prop_map(|(net, mac, to_port, remote)| Op::AddStatic { net, mac, to_port, remote }),
        1 => (0..3usize, 0..5u8).prop_map(|(net, mac)| Op::Remove { net, mac }),
        1 => (0..3usize, any::<bool>()).prop_map(|(net, all)| Op::Flush { net, all }),
        2 => (0..7u64).prop_map(|secs| Op::Advance { secs }),
        2 => Just(Op::Age),
        1 => (0..5usize).prop_map(|port| Op::TogglePort { port }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    vni: Vni,
    mac: Mac,
    dest: FdbDest,
    is_static: bool,
    seen: Duration,
}

/// The naive reference.
#[derive(Debug, Default)]
struct Model {
    entries: Vec<Entry>,
    /// Attached ports in attach order.
    ports: Vec<(PortId, Vni)>,
    now: Duration,
    /// Per network: learned, moves, learn_limit, aged.
    counts: [[u64; 4]; 3],
}

impl Model {
    fn net_index(vni: Vni) -> usize {
        NETS.iter().position(|n| n.0 == vni.0).unwrap()
    }

    fn find(&self, vni: Vni, mac: Mac) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.vni == vni && e.mac == mac)
    }

    fn learn(&mut self, vni: Vni, mac: Mac, dest: FdbDest) {
        let n = Model::net_index(vni);
        let (_, learning, max_learned, _, _) = NETS[n];
        if !learning {
            return;
        }
        if let Some(i) = self.find(vni, mac) {
            let e = &mut self.entries[i];
            // Sticky: a MAC learned on a port is not taken by a tunnel while it lives.
            let sticky = matches!(e.dest, FdbDest::Port(_)) && !matches!(dest, FdbDest::Port(_));
            if !e.is_static && !sticky {
                e.seen = self.now;
                if e.dest != dest {
                    e.dest = dest;
                    self.counts[n][1] += 1;
                }
            }
            return;
        }
        let learned = self
            .entries
            .iter()
            .filter(|e| e.vni == vni && !e.is_static)
            .count();
        if learned >= max_learned as usize {
            self.counts[n][2] += 1;
            return;
        }
        self.entries.push(Entry {
            vni,
            mac,
            dest,
            is_static: false,
            seen: self.now,
        });
        self.counts[n][0] += 1;
    }

    fn ports_of(&self, vni: Vni) -> Vec<PortId> {
        self.ports
            .iter()
            .filter(|p| p.1 == vni)
            .map(|p| p.0)
            .collect()
    }

    fn port_frame(&mut self, port: PortId, src: Mac, dst: Mac) -> Vec<Action> {
        let Some(&(_, vni)) = self.ports.iter().find(|p| p.0 == port) else {
            return vec![Action::Drop(DropReason::UnknownPort)];
        };
        self.learn(vni, src, FdbDest::Port(port));
        match self.find(vni, dst).map(|i| self.entries[i].dest) {
            Some(FdbDest::Port(p)) if p == port => vec![Action::Drop(DropReason::Hairpin)],
            Some(FdbDest::Port(p)) => vec![Action::Deliver { port: p }],
            Some(FdbDest::Remote(r)) => vec![Action::Encap {
                remote: r,
                vni,
                entropy: 0,
                profile: nvo_pipeline::ProfileTag::VXLAN,
            }],
            Some(FdbDest::Node(node)) => vec![Action::EncapNode {
                node,
                vni,
                entropy: 0,
                profile: nvo_pipeline::ProfileTag::VXLAN,
            }],
            None => {
                let mut out: Vec<Action> = self
                    .ports_of(vni)
                    .into_iter()
                    .filter(|&p| p != port)
                    .map(|port| Action::Deliver { port })
                    .collect();
                let flood = NETS[Model::net_index(vni)].4;
                out.extend(flood.iter().map(|&i| Action::Encap {
                    remote: remote(i),
                    vni,
                    entropy: 0,
                    profile: nvo_pipeline::ProfileTag::VXLAN,
                }));
                if out.is_empty() {
                    out.push(Action::Drop(DropReason::NoDestination));
                }
                out
            }
        }
    }

    fn underlay_frame(
        &mut self,
        vni: Vni,
        from: IpAddr,
        src: Mac,
        dst: Mac,
        dont_learn: bool,
    ) -> Vec<Action> {
        // accept_remotes: every network here is head-end, so `known`: its flood list and the
        // remotes of its static entries.
        let listed = NETS[Model::net_index(vni)]
            .4
            .iter()
            .any(|&i| remote(i) == from);
        let pinned = self
            .entries
            .iter()
            .any(|e| e.vni == vni && e.is_static && e.dest == FdbDest::Remote(from));
        if !listed && !pinned {
            return vec![Action::Drop(DropReason::UnknownRemote)];
        }
        if !dont_learn {
            self.learn(vni, src, FdbDest::Remote(from));
        }
        match self.find(vni, dst).map(|i| self.entries[i].dest) {
            Some(FdbDest::Port(p)) => vec![Action::Deliver { port: p }],
            Some(FdbDest::Remote(_) | FdbDest::Node(_)) => {
                vec![Action::Drop(DropReason::RemoteToRemote)]
            }
            None => {
                let out: Vec<Action> = self
                    .ports_of(vni)
                    .into_iter()
                    .map(|port| Action::Deliver { port })
                    .collect();
                if out.is_empty() {
                    vec![Action::Drop(DropReason::NoDestination)]
                } else {
                    out
                }
            }
        }
    }

    fn add_static(&mut self, vni: Vni, mac: Mac, dest: FdbDest) -> Result<(), TableError> {
        if let FdbDest::Port(port) = dest {
            match self.ports.iter().find(|p| p.0 == port) {
                None => return Err(TableError::NoSuchPort(port)),
                Some(&(_, pv)) if pv != vni => {
                    return Err(TableError::PortInOtherNetwork {
                        port,
                        vni,
                        port_vni: pv,
                    })
                }
                Some(_) => {}
            }
        }
        let existing = self.find(vni, mac);
        let is_static = existing.is_some_and(|i| self.entries[i].is_static);
        let statics = self
            .entries
            .iter()
            .filter(|e| e.vni == vni && e.is_static)
            .count();
        if !is_static && statics >= MAX_STATIC {
            return Err(TableError::TableFull {
                table: "static fdb",
                limit: MAX_STATIC,
            });
        }
        if let Some(i) = existing {
            self.entries.remove(i);
        }
        self.entries.push(Entry {
            vni,
            mac,
            dest,
            is_static: true,
            seen: self.now,
        });
        Ok(())
    }

    fn age(&mut self) -> usize {
        let now = self.now;
        let before = self.entries.len();
        let mut aged = [0u64; 3];
        self.entries.retain(|e| {
            let n = Model::net_index(e.vni);
            let keep = e.is_static || now - e.seen <= Duration::from_secs(NETS[n].3);
            if !keep {
                aged[n] += 1;
            }
            keep
        });
        for (n, a) in aged.iter().enumerate() {
            self.counts[n][3] += a;
        }
        before - self.entries.len()
    }

    /// The FDB of one network as `fdb_entries` shows it.
    fn view(&self, vni: Vni) -> Vec<(Mac, FdbDest, Origin, Duration)> {
        let mut v: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.vni == vni)
            .map(|e| {
                if e.is_static {
                    (e.mac, e.dest, Origin::Static, Duration::ZERO)
                } else {
                    (e.mac, e.dest, Origin::Learned, self.now - e.seen)
                }
            })
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }
}

fn build() -> (Pipeline, Model) {
    let limits = Limits {
        max_static_fdb: MAX_STATIC,
        ..Limits::default()
    };
    let mut p = Pipeline::new(limits);
    for (vni, learning, max_learned, ageing, flood) in NETS {
        let spec = NetworkSpec {
            learn_ports: learning,
            learn_tunnels: learning,
            max_learned,
            ageing: Duration::from_secs(ageing),
            ..NetworkSpec::new(Vni(vni))
        };
        p.add_network(spec).unwrap();
        for &i in flood {
            p.flood_add(Vni(vni), remote(i)).unwrap();
        }
    }
    let mut m = Model::default();
    for (port, vni) in PORTS {
        p.add_port(PortId(port), Vni(vni)).unwrap();
        m.ports.push((PortId(port), Vni(vni)));
    }
    (p, m)
}

/// Applies one operation to both; panics where they disagree on the operation's own result.
fn step(p: &mut Pipeline, m: &mut Model, base: Instant, op: &Op, a: &mut Actions) {
    let vni_of = |net: usize| Vni(NETS[net].0);
    match *op {
        Op::FromPort { port, src, dst } => {
            let port = PortId(PORTS[port].0);
            let (src, dst) = (mac(src + 1), pool_mac(dst));
            p.from_port(port, &frame(dst, src), base + m.now, a);
            assert_eq!(plain(a), m.port_frame(port, src, dst), "{op:?}");
        }
        Op::FromUnderlay {
            net,
            remote: r,
            src,
            dst,
            dont_learn,
        } => {
            let (src, dst) = (mac(src + 1), pool_mac(dst));
            let payload = vxlan(NETS[net].0, Some(dont_learn), &frame(dst, src));
            p.receive_vxlan(remote(r), &payload, base + m.now, a);
            assert_eq!(
                plain(a),
                m.underlay_frame(vni_of(net), remote(r), src, dst, dont_learn),
                "{op:?}"
            );
        }
        Op::AddStatic {
            net,
            mac: i,
            to_port,
            remote: r,
        } => {
            let dest = match to_port {
                Some(port) => FdbDest::Port(PortId(PORTS[port].0)),
                None => FdbDest::Remote(remote(r)),
            };
            let (vni, mac) = (vni_of(net), mac(i + 1));
            assert_eq!(
                p.fdb_add_static(vni, mac, dest),
                m.add_static(vni, mac, dest),
                "{op:?}"
            );
        }
        Op::Remove { net, mac: i } => {
            let (vni, mac) = (vni_of(net), mac(i + 1));
            let want = match m.find(vni, mac) {
                Some(at) => {
                    m.entries.remove(at);
                    Ok(())
                }
                None => Err(TableError::NoSuchEntry { vni, mac }),
            };
            assert_eq!(p.fdb_remove(vni, mac), want, "{op:?}");
        }
        Op::Flush { net, all } => {
            let vni = vni_of(net);
            let before = m.entries.len();
            m.entries.retain(|e| e.vni != vni || (e.is_static && !all));
            let scope = if all {
                FlushScope::All
            } else {
                FlushScope::Learned
            };
            assert_eq!(
                p.fdb_flush(vni, scope),
                Ok(before - m.entries.len()),
                "{op:?}"
            );
        }
        Op::Advance { secs } => m.now += Duration::from_secs(secs),
        Op::Age => assert_eq!(p.age(base + m.now), m.age(), "{op:?}"),
        Op::TogglePort { port } => {
            let (id, vni) = (PortId(PORTS[port].0), Vni(PORTS[port].1));
            if let Some(at) = m.ports.iter().position(|x| x.0 == id) {
                m.ports.remove(at);
                m.entries.retain(|e| e.dest != FdbDest::Port(id));
                p.remove_port(id).unwrap();
            } else {
                m.ports.push((id, vni));
                p.add_port(id, vni).unwrap();
            }
        }
    }
}

/// Compares every network's FDB and learning counters.
fn compare(p: &Pipeline, m: &Model, base: Instant) {
    let counters = p.counters();
    for (n, net) in NETS.iter().enumerate() {
        let vni = Vni(net.0);
        let got: Vec<_> = p
            .fdb_entries(vni, base + m.now)
            .unwrap()
            .iter()
            .map(|e| (e.mac, e.dest, e.origin, e.age))
            .collect();
        assert_eq!(got, m.view(vni), "fdb of network {vni}");
        let c = counters.networks[&vni];
        assert_eq!(
            [c.learned, c.moves, c.learn_limit, c.aged],
            m.counts[n],
            "counters of network {vni}"
        );
        let view = p.network(vni).unwrap();
        let learned = m
            .entries
            .iter()
            .filter(|e| e.vni == vni && !e.is_static)
            .count();
        assert_eq!(view.learned, learned);
        assert_eq!(
            view.static_entries,
            m.entries.iter().filter(|e| e.vni == vni).count() - learned
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn pipeline_fdb_matches_naive_model(ops in proptest::collection::vec(op(), 1..120)) {
        let (mut p, mut m) = build();
        let base = Instant::now();
        let mut a = Actions::new();
        for op in &ops {
            step(&mut p, &mut m, base, op, &mut a);
            compare(&p, &m, base);
        }
    }
}
