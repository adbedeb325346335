//! More than one datapath worker: how N threads forward without a lock per packet, and how the
//! control thread still sees one datapath.
//!
//! ```text
//!  control thread ── Datapath::call(cmd) ──► worker 0 (first; its answer is the answer)
//!                                       └──► workers 1..N (a copy, once worker 0 took it)
//!  worker i: own Pipeline copy, own sockets (see nvo_io's `spread`), own poll loop
//!      learned / moved MAC ──Learned──► bounded channel + eventfd ──► every other worker,
//!                                        imported without counting (Pipeline::import_learned)
//!  reads: counters, FDB entries, overlay counters → asked of every worker and merged here;
//!         everything else (networks, local hosts, probes, ports up) → worker 0
//! ```
//!
//! Why per-worker copies and not shared read-mostly tables (an `ArcSwap` of the FDB): the
//! pipeline writes on the hot path — a learned MAC's `last_seen` on every frame, the counters
//! of every network, port and remote, the neighbour cache — so shared tables would need either
//! a copy-on-write of the whole table per learned MAC or atomics/locks on each of those writes.
//! Copies keep the hot path exactly the one-worker path (no atomics, no shared cache lines);
//! the price is memory (N tables) and a learned MAC reaching the other workers one wake-up
//! later (a frame to it meanwhile is flooded, as it would be before it was learned). The
//! control side already sent every change as a [`Command`], so applying it N times costs
//! nothing on the hot path; learning traffic between workers is one message per new or moved
//! MAC (and per seen MAC every [`REANNOUNCE`]). Shared tables were not built to compare: they
//! would rewrite the pipeline, and their cost is on every packet where the copies' is on the
//! rare learned MAC. Measured (bench/run.py --scenarios kernel,nvo --reps 3, release build, on
//! the 2-CPU development host, loaded by other builds: load average 2-6), medians of 3, the
//! whole two-host lab and iperf3 on the same 2 CPUs: TCP 4 streams 3.9 → 4.9 Gbit/s and UDP
//! 64 B 87 → 124 kpps from 1 to 2 workers (CPU per Gbit 0.51 → 0.41 s); mean RTT 143 → 213 µs
//! (two threads to wake instead of one). Both CPUs were busy in both runs (iperf3's client and
//! server and both nvods share them), which is what bounds the gain here.
//!
//! An L3 network's neighbours (container IP → port, MAC) and the addresses snooped from ARP/ND
//! on local ports are passed on the same way, once a second, as changes: a routed packet from
//! the underlay may reach a worker that did not see the container's ARP, and worker 0 answers
//! for the local hosts (MAC and IPs) EVPN advertises.
//!
//! A learned entry's age: each worker ages its own copy. A MAC whose frames one worker alone
//! sees is re-announced to the others every [`REANNOUNCE`] with the time it was last seen
//! there, so the copies age together with the original, never later than it plus
//! [`REANNOUNCE`].

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvo_encap::stt::ReassemblyCounters;
use nvo_io::{EventFd, UnderlayStats};
use nvo_pipeline::overlay::OverlayCounters;
use nvo_pipeline::{
    Counters, DropReason, FdbChange, FdbDest, FdbEvent, FdbView, Mac, NetworkCounters, Origin,
    Pipeline, PortCounters, PortId, RemoteCounters, UnderlayCounters, Vni,
};

use crate::command::{Command, Reply};
use nvo_pipeline::policy::PolicyReply;

/// The most workers a node runs.
pub const MAX_WORKERS: usize = 64;
/// Batches of learned entries a worker may have waiting from the others; more are lost (and
/// counted): the worker floods to those MACs until it learns them itself.
pub const SHARE_QUEUE: usize = 256;
/// How often a worker tells the others the MACs it saw since the last time.
pub const REANNOUNCE: Duration = Duration::from_secs(10);

/// One learned entry, as one worker tells the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learned {
    /// The network.
    pub vni: Vni,
    /// The MAC.
    pub mac: Mac,
    /// Where it is.
    pub dest: FdbDest,
    /// When the telling worker last saw a frame from it.
    pub seen: Instant,
}

