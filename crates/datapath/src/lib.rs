//! The datapath threads (workers): each owns a copy of the pipeline, its own underlay sockets
//! and its own socket on every port, and runs one poll loop; `workers` says how N of them share
//! the traffic (flows spread by one symmetric hash of the inner flow, nvo-io's `steer`: a
//! PACKET_FANOUT program on ports, a SO_REUSEPORT program on the tunnels' UDP ports, so a flow's
//! two directions meet one worker) and keep their tables alike. With one worker (`workers = 1`, or the kernel path
//! running) this is the single datapath thread of before. Each worker's loop:
//!
//! ```text
//!  poll([command eventfd, underlay socket 1, ..., group 1, ..., port 1, port 2, ...,
//!        kernel rings, ILA TUN queue],
//!       timeout ≤ 1 s)
//!    underlay or group socket readable → recv_batch → decap + pipeline per packet → actions
//!                                        → flush
//!    port readable     → recv_batch → from_port per frame       → actions → flush
//!    ILA TUN readable  → read packets (GSO ones whole) → Pipeline::from_ila → actions (ila.rs)
//!    eventfd readable  → run every queued command, reply on its oneshot
//!    every wake-up     → while `nvo monitor` listens: the pipeline's FDB events to its ring
//!    every second      → age learned entries and STT reassemblies, retry ports that are down
//! ```
//!
//! With `busy_poll` (nvod's `busy_poll_us`) the poll after a round that handled packets does
//! not sleep: it checks every socket and returns at once, for as long as the last packet any
//! worker of the node handled is less than `busy_poll` ago (busy.rs: the reply seldom comes
//! to the worker that sent the request); then the loop sleeps again. A request's reply, or
//! the next packets of a burst, find the thread awake instead of paying a wake-up each. Between two
//! such polls the thread yields its CPU, so that on a host with fewer CPUs than busy
//! threads the application the packets are for is not kept waiting by the spinning.
//!
//! Commands run after the frames of the same wake-up, so the poll indices of that round stay
//! valid; the poll set is rebuilt whenever the set of open ports or joined multicast groups
//! changed. The underlay sockets are the VXLAN socket and one per other tunnel transport a
//! network uses (see `underlays`). A group socket receives what other VTEPs flood to a group this node joined for one
//! of its networks (see `groups`).
//!
//! What nvod sees: [`start`] with the [`Settings`] its configuration resolves to, which gives a
//! [`Started`] holding the [`Datapath`] handle; every change and every read is a [`Command`]
//! sent through it (see `command` for the channel), answered by a [`Reply`] or a
//! [`DatapathError`].

mod busy;
mod command;
mod commands;
mod csum;
mod flows;
mod forward;
mod gbp;
mod gro;
mod groups;
mod handle;
mod handoff;
mod identity;
mod ila;
mod ila_rx;
mod kernel;
mod metering;
pub mod monitor;
mod overlay;
mod ports;
mod probe;
mod probes;
mod qos;
mod settings;
mod stt_guard;
mod stt_meta;
mod stt_tx;
mod tunnel_flows;
mod underlays;
mod vlan;
mod vport;
pub mod workers;

use std::io;
use std::os::fd::AsFd;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvo_encap::engine::Engine;
use nvo_encap::stt::Reassembler;
use nvo_io::steer::TunnelShape;
use nvo_io::{EventFd, FrameBatch, FrameMeta, Poller, RecvBatch, UdpUnderlay};
use nvo_pipeline::overlay::{NodeId, OverlayTables};
use nvo_pipeline::Pipeline;

use busy::BusyPoll;
use command::{Lane, Request};
use forward::Forwarder;
use underlays::Underlays;
use workers::{Share, WorkerStats};

pub use command::{Command, DatapathError, FlowDump, PortKind, Reply, QUEUE};
pub use handle::Datapath;
pub use ila::IlaStats;
pub use kernel::{Choice, Refused};
pub use probes::{RunResult, MAX_COUNT as MAX_PROBES};
pub use settings::{DatapathChoice, Settings, SttOffload, XdpChoice};
pub use stt_tx::SttTxCounters;
pub use underlays::Outer;

