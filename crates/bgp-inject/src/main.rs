//! `nvo-bgp-inject`: see the crate docs (`lib.rs`) and `nvo-bgp-inject --help`.
//!
//! Stdout carries one JSON object per line, each with `event`, `t_s` (seconds since the
//! program started, monotonic) and `unix_s` (wall clock, to line up with other tools' polls).
//! A failure also prints one line on stderr.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::{json, Value};

use nvo_bgp_inject::cli::Cli;
use nvo_bgp_inject::pack;
use nvo_bgp_inject::peer::{self, Closure, PeerConfig, PeerError, Session};
use nvo_bgp_inject::routes::{Plan, PlanError};

/// Bytes written per lock of the socket: large enough for few syscalls, small enough that a
/// keepalive never waits long behind a burst of UPDATEs.
const CHUNK: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
enum InjectError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("cannot encode the updates: {0}")]
    Encode(#[from] nvo_bgp::Error),
    #[error(transparent)]
    Peer(#[from] PeerError),
    #[error("the session ended: {0}")]
    Closed(String),
}

struct Clock(Instant);

impl Clock {
    fn event(&self, name: &str, fields: Value) {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut line = json!({"event": name, "t_s": secs(self.0.elapsed()), "unix_s": unix});
        if let (Some(line), Value::Object(extra)) = (line.as_object_mut(), fields) {
            line.extend(extra);
        }
        println!("{line}");
    }
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let clock = Clock(Instant::now());
    match run(&cli, &clock) {
        Ok(()) => ExitCode::SUCCESS,
        Err(InjectError::Usage(e)) => {
            eprintln!("nvo-bgp-inject: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            clock.event("error", json!({"error": e.to_string()}));
            eprintln!("nvo-bgp-inject: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every message to send, built before connecting so that the timings measure the wire.
struct Batches {
    announce: Vec<Vec<u8>>,
    withdraw: Vec<Vec<u8>>,
    routes: usize,
}

fn build(plan: &Plan) -> Result<Batches, InjectError> {
    let mut b = Batches {
        announce: Vec::new(),
        withdraw: Vec::new(),
        routes: 0,
    };
    for group in plan.build()? {
        b.announce.extend(pack::announcements(
            plan.next_hop,
            &group.attributes,
            &group.macs,
        )?);
        b.withdraw.extend(pack::withdrawals(&group.macs)?);
        b.routes += group.macs.len();
        if let Some(inclusive) = &group.inclusive {
            let attrs = group.inclusive_attributes(plan.next_hop);
            let one = std::slice::from_ref(inclusive);
            b.announce
                .extend(pack::announcements(plan.next_hop, &attrs, one)?);
            b.withdraw.extend(pack::withdrawals(one)?);
            b.routes += 1;
        }
    }
    Ok(b)
}

fn duration(what: &str, s: Option<f64>) -> Result<Option<Duration>, InjectError> {
    s.map(|s| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| InjectError::Usage(format!("{what} {s} is not a number of seconds ≥ 0")))
    })
    .transpose()
}

fn run(cli: &Cli, clock: &Clock) -> Result<(), InjectError> {
    let withdraw_after = duration("--withdraw-after", cli.withdraw_after)?;
    let hold_after = duration("--hold-after", cli.hold_after)?;
    let timeout = duration("--timeout", Some(cli.timeout))?.unwrap_or_default();
    if let (Some(w), Some(h)) = (withdraw_after, hold_after) {
        if h < w {
            let msg = format!("--hold-after {h:?} comes before --withdraw-after {w:?}");
            return Err(InjectError::Usage(msg));
        }
    }
    let plan = Plan {
        asn: cli.asn,
        router_id: cli.router_id,
        next_hop: cli.next_hop.unwrap_or(cli.router_id.into()),
        vnis: cli.vnis.0.clone(),
        routes: cli.routes,
        first: cli.first,
        type3: cli.type3,
    };
    let t = Instant::now();
    let batches = build(&plan)?;
    let bytes: usize = batches.announce.iter().map(Vec::len).sum();
    clock.event(
        "built",
        json!({"routes": batches.routes, "updates": batches.announce.len(),
        "bytes": bytes, "vnis": plan.vnis.len(), "build_s": secs(t.elapsed())}),
    );
    let cfg = PeerConfig {
        addr: cli.peer,
        asn: cli.asn,
        peer_as: cli.peer_as.unwrap_or(cli.asn),
        router_id: cli.router_id,
        hold_time: cli.hold_time,
        timeout,
    };
    let t = Instant::now();
    let (session, connect) = peer::establish(&cfg)?;
    clock.event(
        "connected",
        json!({"peer": cli.peer.to_string(), "connect_s": secs(connect)}),
    );
    clock.event(
        "established",
        json!({"peer_id": session.peer.bgp_id.to_string(),
        "peer_as": session.peer.asn, "hold_time": session.peer.hold_time,
        "open_s": secs(t.elapsed())}),
    );
    let t = Instant::now();
    send_all(&session, &batches.announce)?;
    let send_s = t.elapsed().as_secs_f64();
    clock.event(
        "sent",
        json!({"routes": batches.routes, "updates": batches.announce.len(),
        "bytes": bytes, "send_s": secs(t.elapsed()),
        "routes_per_s": (batches.routes as f64 / send_s.max(1e-9)).round()}),
    );
    session.send(&pack::end_of_rib()?)?;
    clock.event("end_of_rib", json!({}));
    hold(&session, clock, &batches, withdraw_after, hold_after)?;
    let (updates, keepalives) = received(&session);
    session.shut_down()?;
    clock.event(
        "closed",
        json!({"reason": "--hold-after elapsed",
        "updates_received": updates, "keepalives_received": keepalives}),
    );
    Ok(())
}

fn received(session: &Session) -> (u64, u64) {
    let r = &session.received;
    (
        r.updates.load(Ordering::Relaxed),
        r.keepalives.load(Ordering::Relaxed),
    )
}

fn send_all(session: &Session, messages: &[Vec<u8>]) -> Result<(), InjectError> {
    let mut chunk = Vec::with_capacity(CHUNK + 4096);
    for (i, msg) in messages.iter().enumerate() {
        chunk.extend_from_slice(msg);
        if chunk.len() >= CHUNK || i + 1 == messages.len() {
            if let Some(c) = session.closed() {
                return Err(closed(c));
            }
            session.send(&chunk)?;
            chunk.clear();
        }
    }
    Ok(())
}

fn closed(c: Closure) -> InjectError {
    match c {
        Closure::Error(e) => InjectError::Peer(e),
        Closure::HoldTimerExpired(h) => {
            InjectError::Closed(format!("nothing from the peer for the hold time ({h} s)"))
        }
        Closure::Eof => InjectError::Closed("the peer closed the connection".into()),
    }
}

/// Keeps the session up after End-of-RIB: withdraws at `withdraw_after`, returns at
/// `hold_after` (never without it, unless the session ends: then an error).
fn hold(
    session: &Session,
    clock: &Clock,
    batches: &Batches,
    withdraw_after: Option<Duration>,
    hold_after: Option<Duration>,
) -> Result<(), InjectError> {
    let start = Instant::now();
    let mut withdraw_at = withdraw_after;
    loop {
        let next = [withdraw_at, hold_after].into_iter().flatten().min();
        let wait = match next {
            Some(at) => at.saturating_sub(start.elapsed()),
            None => Duration::from_secs(3600),
        };
        if let Some(c) = session.wait_closed(wait) {
            let (updates, keepalives) = received(session);
            clock.event(
                "peer_closed",
                json!({"updates_received": updates,
                "keepalives_received": keepalives}),
            );
            return Err(closed(c));
        }
        let now = start.elapsed();
        if withdraw_at.is_some_and(|w| now >= w) {
            withdraw_at = None;
            let t = Instant::now();
            send_all(session, &batches.withdraw)?;
            clock.event(
                "withdrawn",
                json!({"routes": batches.routes,
                "updates": batches.withdraw.len(), "send_s": secs(t.elapsed())}),
            );
        }
        if hold_after.is_some_and(|h| now >= h) {
            return Ok(());
        }
    }
}