/// What one worker tells the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// A MAC learned (or moved, or seen again).
    Mac(Learned),
    /// An L3 network's neighbour: a container's IP behind a port, with its MAC.
    Neighbour(Vni, IpAddr, PortId, Mac),
    /// An address snooped on a local port (ARP suppression, EVPN's MAC/IP routes).
    Local(Vni, IpAddr, Mac, PortId),
}

/// A worker's links to the others: where its learned entries go, and where theirs arrive.
#[derive(Debug)]
pub struct Share {
    peers: Vec<(SyncSender<Vec<Told>>, Arc<EventFd>)>,
    inbox: Option<Receiver<Vec<Told>>>,
    lost: Arc<AtomicU64>,
    /// The L3 neighbours the others know from this worker (told or told by them).
    neighbours: HashMap<(Vni, IpAddr), (PortId, Mac)>,
    /// The snooped addresses the others know from this worker (told or told by them).
    locals: HashMap<(Vni, IpAddr), (Mac, PortId)>,
    /// The snooped addresses the others told: not re-told from here, so that copies cannot
    /// keep each other from ageing.
    told_locals: HashSet<(Vni, IpAddr)>,
}

impl Share {
    /// A worker alone: nothing to tell, nothing to hear.
    pub fn alone() -> Share {
        Share {
            peers: Vec::new(),
            inbox: None,
            lost: Arc::new(AtomicU64::new(0)),
            neighbours: HashMap::new(),
            locals: HashMap::new(),
            told_locals: HashSet::new(),
        }
    }

    /// The links of `n` workers, each waking its peers with their eventfd (`wakes[i]`); `lost`
    /// counts the batches a full queue refused.
    pub fn mesh(wakes: &[Arc<EventFd>], lost: &Arc<AtomicU64>) -> Vec<Share> {
        let (senders, inboxes): (Vec<_>, Vec<_>) = wakes
            .iter()
            .map(|_| std::sync::mpsc::sync_channel(SHARE_QUEUE))
            .unzip();
        inboxes
            .into_iter()
            .enumerate()
            .map(|(me, inbox)| Share {
                peers: senders
                    .iter()
                    .zip(wakes)
                    .enumerate()
                    .filter(|&(i, _)| i != me)
                    .map(|(_, (s, w))| (s.clone(), w.clone()))
                    .collect(),
                inbox: Some(inbox),
                lost: lost.clone(),
                neighbours: HashMap::new(),
                locals: HashMap::new(),
                told_locals: HashSet::new(),
            })
            .collect()
    }

    /// Whether there are other workers to tell.
    pub fn active(&self) -> bool {
        !self.peers.is_empty()
    }

    /// Forgets the other workers (they were not started).
    pub fn isolate(&mut self) {
        self.peers.clear();
        self.inbox = None;
    }

    /// Tells every other worker the MACs learned or moved among `events`, seen `now`.
    pub fn announce_events(&self, events: &[FdbEvent], now: Instant) {
        if !self.active() {
            return;
        }
        let learned: Vec<Told> = events
            .iter()
            .filter(|e| matches!(e.change, FdbChange::Learned | FdbChange::Moved { .. }))
            .map(|e| {
                Told::Mac(Learned {
                    vni: e.vni,
                    mac: e.mac,
                    dest: e.dest,
                    seen: now,
                })
            })
            .collect();
        self.announce(learned);
    }

    /// Tells every other worker the learned entries of `pipeline` seen within the last
    /// [`REANNOUNCE`], with when.
    pub fn reannounce(&self, pipeline: &Pipeline, now: Instant) {
        if !self.active() {
            return;
        }
        let mut learned = Vec::new();
        for view in pipeline.networks() {
            let Ok(entries) = pipeline.fdb_entries(view.vni, now) else {
                continue;
            };
            for e in entries {
                if e.origin == Origin::Learned && e.age < REANNOUNCE {
                    learned.push(Told::Mac(Learned {
                        vni: view.vni,
                        mac: e.mac,
                        dest: e.dest,
                        seen: now.checked_sub(e.age).unwrap_or(now),
                    }));
                }
            }
        }
        self.announce(learned);
    }