/// How often learned entries are aged and down ports retried.
const TICK: Duration = Duration::from_secs(1);
/// Most underlay receive batches handled per wake-up before the ports get their turn.
const UNDERLAY_ROUNDS: usize = 8;
/// Most datagrams per underlay receive and frames per port receive.
const BATCH: usize = 64;
/// Most repeated socket errors logged per minute, so that a failing socket cannot flood the log.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Why the datapath could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The underlay sockets could not be bound.
    #[error(
        "cannot bind the vxlan underlay on {locator} port {port}: {source} (is {locator} an \
         address of this host? is another VTEP using port {port}? set locator/vxlan_port in \
         the config)"
    )]
    Underlay {
        /// The locator.
        locator: std::net::IpAddr,
        /// The VXLAN port.
        port: u16,
        /// Why.
        source: io::Error,
    },
    /// The eventfd or the thread could not be created.
    #[error("cannot start the datapath thread: {0}")]
    Thread(io::Error),
    /// `ila_locator` is set and the ILA TUN device could not be made and routed.
    #[error("cannot open the ila tun device: {0} (or remove ila_locator from the config)")]
    Ila(io::Error),
    /// `datapath = "ebpf"` and the kernel refused the programs.
    #[error(transparent)]
    Kernel(#[from] kernel::Refused),
}

/// A running datapath.
#[derive(Debug)]
pub struct Started {
    /// Where commands go.
    pub handle: Datapath,
    /// Offloads the underlay sockets got.
    pub offloads: nvo_api::Offloads,
    /// Which datapath forwards, and why.
    pub choice: kernel::Choice,
    threads: Vec<JoinHandle<()>>,
}

impl Started {
    /// Stops the workers and waits for them (their sockets and TAP devices close with them).
    pub fn stop(self) {
        let Started {
            handle, threads, ..
        } = self;
        handle.stop();
        // Dropping the last sender also stops the loop, should the stop not fit in the queue.
        drop(handle);
        for thread in threads {
            if thread.join().is_err() {
                log::error!("a datapath thread panicked");
            }
        }
    }
}

/// Binds the underlay and starts the datapath thread with empty tables; nothing can monitor it.
pub fn start(config: &Settings) -> Result<Started, StartError> {
    start_monitored(config, monitor::Monitor::off())
}

