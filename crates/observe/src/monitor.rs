//! The fan-out of `nvo monitor`'s events to the listeners of `GET /v1/monitor`.
//!
//! ```text
//!  datapath thread ─try_send─► ring (bounded; full → lost{datapath})
//!  eBPF drop()  ─ringbuf─► datapath thread ─┘     (ringbuf full → lost{kernel}, per CPU)
//!        nvod's monitor task ─► Hub::publish ─► per listener: filter → try_send into its own
//!                                               bounded queue (full → lost{listener})
//!  GET /v1/monitor ◄─ Listener::next: a `lost` event first when its count grew, then the queue
//! ```
//!
//! Nobody waits on anybody: the datapath never blocks on the ring, the task never blocks on a
//! listener; a slow listener loses its own events only, counted and told. [`Hub::listening`]
//! is the flag the datapath reads (one relaxed atomic load per event site) to know whether to
//! record anything at all.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use nvo_api::{MonitorEvent, MonitorType};
use tokio::sync::mpsc;

/// Events a listener's queue holds before it loses them.
pub const LISTENER_QUEUE: usize = 1024;
/// Listeners at once; more are refused.
pub const MAX_LISTENERS: usize = 16;

/// Why a filter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// A parameter that is not a filter.
    #[error("unknown monitor filter {0:?}: use network, port, reason or type")]
    Unknown(String),
    /// `network=` that is not a VNI.
    #[error("network={0:?} is not a vni (1..=16777215)")]
    Network(String),
    /// `reason=` that names no drop reason.
    #[error("reason={0:?} is not a drop reason (nvo counters lists them)")]
    Reason(String),
    /// A value whose percent-encoding is broken.
    #[error("{0}: bad percent-encoding")]
    Encoding(String),
    /// `type=` with a word that is no event type.
    #[error("type={0:?} is not an event type: use drop, learn, move, age, flood, trace, lost")]
    Type(String),
}

/// Which events a listener wants; an absent filter lets everything through but traces,
/// which only a `type` filter naming `trace` gets (they are per packet). `lost` events always
/// pass: a listener is always told what it missed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this network.
    pub network: Option<u32>,
    /// Only this port.
    pub port: Option<String>,
    /// Only drops for this reason (implies `type=drop`).
    pub reason: Option<String>,
    /// Only these types.
    pub types: Option<Vec<MonitorType>>,
}

impl Filter {
    /// Reads a query string (`network=10&type=drop,learn`); `is_reason` says which reason
    /// names exist.
    pub fn parse(query: &str, is_reason: impl Fn(&str) -> bool) -> Result<Filter, FilterError> {
        let mut f = Filter::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = nvo_api::query::decode(value)
                .ok_or_else(|| FilterError::Encoding(key.to_owned()))?;
            match key {
                "network" => {
                    let vni = value
                        .parse::<u32>()
                        .ok()
                        .filter(|v| (1..=nvo_api::VNI_MAX).contains(v))
                        .ok_or_else(|| FilterError::Network(value.clone()))?;
                    f.network = Some(vni);
                }
                "port" => f.port = Some(value),
                "reason" => {
                    if !is_reason(&value) {
                        return Err(FilterError::Reason(value));
                    }
                    f.reason = Some(value);
                }
                "type" => {
                    let mut types = Vec::new();
                    for word in value.split(',').filter(|w| !w.is_empty()) {
                        types.push(
                            MonitorType::from_name(word)
                                .ok_or_else(|| FilterError::Type(word.to_owned()))?,
                        );
                    }
                    f.types = Some(types);
                }
                other => return Err(FilterError::Unknown(other.to_owned())),
            }
        }
        Ok(f)
    }

    /// Whether `ev` passes.
    pub fn matches(&self, ev: &MonitorEvent) -> bool {
        if ev.kind == MonitorType::Lost {
            return true;
        }
        match &self.types {
            Some(types) if !types.contains(&ev.kind) => return false,
            None if ev.kind == MonitorType::Trace => return false,
            _ => {}
        }
        if self.network.is_some() && ev.network != self.network {
            return false;
        }
        if self.port.is_some() && ev.port != self.port {
            return false;
        }
        if self.reason.is_some() && ev.reason != self.reason {
            return false;
        }
        true
    }
}

impl Filter {
    /// Whether this listener asked for traces (its `type` filter names `trace`).
    pub fn wants_traces(&self) -> bool {
        self.types
            .as_ref()
            .is_some_and(|t| t.contains(&MonitorType::Trace))
    }
}