    /// Tells every other worker the L3 neighbours and snooped addresses `pipeline` learned
    /// (or changed) since the last call, and with `all` every address this worker snooped
    /// itself (so that the others' copies, which age, are refreshed while it sees them; a copy
    /// outlives the original by at most the ageing time). An L3 network's routed packets from
    /// the underlay reach any worker, which needs the container's MAC to deliver them; worker
    /// 0 answers for the local hosts EVPN advertises. Called once a second.
    pub fn announce_neighbours(&mut self, pipeline: &Pipeline, all: bool) {
        if !self.active() {
            return;
        }
        let mut told = Vec::new();
        for (vni, ip, port, mac) in pipeline.l3_neighbours() {
            if self.neighbours.insert((vni, ip), (port, mac)) != Some((port, mac)) {
                told.push(Told::Neighbour(vni, ip, port, mac));
            }
        }
        for (vni, ip, mac, port) in pipeline.local_neighbours() {
            let changed = self.locals.insert((vni, ip), (mac, port)) != Some((mac, port));
            if changed || (all && !self.told_locals.contains(&(vni, ip))) {
                told.push(Told::Local(vni, ip, mac, port));
            }
        }
        self.announce(told);
    }

    fn announce(&self, learned: Vec<Told>) {
        if learned.is_empty() {
            return;
        }
        for (peer, wake) in &self.peers {
            match peer.try_send(learned.clone()) {
                Ok(()) => {
                    let _ = wake.notify();
                }
                // A stopped worker needs nothing; a full one learns the MAC itself.
                Err(TrySendError::Full(_)) => {
                    self.lost.fetch_add(1, Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {}
            }
        }
    }

    /// Imports what the other workers told; returns how many entries.
    pub fn import(&mut self, pipeline: &mut Pipeline) -> usize {
        let Some(inbox) = &self.inbox else {
            return 0;
        };
        let mut n = 0;
        while let Ok(batch) = inbox.try_recv() {
            for told in batch {
                match told {
                    Told::Mac(l) => {
                        pipeline.import_learned(l.vni, l.mac, l.dest, l.seen);
                    }
                    Told::Neighbour(vni, ip, port, mac) => {
                        pipeline.import_l3_neighbour(vni, ip, port, mac);
                        // Known to the others already: not told back.
                        self.neighbours.insert((vni, ip), (port, mac));
                    }
                    Told::Local(vni, ip, mac, port) => {
                        pipeline.import_local_neighbour(vni, (ip, mac, port), Instant::now());
                        self.locals.insert((vni, ip), (mac, port));
                        self.told_locals.insert((vni, ip));
                    }
                }
                n += 1;
            }
        }
        n
    }
}

/// Packets each worker handled (received datagrams and frames), for the API.
#[derive(Debug, Clone)]
pub struct WorkerStats {
    packets: Arc<Vec<AtomicU64>>,
    /// Batches of learned entries lost to a full queue.
    pub share_lost: Arc<AtomicU64>,
}

impl WorkerStats {
    /// Counters for `n` workers.
    pub fn new(n: usize) -> WorkerStats {
        WorkerStats {
            packets: Arc::new((0..n).map(|_| AtomicU64::new(0)).collect()),
            share_lost: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Counts `n` packets handled by worker `worker`.
    pub fn count(&self, worker: usize, n: usize) {
        if let Some(c) = self.packets.get(worker) {
            c.fetch_add(n as u64, Relaxed);
        }
    }

    /// Packets per worker, for the first `workers`.
    pub fn packets(&self, workers: usize) -> Vec<u64> {
        self.packets
            .iter()
            .take(workers)
            .map(|c| c.load(Relaxed))
            .collect()
    }
}

/// How a command reaches the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Worker 0 only: its tables answer for all (networks, local hosts), or it alone holds the
    /// state (probes, which its overlay socket receives).
    First,
    /// A change: worker 0 first (its answer is the answer), then a copy to each other worker.
    All,
    /// A read of what every worker counts or learned: asked of each, merged.
    Merged,
}

/// Where `command` goes.
pub fn scope(command: &Command) -> Scope {
    match command {
        Command::Counters
        | Command::FdbEntries(_)
        | Command::OverlayCounters
        | Command::QosCounters
        | Command::MeterCounters
        | Command::Flows => Scope::Merged,
        Command::Policy(nvo_pipeline::policy::PolicyCommand::Show(_)) => Scope::Merged,
        Command::Policy(nvo_pipeline::policy::PolicyCommand::Trace(..)) => Scope::First,
        Command::Networks
        | Command::PortsUp
        | Command::LocalHosts { .. }
        | Command::OverlayProbeStart { .. }
        | Command::OverlayProbeResult(_)
        | Command::PacketOut { .. }
        | Command::FlowLookup(_) => Scope::First,
        _ => Scope::All,
    }
}

/// The copy of a change for a worker other than worker 0: a port's interface that worker 0
/// opened but this one cannot (yet) is retried every second rather than refused.
pub fn for_peer(mut command: Command) -> Command {
    if let Command::AddPort { must_open, .. } = &mut command {
        *must_open = false;
    }
    command
}

/// Adds one worker's policer counters to another's.
fn add_policer(
    into: &mut nvo_pipeline::qos::PolicerCounters,
    c: &nvo_pipeline::qos::PolicerCounters,
) {
    into.conformed_frames += c.conformed_frames;
    into.conformed_bytes += c.conformed_bytes;
    into.policed_frames += c.policed_frames;
    into.policed_bytes += c.policed_bytes;
}

/// Merges another worker's answer to a [`Scope::Merged`] read into worker 0's.
pub fn merge(into: Reply, other: Reply) -> Reply {
    match (into, other) {
        (
            Reply::Counters(mut c, mut u, mut r, mut t, mut i),
            Reply::Counters(c2, u2, r2, t2, i2),
        ) => {
            merge_counters(&mut c, &c2);
            merge_underlay_stats(&mut u, &u2);
            merge_reassembly(&mut r, &r2);
            t.frames_kernel += t2.frames_kernel;
            t.frames_software += t2.frames_software;
            t.kernel_errors += t2.kernel_errors;
            i.tx_gso_whole += i2.tx_gso_whole;
            i.tx_finished += i2.tx_finished;
            i.rx_gso_whole += i2.rx_gso_whole;
            i.rx_refused += i2.rx_refused;
            Reply::Counters(c, u, r, t, i)
        }
        (Reply::Entries(mut a), Reply::Entries(b)) => {
            merge_entries(&mut a, b);
            Reply::Entries(a)
        }
        (Reply::Overlay(mut a), Reply::Overlay(b)) => {
            merge_overlay(&mut a, &b);
            Reply::Overlay(a)
        }
        (Reply::Meters(mut a), Reply::Meters(b)) => {
            for (n, _, c) in b {
                if let Some((_, _, into)) = a.iter_mut().find(|(m, ..)| *m == n) {
                    add_policer(into, &c);
                }
            }
            Reply::Meters(a)
        }
        (Reply::Qos(mut a), Reply::Qos(b)) => {
            for (port, _, c) in b {
                if let Some((_, _, into)) = a.iter_mut().find(|(p, ..)| *p == port) {
                    add_policer(into, &c);
                }
            }
            Reply::Qos(a)
        }
        (Reply::Flows(mut a), Reply::Flows(b)) => {
            // The same FLOW_MODs made the same rules in every worker: a rule is its match
            // and priority (one index, not a scan of every rule per rule: the table holds
            // up to 10 000, and nvod reads it every second while rules have timeouts).
            let index: HashMap<_, usize> = a
                .rules
                .iter()
                .enumerate()
                .map(|(at, x)| ((x.rule.priority, x.rule.pattern), at))
                .collect();
            for (r, idle) in b.rules.into_iter().zip(b.idle) {
                if let Some(&at) = index.get(&(r.rule.priority, r.rule.pattern)) {
                    a.rules[at].packets += r.packets;
                    a.rules[at].bytes += r.bytes;
                    if let Some(i) = a.idle.get_mut(at) {
                        *i = (*i).min(idle);
                    }
                }
            }
            a.lookups += b.lookups;
            a.matched += b.matched;
            Reply::Flows(a)
        }
        (Reply::Policy(PolicyReply::Counters(mut a)), Reply::Policy(PolicyReply::Counters(b))) => {
            a.merge(&b);
            Reply::Policy(PolicyReply::Counters(a))
        }
        (into, _) => into,
    }
}

/// Sums the `u64` fields named, destructuring `$from` without `..`: a counter added to the
/// struct and not here fails to compile instead of going missing from the sums.
macro_rules! sum_fields {
    ($into:expr, $from:expr, $ty:ident { $($f:ident),* $(,)? }) => {{
        let $ty { $($f),* } = *$from;
        $( $into.$f += $f; )*
    }};
}

/// Adds `b`'s counts to `a`: the whole pipeline's counts are the sum of its workers'.
pub fn merge_counters(a: &mut Counters, b: &Counters) {
    let Counters {
        drops,
        networks,
        ports,
        underlay,
        remotes,
    } = b;
    for reason in DropReason::ALL {
        a.drops.add_count(reason, drops.get(reason));
    }
    for (vni, n) in networks {
        let into = a.networks.entry(*vni).or_default();
        merge_network(into, n);
    }
    for (port, p) in ports {
        let into = a.ports.entry(*port).or_default();
        sum_fields!(
            into,
            p,
            PortCounters {
                rx_frames,
                rx_bytes,
                tx_frames,
                tx_bytes,
                drops,
                learn_limit
            }
        );
    }
    sum_fields!(
        a.underlay,
        underlay,
        UnderlayCounters {
            rx_packets,
            rx_bytes,
            tx_packets,
            tx_bytes,
            tx_errors,
            relayed
        }
    );
    for (ip, r) in remotes {
        let into = a.remotes.entry(*ip).or_default();
        sum_fields!(
            into,
            r,
            RemoteCounters {
                rx_packets,
                rx_bytes,
                tx_packets,
                tx_bytes
            }
        );
    }
}

fn merge_network(a: &mut NetworkCounters, b: &NetworkCounters) {
    sum_fields!(
        a,
        b,
        NetworkCounters {
            rx_port_frames,
            rx_underlay_frames,
            delivered,
            encap_unicast,
            encap_flood,
            learned,
            moves,
            learn_limit,
            learn_limit_port,
            learn_limit_remote,
            learn_local_conflict,
            aged,
            arp_replies,
            arp_requests,
            nd_replies,
            nd_requests,
            arp_suppressed,
            nd_suppressed,
            arp_flooded,
            nd_flooded,
            evpn_moves
        }
    );
}

fn merge_underlay_stats(a: &mut UnderlayStats, b: &UnderlayStats) {
    sum_fields!(
        a,
        b,
        UnderlayStats {
            recv_truncated,
            send_would_block,
            send_errors,
            gso_fallbacks,
            gso_sends,
            multicast_joins,
            multicast_leaves
        }
    );
}

fn merge_reassembly(a: &mut ReassemblyCounters, b: &ReassemblyCounters) {
    sum_fields!(
        a,
        b,
        ReassemblyCounters {
            segments,
            frames_single,
            frames_reassembled,
            duplicates,
            overlaps,
            bad_checksum,
            malformed,
            not_stt,
            expired,
            evicted,
            too_large,
            too_many_holes,
            in_progress,
            bytes_buffered
        }
    );
}

fn merge_overlay(a: &mut OverlayCounters, b: &OverlayCounters) {
    sum_fields!(
        a,
        b,
        OverlayCounters {
            forwarded,
            relayed,
            local,
            ttl_expired,
            no_route,
            no_locator,
            split_horizon,
            replicated,
            malformed
        }
    );
}

/// Adds to worker 0's FDB view the entries only another worker holds (learned there and not
/// yet announced), and for a learned MAC both hold, the younger age; sorted by MAC as the
/// pipeline sorts them.
pub fn merge_entries(a: &mut Vec<FdbView>, b: Vec<FdbView>) {
    for e in b {
        match a.binary_search_by(|x| x.mac.cmp(&e.mac)) {
            Ok(at) => {
                let mine = &mut a[at];
                if mine.origin == Origin::Learned && e.origin == Origin::Learned && e.age < mine.age
                {
                    *mine = e;
                }
            }
            Err(at) => a.insert(at, e),
        }
    }
}

#[cfg(test)]
mod tests;