/// [`start`], recording events into `monitor` while it says someone listens.
pub fn start_monitored(
    config: &Settings,
    monitor: monitor::Monitor,
) -> Result<Started, StartError> {
    let n = config.workers.clamp(1, workers::MAX_WORKERS);
    let mut fwd = forwarder(config, 0, n > 1)?;
    let offloads = fwd
        .core
        .underlays
        .vxlan_ref()
        .map(UdpUnderlay::offloads)
        .unwrap_or_default();
    fwd.core.monitor = monitor.clone();
    let wakes = (0..n)
        .map(|_| EventFd::new().map(Arc::new))
        .collect::<io::Result<Vec<_>>>()
        .map_err(StartError::Thread)?;
    let (mut lanes, mut receivers): (Vec<Lane>, Vec<_>) =
        wakes.iter().map(|w| Lane::channel(w.clone())).unzip();
    let stats = WorkerStats::new(n);
    let mut shares = if n > 1 {
        Share::mesh(&wakes, &stats.share_lost)
    } else {
        vec![Share::alone()]
    };
    let mut share = shares.remove(0);
    let commands = receivers.remove(0);
    // The kernel path is loaded on worker 0, which owns it (its maps and rings are that
    // thread's); the thread says how it went before it starts looping. With the kernel path
    // running, worker 0 alone handles what reaches userspace.
    let (chosen, choice) = std::sync::mpsc::sync_channel(1);
    let config0 = config.clone();
    let (wake, loop_stats) = (wakes[0].clone(), stats.clone());
    // One busy-poll window for the node: see busy.rs for why not one per worker.
    let busy = BusyPoll::new(config.busy_poll, wakes.clone());
    let busy0 = busy.clone();
    let thread = std::thread::Builder::new()
        .name("nvod-datapath".to_owned())
        .spawn(move || {
            let kernel = kernel::start(&config0, &fwd.core);
            let (mirror, made) = match kernel {
                Ok(k) => k,
                Err(e) => {
                    let _ = chosen.send(Err(e));
                    return;
                }
            };
            let alone = mirror.is_some();
            if let Some(m) = &mirror {
                // A packet of a flow the programs track that they leave to nvod (a UDP-GSO
                // batch, an inner 802.1Q frame) passes here as tracked too (policy_external).
                fwd.core.pipeline.set_external_flows(Some(m.kernel_flows()));
            }
            fwd.core.kernel = mirror;
            if alone {
                share.isolate();
            }
            fwd.core.workers = if alone { 1 } else { n };
            let _ = chosen.send(Ok((made, alone)));
            Loop::new(fwd, commands, wake, busy0, (0, share, loop_stats)).run()
        })
        .map_err(StartError::Thread)?;
    let (choice, alone) = match choice.recv() {
        Ok(Ok(chosen)) => chosen,
        Ok(Err(refused)) => {
            let _ = thread.join();
            return Err(refused.into());
        }
        Err(_) => {
            let _ = thread.join();
            return Err(StartError::Thread(io::Error::other(
                "the datapath thread died at start",
            )));
        }
    };
    let mut threads = vec![thread];
    if alone {
        lanes.truncate(1);
    } else {
        let others = receivers
            .into_iter()
            .zip(shares)
            .zip(wakes.into_iter().skip(1));
        for (at, ((commands, share), wake)) in others.enumerate() {
            let worker = at + 1;
            let spawned = forwarder(config, worker, true).and_then(|mut fwd| {
                fwd.core.monitor = monitor.clone();
                fwd.core.workers = n;
                let (busy, stats) = (busy.clone(), stats.clone());
                std::thread::Builder::new()
                    .name(format!("nvod-datapath{worker}"))
                    .spawn(move || {
                        Loop::new(fwd, commands, wake, busy, (worker, share, stats)).run()
                    })
                    .map_err(StartError::Thread)
            });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    Started {
                        handle: Datapath::new(lanes, stats),
                        offloads: nvo_api::Offloads::default(),
                        choice,
                        threads,
                    }
                    .stop();
                    return Err(e);
                }
            }
        }
    }
    Ok(Started {
        handle: Datapath::new(lanes, stats),
        offloads: nvo_api::Offloads {
            gro: offloads.gro,
            gso: offloads.gso,
        },
        choice,
        threads,
    })
}

/// Binds worker `worker`'s VXLAN socket (SO_REUSEPORT when `shared` by several workers) and
/// builds its forwarder with empty tables.
fn forwarder(config: &Settings, worker: usize, shared: bool) -> Result<Forwarder, StartError> {
    let error = |source| StartError::Underlay {
        locator: config.locator,
        port: config.vxlan_port,
        source,
    };
    if worker == 0 && shared {
        underlays::exclusive(config.locator, config.vxlan_port).map_err(error)?;
    }
    let mut underlay = UdpUnderlay::bind_shared(
        config.locator,
        config.vxlan_port,
        config.entropy_ports,
        shared,
    )
    .map_err(error)?;
    let members = config.workers.clamp(1, workers::MAX_WORKERS);
    if shared {
        // A flow's datagrams go to the worker its port frames go to (nvo_io's `spread`).
        underlay
            .steer_by_inner_flow(TunnelShape::Vxlan, members)
            .map_err(error)?;
    }
    underlay
        .set_multicast_ttl(config.multicast_ttl)
        .map_err(error)?;
    underlays::apply_offloads(&mut underlay, &config.outer).map_err(error)?;
    underlay
        .set_outer(config.outer.ttl, config.outer.tos, config.outer.df)
        .map_err(error)?;
    let mut underlays = Underlays::new(
        underlay,
        config.locator,
        config.vxlan_port,
        config.entropy_ports,
        config.outer,
    );
    underlays.set_worker(worker, if shared { members } else { 1 });
    let mut fwd = Forwarder::new(
        Pipeline::new(config.limits),
        underlays,
        Engine::new(config.engine_limits),
        Reassembler::new(config.stt_reassembly),
        config.underlay_mtu,
        OverlayTables::new(NodeId(config.node_id), config.overlay_limits),
    );
    fwd.core.worker = worker;
    // Each worker writes its own STT frames (to its own TUN when the kernel segments them).
    fwd.core.stt_tx = stt_tx::SttTx::new(config.stt_offload);
    fwd.core.ila = ila::Ila::open(config.ila_locator).map_err(StartError::Ila)?;
    fwd.core.pipeline.set_ila_locator(config.ila_locator);
    Ok(fwd)
}

