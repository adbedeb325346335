//! The other datapath's connection table as the pipeline asks it on a miss
//! (policy_external.rs): its lookup runs with the shared table's lock released, and a flow
//! another worker tracks in the meantime is adopted at most once; a "not tracked" answer is
//! remembered for a second.
//!
//! ```text
//!   worker A ── P1 web 10.0.0.1 (app=web) ─┐                      ┌─ the other table
//!   worker B ── the same network, ports ──┤ network 100, shared  │  (a test double that
//!                                          │ connection table     │   counts its lookups)
//!               P2 db 10.0.0.2 (app=db)  ──┘                      └─
//!   rules: 0 allow web→db tcp 5432 · 1 allow db→web udp 53 (which selects web too)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::policy_bed::*;
use common::*;
use nvo_pipeline::policy::{PolicyCommand, SharedConntrack};
use nvo_pipeline::{Action, Actions, DropReason, ExternalFlows, Mac, Pipeline};
use nvo_policy::{FlowKey, Labels, Policy, PolicySpec};

fn key(ips: (&str, &str), ports: (u16, u16)) -> FlowKey {
    FlowKey {
        network: VNI.0,
        proto: 6,
        src: ip(ips.0),
        dst: ip(ips.1),
        sport: ports.0,
        dport: ports.1,
    }
}

/// A worker's pipeline: web on P1, db on P2, their MACs learned, the policy on `ct`.
fn worker(ct: &SharedConntrack) -> Pipeline {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    for (port, m) in [(P1, 1), (P2, 2), (P3, 3)] {
        p.from_port(port, &frame(Mac::BROADCAST, mac(m)), t, &mut a);
    }
    for (port, app) in [(P1, "web"), (P2, "db")] {
        let labels = Labels::new([("app", app)]).unwrap();
        p.policy_command(PolicyCommand::LabelPort(port, labels))
            .unwrap();
    }
    let spec: PolicySpec = serde_json::from_str(WEB_DB).unwrap();
    let policy = Arc::new(Policy::new(spec).unwrap());
    p.policy_command(PolicyCommand::Set(VNI, policy, ct.clone()))
        .unwrap();
    p
}

/// The kernel's table, tracking one flow; while worker A asks it, worker B (on another
/// thread) passes the same flow's first packet through the shared table.
struct Racing {
    tracked: FlowKey,
    other: Mutex<Option<Pipeline>>,
    /// Worker B did not get the shared lock within the deadline: A held it while asking.
    blocked: AtomicBool,
    asked: AtomicUsize,
}

impl ExternalFlows for Racing {
    fn lookup(&self, key: &FlowKey) -> Option<(FlowKey, Duration)> {
        self.asked.fetch_add(1, SeqCst);
        let other = self.other.lock().unwrap().take();
        if let Some(mut b) = other {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let mut a = Actions::new();
                let frame = tcp(mac(2), mac(1), WEB, (40000, 5432));
                b.from_port(P1, &frame, Instant::now(), &mut a);
                let _ = tx.send((b, plain(&a)));
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok((b, out)) => {
                    assert_eq!(out, [deliver(P2)], "worker B: allowed by rule 0");
                    *self.other.lock().unwrap() = Some(b);
                }
                Err(_) => self.blocked.store(true, SeqCst),
            }
        }
        (*key == self.tracked || key.reversed() == self.tracked)
            .then_some((self.tracked, Duration::from_secs(3)))
    }
}

#[test]
fn the_lookup_runs_unlocked_and_a_flow_tracked_meanwhile_is_not_adopted_twice() {
    let ct = SharedConntrack::default();
    let mut a_worker = worker(&ct);
    let flow = key(WEB, (40000, 5432));
    let racing = Arc::new(Racing {
        tracked: flow,
        other: Mutex::new(Some(worker(&ct))),
        blocked: AtomicBool::new(false),
        asked: AtomicUsize::new(0),
    });
    a_worker.set_external_flows(Some(racing.clone()));
    let t = Instant::now();
    let mut a = Actions::new();
    a_worker.from_port(P1, &tcp(mac(2), mac(1), WEB, (40000, 5432)), t, &mut a);
    assert!(
        !racing.blocked.load(SeqCst),
        "worker B waited on the shared lock while A asked the other table"
    );
    assert_eq!(plain(&a), [deliver(P2)]);
    assert_eq!(racing.asked.load(SeqCst), 1);
    let c = counters(&mut a_worker);
    assert_eq!(
        (c.allowed, c.tracked),
        (0, 1),
        "A found the flow B tracked in between"
    );
    let mut b_worker = racing.other.lock().unwrap().take().expect("B came back");
    assert_eq!(counters(&mut b_worker).allowed, 1);
    // B's entry (TCP's full timeout) was kept, not replaced by the adopted 3 s: the reply
    // passes 10 s later without asking the other table again.
    a_worker.from_port(
        P2,
        &tcp(mac(1), mac(2), DB, (5432, 40000)),
        t + Duration::from_secs(10),
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1)]);
    assert_eq!(racing.asked.load(SeqCst), 1);
    // A flow nobody tracks is asked about once and decided by the rules (denied: rule 1
    // selects web, nothing allows db → web TCP).
    a_worker.from_port(P2, &tcp(mac(1), mac(2), DB, (5432, 40001)), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    assert_eq!(racing.asked.load(SeqCst), 2);
    // Its repeats within a second are not asked about again (the "not tracked" answer is
    // remembered); after that, once more.
    for ms in [1, 300, 999] {
        let at = t + Duration::from_millis(ms);
        a_worker.from_port(P2, &tcp(mac(1), mac(2), DB, (5432, 40001)), at, &mut a);
        assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    }
    assert_eq!(racing.asked.load(SeqCst), 2);
    let at = t + Duration::from_millis(1000);
    a_worker.from_port(P2, &tcp(mac(1), mac(2), DB, (5432, 40001)), at, &mut a);
    assert_eq!(racing.asked.load(SeqCst), 3);
    let c = counters(&mut a_worker);
    assert_eq!((c.kernel_lookups, c.kernel_lookups_skipped), (3, 3));
    assert_eq!(a_worker.counters().drops.get(DropReason::PolicyDenied), 5);
}