/// The stages a `lost` event names, in [`Lost::stages`] order.
const STAGES: [&str; 5] = ["listener", "datapath", "kernel", "fdb", "rate"];

/// A listener's pending lost counts, by stage: events its queue had no room for
/// (`listener`), and the counts of `lost` events of the other stages that had no room either
/// (carried, so that no loss goes untold).
type Pending = Arc<[AtomicU64; STAGES.len()]>;

struct Slot {
    id: u64,
    filter: Filter,
    tx: mpsc::Sender<MonitorEvent>,
    lost: Pending,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    slots: Vec<Slot>,
}

/// Events lost so far, by where (the `stage` label of `nvo_monitor_events_lost_total`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    /// Listeners' queues were full.
    pub listener: u64,
    /// The userspace datapath's ring to nvod was full.
    pub datapath: u64,
    /// The eBPF monitor ring was full.
    pub kernel: u64,
    /// The pipeline's FDB event buffer was full.
    pub fdb: u64,
    /// Beyond the rate the datapath hands events at (`nvo_datapath::monitor::RATE`).
    pub rate: u64,
}

impl Lost {
    /// (stage, count) pairs, as the metric's series.
    pub fn stages(&self) -> [(&'static str, u64); STAGES.len()] {
        let counts = [
            self.listener,
            self.datapath,
            self.kernel,
            self.fdb,
            self.rate,
        ];
        std::array::from_fn(|i| (STAGES[i], counts[i]))
    }
}

/// The listeners and what they lost.
pub struct Hub {
    inner: Mutex<Inner>,
    listening: Arc<AtomicBool>,
    tracing: Arc<AtomicBool>,
    listener_lost: AtomicU64,
    capacity: usize,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("listening", &self.listening.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Why a listener was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_LISTENERS} monitors are listening already; stop one and try again")]
pub struct TooMany;

impl Hub {
    /// A hub without listeners; `listening` is set while it has any.
    pub fn new(listening: Arc<AtomicBool>) -> Arc<Hub> {
        Hub::with_capacity(listening, LISTENER_QUEUE)
    }