/// The loop's state.
struct Loop {
    fwd: Forwarder,
    commands: Receiver<Request>,
    wake: Arc<EventFd>,
    poller: Poller,
    /// `Ports::generation()`, `Groups::generation()` and `Underlays::generation()` the poll
    /// set was built for.
    polled: Option<(u64, u64, u64)>,
    /// Underlay sockets in the poll set, in the underlays' order after the eventfd.
    polled_underlays: usize,
    /// Joined groups in the poll set, polled in the VXLAN socket's group order after the
    /// underlay sockets.
    polled_groups: usize,
    /// Position in the port list of each polled port, in poll order after the groups.
    polled_ports: Vec<usize>,
    /// Whether the kernel path's two rings follow the ports in the poll set.
    polled_kernel: bool,
    /// Where the ILA TUN queue is in the poll set (last), if polled.
    polled_ila: Option<usize>,
    recv: RecvBatch,
    /// Raw sockets' batch: an IP datagram can be 64 KiB (GRO-coalesced or reassembled).
    raw_recv: RecvBatch,
    frames: FrameBatch,
    next_tick: Instant,
    last_error_log: Option<Instant>,
    /// The node's busy-poll window (busy.rs): polls without sleeping while it is open.
    busy: BusyPoll,
    /// Whether the monitor was on at the last wake-up (the pipeline's FDB events and the
    /// kernel's flag follow it).
    monitoring: bool,
    /// The monitor's tracing flag as last followed.
    tracing: bool,
    /// The pipeline's FDB events, drained into here.
    fdb_events: Vec<nvo_pipeline::FdbEvent>,
    /// Which worker this is.
    index: usize,
    /// Links to the other workers: learned MACs go out and come in there.
    share: Share,
    /// Packets handled, per worker.
    stats: WorkerStats,
    /// When this worker next tells the others the MACs it saw.
    next_reannounce: Instant,
}

impl Loop {
    fn new(
        fwd: Forwarder,
        commands: Receiver<Request>,
        wake: Arc<EventFd>,
        busy: BusyPoll,
        (index, share, stats): (usize, Share, WorkerStats),
    ) -> Loop {
        // The VXLAN socket's batch fits every socket: GRO-sized buffers when GRO is on, a
        // jumbo frame otherwise; raw sockets never coalesce.
        let recv = match fwd.core.underlays.vxlan_ref() {
            Some(u) => u.new_recv_batch(BATCH),
            None => RecvBatch::new(BATCH, nvo_io::MAX_DATAGRAM),
        };
        Loop {
            fwd,
            commands,
            wake,
            poller: Poller::with_capacity(64),
            polled: None,
            polled_underlays: 0,
            polled_groups: 0,
            polled_ports: Vec::new(),
            polled_kernel: false,
            polled_ila: None,
            recv,
            raw_recv: RecvBatch::new(BATCH, nvo_io::MAX_RAW_PACKET),
            frames: FrameBatch::default(),
            next_tick: Instant::now() + TICK,
            last_error_log: None,
            busy,
            monitoring: false,
            tracing: false,
            fdb_events: Vec::new(),
            index,
            share,
            stats,
            next_reannounce: Instant::now() + workers::REANNOUNCE,
        }
    }