    /// [`Hub::new`] with each listener's queue holding `capacity` events.
    pub fn with_capacity(listening: Arc<AtomicBool>, capacity: usize) -> Arc<Hub> {
        Arc::new(Hub {
            inner: Mutex::new(Inner::default()),
            listening,
            tracing: Arc::new(AtomicBool::new(false)),
            listener_lost: AtomicU64::new(0),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the list as it was: still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flag the datapath reads: true while someone listens.
    pub fn listening(&self) -> &Arc<AtomicBool> {
        &self.listening
    }

    /// The second flag the datapath reads: true while a listener asked for traces (then
    /// every packet forwarded is recorded).
    pub fn tracing(&self) -> &Arc<AtomicBool> {
        &self.tracing
    }

    fn set_flags(&self, inner: &Inner) {
        self.listening
            .store(!inner.slots.is_empty(), Ordering::Relaxed);
        let tracing = inner.slots.iter().any(|s| s.filter.wants_traces());
        self.tracing.store(tracing, Ordering::Relaxed);
    }

    /// A new listener with its own queue.
    pub fn subscribe(self: &Arc<Hub>, filter: Filter) -> Result<Listener, TooMany> {
        let mut inner = self.lock();
        if inner.slots.len() >= MAX_LISTENERS {
            return Err(TooMany);
        }
        let (tx, rx) = mpsc::channel(self.capacity);
        let lost: Pending = Arc::default();
        inner.next_id += 1;
        let id = inner.next_id;
        inner.slots.push(Slot {
            id,
            filter,
            tx,
            lost: lost.clone(),
        });
        self.set_flags(&inner);
        Ok(Listener {
            id,
            hub: self.clone(),
            rx,
            lost,
        })
    }

    /// Hands `ev` to every listener whose filter it passes, never waiting: a full queue
    /// counts it lost for that listener.
    pub fn publish(&self, ev: &MonitorEvent) {
        let inner = self.lock();
        for slot in inner.slots.iter().filter(|s| s.filter.matches(ev)) {
            if slot.tx.try_send(ev.clone()).is_err() {
                let stage = ev.stage.as_deref().unwrap_or("listener");
                match STAGES.iter().position(|s| *s == stage) {
                    Some(at) if ev.kind == MonitorType::Lost => {
                        slot.lost[at].fetch_add(ev.count.unwrap_or(0), Ordering::Relaxed);
                    }
                    _ => {
                        slot.lost[0].fetch_add(1, Ordering::Relaxed);
                        self.listener_lost.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// How many listeners there are.
    pub fn listeners(&self) -> usize {
        self.lock().slots.len()
    }

    /// Events listeners' queues lost, all listeners so far.
    pub fn listener_lost(&self) -> u64 {
        self.listener_lost.load(Ordering::Relaxed)
    }

    fn remove(&self, id: u64) {
        let mut inner = self.lock();
        inner.slots.retain(|s| s.id != id);
        self.set_flags(&inner);
    }
}

/// One listener: its queue and what it lost. Dropping it unsubscribes.
pub struct Listener {
    id: u64,
    hub: Arc<Hub>,
    rx: mpsc::Receiver<MonitorEvent>,
    lost: Pending,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("id", &self.id).finish()
    }
}

impl Listener {
    /// The next event: a `lost` event when events were lost since the last call (its own,
    /// stage `listener`, or told by the other stages while its queue was full), otherwise the
    /// next queued one, waiting for it. (A listener waiting here has an empty queue, so
    /// nothing it could lose is pending meanwhile.)
    pub async fn next(&mut self) -> Option<MonitorEvent> {
        if let Some(lost) = self.take_lost() {
            return Some(lost);
        }
        // Events lost while this one waited are told on the next call: cancel-safe, as
        // nothing is taken before the await.
        self.rx.recv().await
    }

    fn take_lost(&self) -> Option<MonitorEvent> {
        STAGES.iter().zip(self.lost.iter()).find_map(|(stage, n)| {
            let n = n.swap(0, Ordering::Relaxed);
            (n > 0).then(|| lost_event(stage, n))
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.remove(self.id);
    }
}

/// A `lost` event: `count` events lost at `stage`, now.
pub fn lost_event(stage: &str, count: u64) -> MonitorEvent {
    let mut ev = MonitorEvent::new(MonitorType::Lost, now_ns());
    ev.count = Some(count);
    ev.stage = Some(stage.to_owned());
    ev
}

/// Nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop_event(vni: u32, port: &str, reason: &str) -> MonitorEvent {
        let mut ev = MonitorEvent::new(MonitorType::Drop, 1);
        ev.network = Some(vni);
        ev.port = Some(port.to_owned());
        ev.reason = Some(reason.to_owned());
        ev
    }

    fn learn_event(vni: u32) -> MonitorEvent {
        let mut ev = MonitorEvent::new(MonitorType::Learn, 2);
        ev.network = Some(vni);
        ev
    }

    fn is_reason(r: &str) -> bool {
        ["unknown_vni", "hairpin"].contains(&r)
    }

    #[test]
    fn filters_parse_and_match() {
        let f = Filter::parse("network=10&type=drop%2Clearn&port=veth1", is_reason).unwrap();
        assert_eq!(f.network, Some(10));
        assert_eq!(f.types, Some(vec![MonitorType::Drop, MonitorType::Learn]));
        assert!(f.matches(&drop_event(10, "veth1", "hairpin")));
        assert!(
            !f.matches(&drop_event(11, "veth1", "hairpin")),
            "other network"
        );
        assert!(
            !f.matches(&drop_event(10, "veth2", "hairpin")),
            "other port"
        );
        let mut flood = drop_event(10, "veth1", "hairpin");
        flood.kind = MonitorType::Flood;
        assert!(!f.matches(&flood), "type not asked for");
        assert!(f.matches(&lost_event("listener", 3)), "lost always passes");
        let r = Filter::parse("reason=unknown_vni", is_reason).unwrap();
        assert!(r.matches(&drop_event(1, "p", "unknown_vni")));
        assert!(!r.matches(&drop_event(1, "p", "hairpin")));
        assert!(
            !r.matches(&learn_event(1)),
            "a reason filter keeps drops only"
        );
        assert!(Filter::parse("", is_reason)
            .unwrap()
            .matches(&learn_event(5)));
    }

    #[test]
    fn bad_filters_are_refused_with_the_value() {
        let e = |q| Filter::parse(q, is_reason).unwrap_err().to_string();
        assert!(e("network=0").contains("\"0\""));
        assert!(e("network=16777216").contains("16777216"));
        assert!(e("reason=nope").contains("nope"));
        assert!(e("type=drop,bogus").contains("bogus"));
        assert!(e("vni=3").contains("vni"));
        assert!(e("port=veth%2").contains("port: bad percent-encoding"));
    }

    #[tokio::test]
    async fn a_full_queue_loses_and_tells_and_others_get_everything() {
        let flag = Arc::new(AtomicBool::new(false));
        let hub = Hub::with_capacity(flag.clone(), 4);
        let mut slow = hub.subscribe(Filter::default()).unwrap();
        let mut quick = hub
            .subscribe(Filter::parse("network=7", is_reason).unwrap())
            .unwrap();
        assert!(flag.load(Ordering::Relaxed), "listening while subscribed");
        let mut quick_got = 0;
        for i in 0..10 {
            hub.publish(&drop_event(if i % 2 == 0 { 7 } else { 8 }, "p", "hairpin"));
            if i % 2 == 0 {
                let ev = quick.next().await.unwrap();
                assert_eq!(ev.network, Some(7));
                quick_got += 1;
            }
        }
        assert_eq!(quick_got, 5);
        // The slow one held 4 of 10 and lost 6: told first, then its 4 events.
        let first = slow.next().await.unwrap();
        assert_eq!(first.kind, MonitorType::Lost);
        assert_eq!(first.count, Some(6));
        assert_eq!(first.stage.as_deref(), Some("listener"));
        for _ in 0..4 {
            assert_eq!(slow.next().await.unwrap().kind, MonitorType::Drop);
        }
        assert_eq!(hub.listener_lost(), 6);
        // A `lost` event of another stage that finds the queue full is carried, not lost.
        for _ in 0..4 {
            hub.publish(&learn_event(1));
        }
        hub.publish(&lost_event("datapath", 40));
        hub.publish(&lost_event("datapath", 2));
        hub.publish(&learn_event(1));
        let told = slow.next().await.unwrap();
        assert_eq!(
            (told.stage.as_deref(), told.count),
            (Some("listener"), Some(1))
        );
        let told = slow.next().await.unwrap();
        assert_eq!(
            (told.stage.as_deref(), told.count),
            (Some("datapath"), Some(42))
        );
        for _ in 0..4 {
            assert_eq!(slow.next().await.unwrap().kind, MonitorType::Learn);
        }
        assert_eq!(
            hub.listener_lost(),
            7,
            "carried counts are not the listener's"
        );
        drop(slow);
        assert_eq!(hub.listeners(), 1);
        assert!(flag.load(Ordering::Relaxed));
        drop(quick);
        assert_eq!(hub.listeners(), 0);
        assert!(
            !flag.load(Ordering::Relaxed),
            "nobody listens: the datapath records nothing"
        );
    }

    #[test]
    fn traces_only_to_listeners_that_ask_and_the_tracing_flag_follows_them() {
        let mut trace = learn_event(5);
        trace.kind = MonitorType::Trace;
        let default = Filter::parse("", is_reason).unwrap();
        assert!(!default.wants_traces());
        assert!(!default.matches(&trace), "the default types exclude trace");
        assert!(default.matches(&learn_event(5)));
        let flood_only = Filter::parse("type=flood,drop", is_reason).unwrap();
        assert!(!flood_only.matches(&trace));
        let traces = Filter::parse("type=trace", is_reason).unwrap();
        assert!(traces.wants_traces());
        assert!(traces.matches(&trace));
        assert!(!traces.matches(&learn_event(5)));

        let listening = Arc::new(AtomicBool::new(false));
        let hub = Hub::new(listening.clone());
        let plain = hub.subscribe(default).unwrap();
        assert!(listening.load(Ordering::Relaxed));
        assert!(
            !hub.tracing().load(Ordering::Relaxed),
            "nobody asked for traces"
        );
        let t1 = hub.subscribe(traces.clone()).unwrap();
        let t2 = hub.subscribe(traces).unwrap();
        assert!(hub.tracing().load(Ordering::Relaxed));
        drop(t1);
        assert!(hub.tracing().load(Ordering::Relaxed), "one tracer left");
        drop(t2);
        assert!(!hub.tracing().load(Ordering::Relaxed), "no tracer left");
        assert!(listening.load(Ordering::Relaxed));
        drop(plain);
        assert!(!listening.load(Ordering::Relaxed));
    }

    #[test]
    fn listeners_are_bounded() {
        let hub = Hub::new(Arc::new(AtomicBool::new(false)));
        let held: Vec<_> = (0..MAX_LISTENERS)
            .map(|_| hub.subscribe(Filter::default()).unwrap())
            .collect();
        assert_eq!(hub.subscribe(Filter::default()).unwrap_err(), TooMany);
        drop(held);
        assert!(hub.subscribe(Filter::default()).is_ok());
    }
}