    fn run(mut self) {
        if self.share.active() {
            // Learned MACs go to the other workers: the FDB's events are always on.
            self.fwd.core.pipeline.set_fdb_events(true);
        }
        loop {
            if self.polled != Some(self.generations()) {
                self.rebuild_poll_set();
            }
            let before = Instant::now();
            let timeout = if self.busy.spinning(before) {
                // Spinning, but not hogging: a process on this CPU the packet is for (the
                // container's application, the other nvod on a small host) runs first.
                std::thread::yield_now();
                Duration::ZERO
            } else {
                self.next_tick.saturating_duration_since(before)
            };
            if let Err(e) = self.poller.wait(Some(timeout)) {
                log::error!("the datapath cannot poll its sockets: {e}; it stops");
                return;
            }
            let now = Instant::now();
            // What the other workers learned, before the packets that may be for it.
            self.share.import(&mut self.fwd.core.pipeline);
            let mut handled = false;
            let mut opened = false;
            for at in 0..self.polled_underlays {
                if self.poller.is_ready(1 + at) {
                    handled |= self.underlay(now, at, None);
                }
            }
            let first_group = 1 + self.polled_underlays;
            for g in 0..self.polled_groups {
                if self.poller.is_ready(first_group + g) {
                    handled |= self.underlay(now, 0, Some(g));
                }
            }
            let first_port = first_group + self.polled_groups;
            for k in 0..self.polled_ports.len() {
                if self.poller.is_ready(first_port + k) {
                    handled |= self.port(self.polled_ports[k], now);
                }
            }
            if handled {
                opened |= self.busy.handled(now);
            }
            let first_ring = first_port + self.polled_ports.len();
            if self.polled_kernel && (first_ring..first_ring + 3).any(|i| self.poller.is_ready(i)) {
                kernel::drain(&mut self.fwd, now);
            }
            if self.polled_ila.is_some_and(|i| self.poller.is_ready(i)) && self.ila() {
                opened |= self.busy.handled(now);
            }
            self.fwd.flush();
            if opened && self.fwd.core.workers > 1 {
                // After the flush: the request goes out first, the others wake meanwhile.
                self.busy.wake_others(self.index);
            }
            if self.poller.is_ready(0) && !self.commands(now) {
                return;
            }
            // Commands may queue packets too (overlay probes): out now, not at the next wake.
            self.fwd.flush();
            self.monitor(now);
            if now >= self.next_tick {
                self.fwd.core.pipeline.age(now);
                self.fwd.reassembler.expire(now);
                self.fwd.core.probes.expire(now);
                self.fwd.core.ports.retry();
                if let Some(k) = self.fwd.core.kernel.as_mut() {
                    k.refresh_nexthops();
                }
                kernel::sync(&mut self.fwd.core, now);
                self.next_tick = now + TICK;
                let all = now >= self.next_reannounce;
                self.share.announce_neighbours(&self.fwd.core.pipeline, all);
                if all {
                    self.share.reannounce(&self.fwd.core.pipeline, now);
                    self.next_reannounce = now + workers::REANNOUNCE;
                }
            }
        }
    }

    /// Follows the monitor's flag (the pipeline's FDB events, the kernel's flag) and, while
    /// someone listens, hands the FDB events noted since the last wake-up to the ring.
    fn monitor(&mut self, now: Instant) {
        let core = &mut self.fwd.core;
        let on = core.monitor.on();
        let tracing = on && core.monitor.tracing();
        let sharing = self.share.active();
        if on != self.monitoring || tracing != self.tracing {
            if on != self.monitoring {
                core.pipeline.set_fdb_events(on || sharing);
            }
            self.monitoring = on;
            self.tracing = tracing;
            if let Some(k) = core.kernel.as_mut() {
                let events = if on {
                    nvo_ebpf::layout::MONITOR_ON_EVENTS
                } else {
                    0
                };
                let traces = if tracing {
                    nvo_ebpf::layout::MONITOR_ON_TRACES
                } else {
                    0
                };
                k.set_monitor_bits(events | traces);
            }
        }
        let mut lost = 0;
        if sharing {
            // The events are taken here whether or not anyone monitors: what was learned goes
            // to the other workers.
            lost = core.pipeline.take_fdb_events(&mut self.fdb_events);
            self.share.announce_events(&self.fdb_events, now);
            if !on {
                self.fdb_events.clear();
            }
        }
        if !on {
            return;
        }
        core.monitor.refill(now);
        lost += core.pipeline.take_fdb_events(&mut self.fdb_events);
        let counts = core.monitor.lost();
        counts
            .fdb
            .fetch_add(lost, std::sync::atomic::Ordering::Relaxed);
        for ev in self.fdb_events.drain(..) {
            let name = |id| core.ports.get(id).map(|p| monitor::PortName::new(&p.name));
            let from = match ev.change {
                nvo_pipeline::FdbChange::Moved { from } => from.map(|d| monitor::dest(d, name)),
                _ => None,
            };
            let what = monitor::What::Fdb {
                mac: ev.mac,
                dest: monitor::dest(ev.dest, name),
                change: ev.change,
                from,
            };
            let origin = monitor::Origin::None;
            let layer = monitor::Layer::Frame;
            let vni = Some(ev.vni.0);
            core.monitor
                .record(|| monitor::Record::new(what, origin, vni, layer, &[]));
        }
        if now >= self.next_tick {
            if let Some(k) = core.kernel.as_ref() {
                counts
                    .kernel
                    .store(k.monitor_lost(), std::sync::atomic::Ordering::Relaxed);
                counts
                    .kernel_rate
                    .store(k.monitor_rate_lost(), std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    fn generations(&self) -> (u64, u64, u64) {
        let core = &self.fwd.core;
        (
            core.ports.generation(),
            core.groups.generation(),
            core.underlays.generation(),
        )
    }

    fn rebuild_poll_set(&mut self) {
        self.poller.clear();
        self.poller.add(AsFd::as_fd(&*self.wake));
        let core = &self.fwd.core;
        self.polled_underlays = 0;
        for u in core.underlays.iter() {
            self.poller.add(u.as_fd());
            self.polled_underlays += 1;
        }
        self.polled_groups = 0;
        if let Some(vxlan) = core.underlays.vxlan_ref() {
            for fd in vxlan.group_fds() {
                self.poller.add(fd);
                self.polled_groups += 1;
            }
        }
        self.polled_ports.clear();
        for (at, port) in core.ports.iter().enumerate() {
            // A port the kernel runs is only sent on: its socket never has anything to read.
            if let (Some(io), false) = (&port.io, port.kernel) {
                self.poller.add(io.as_fd());
                self.polled_ports.push(at);
            }
        }
        self.polled_kernel = false;
        if let Some(k) = &core.kernel {
            for fd in k.fds() {
                self.poller.add(fd);
            }
            self.polled_kernel = true;
        }
        self.polled_ila = core
            .ila
            .tun
            .as_ref()
            .map(|tun| self.poller.add(tun.as_fd()));
        self.polled = Some(self.generations());
    }

    /// Receives and forwards what an underlay socket holds, a bounded number of batches: the
    /// socket at `at` (`group` None) or the socket of the VXLAN socket's `group`th joined group.
    /// Returns whether anything was received.
    fn underlay(&mut self, now: Instant, at: usize, group: Option<usize>) -> bool {
        let mut got = false;
        for _ in 0..UNDERLAY_ROUNDS {
            let underlays = &self.fwd.core.underlays;
            let raw = group.is_none()
                && underlays
                    .at(at)
                    .is_some_and(|u| matches!(u.socket, underlays::Socket::Raw(_)));
            let batch = if raw {
                &mut self.raw_recv
            } else {
                &mut self.recv
            };
            let received = match (group, underlays.vxlan_ref()) {
                (None, _) => match underlays.at(at) {
                    Some(u) => u.recv_batch(batch),
                    None => return got,
                },
                (Some(g), Some(vxlan)) => vxlan.recv_group_batch(g, batch),
                (Some(_), None) => return got,
            };
            match received {
                Ok(0) => return got,
                Ok(n) => {
                    got = true;
                    self.stats.count(self.index, n);
                }
                Err(e) => {
                    self.log_error(now, format_args!("underlay receive failed: {e}"));
                    return got;
                }
            }
            let batch = if raw { &self.raw_recv } else { &self.recv };
            // A short batch emptied the queue (recvmmsg with MSG_DONTWAIT stops at the first
            // datagram it would wait for): no second call only to hear EAGAIN, one syscall
            // less per wake-up (a ping's datagram comes alone).
            let drained = batch.len() < batch.capacity();
            for (src, buffer, segment) in batch.buffers() {
                if segment > 0 && buffer.len() > segment {
                    if self.fwd.underlay_gso(at, src.ip(), buffer, segment, now) {
                        continue;
                    }
                    for datagram in buffer.chunks(segment) {
                        self.fwd.underlay_packet(at, src.ip(), datagram, now);
                    }
                } else {
                    self.fwd.underlay_packet(at, src.ip(), buffer, now);
                }
            }
            self.fwd.flush();
            if drained {
                return got;
            }
        }
        got
    }

    /// Receives and forwards one batch from the port at position `at`; returns whether it got
    /// anything.
    fn port(&mut self, at: usize, now: Instant) -> bool {
        let Some(port) = self.fwd.core.ports.at(at) else {
            return false;
        };
        let id = port.id;
        let Some(io) = &port.io else {
            return false;
        };
        match io.recv_batch(&mut self.frames) {
            Ok(0) => return false,
            Ok(n) => self.stats.count(self.index, n),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return false
            }
            Err(e) => {
                self.fwd.core.ports.failed(at, &e);
                return false;
            }
        }
        let large = self.fwd.core.ports.large_at(at);
        let mut frames = self.frames.frames();
        if large {
            while let Some((frame, meta)) = frames.next_frame_meta() {
                self.fwd.port_frame(id, frame, meta, now);
            }
        } else {
            while let Some(frame) = frames.next_frame() {
                self.fwd.port_frame(id, frame, FrameMeta::COMPLETE, now);
            }
        }
        true
    }

    /// Forwards what the ILA TUN holds, at most `ila::ROUNDS` packets; whether anything came.
    fn ila(&mut self) -> bool {
        let core = &mut self.fwd.core;
        for round in 0..ila::ROUNDS {
            let Some((buf, len, meta)) = core.ila.recv() else {
                return round > 0;
            };
            ila_rx::receive(core, buf.get(..len).unwrap_or_default(), &meta);
            core.ila.give_back(buf);
        }
        true
    }

    /// Runs every queued command; false when the datapath must stop.
    fn commands(&mut self, now: Instant) -> bool {
        let _ = self.wake.drain();
        loop {
            let request = match self.commands.try_recv() {
                Ok(request) => request,
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            };
            if matches!(request.command, Command::Stop) {
                let _ = request.reply.send(Ok(Reply::Done));
                return false;
            }
            let keeps_tables = request.command.keeps_tables();
            let reply = commands::run(&mut self.fwd, request.command, now);
            // How each port is read (handoff.rs): ports, flow rules, meters, policies and QoS change
            // it; reads (a metrics scrape) do not.
            if !keeps_tables {
                // One decision per port: pinned to worker 0, run by the kernel, or read by
                // nvod on every worker.
                handoff::rehome(&mut self.fwd.core);
            }
            // The kernel's maps follow before the requester hears back: once a change is
            // acknowledged, both datapaths forward by it.
            kernel::sync(&mut self.fwd.core, now);
            // The requester may have gone (its connection closed); the change stands anyway,
            // as it is already in the state file.
            let _ = request.reply.send(reply);
        }
    }

    /// Logs a repeated error at most once per [`ERROR_LOG_INTERVAL`].
    fn log_error(&mut self, now: Instant, message: std::fmt::Arguments<'_>) {
        if self
            .last_error_log
            .is_none_or(|t| now.duration_since(t) >= ERROR_LOG_INTERVAL)
        {
            log::warn!("{message} (repeats are not logged for a minute)");
            self.last_error_log = Some(now);
        }
    }
}
