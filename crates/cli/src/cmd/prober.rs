//! `nvo prober`: a RON-style control plane for the routed overlay (issue 6 item 5,
//! docs/design/overlay.md "Probes and the prober"), built on nvod's public API only.
//!
//! Every `--interval` seconds, one round:
//!
//! ```text
//!  GET /v1/overlay            ─► own ID
//!  GET /v1/overlay/nodes      ─► the LIB: the destinations, and the relays (nodes with a locator)
//!  GET /v1/overlay/routes/APP ─► each destination's current path: its single next hop, or direct
//!  for each node d of the LIB but this one:
//!    POST /v1/overlay/probe {dst: d[, via: d]}   the direct path
//!    POST /v1/overlay/probe {dst: d, via: r}     each one-relay path, r ∉ {own, d}
//!    score each path ─► decide(current, scores, streak[d]) ─► a new path, or none
//!      via r:  PUT /v1/overlay/routes/APP/d {next_hops: [r]}
//!      direct: DELETE /v1/overlay/routes/APP/d
//! ```
//!
//! A path scores its mean RTT in µs plus its loss times `--loss-penalty-us` (the cost of 100 %
//! loss); a path without a reply, or that nvod refused to probe, is unusable. The best path
//! replaces the current one only when its score is lower by more than `--hysteresis` (a
//! fraction of the current score) in `--confirm` consecutive rounds, so two paths of about the
//! same quality never make the route flap. The rounds need not name the same winner: what must
//! persist is that the current path is clearly beaten; the switch goes to the round's best.
//! That decision is [`decide::decide`], a pure function of the scores; this module probes
//! and applies.
//!
//! nvod sends a probe without `via` along its routes, so once a relay route to `d` is installed
//! `{dst: d}` measures that relay again; the direct path is then probed as `{dst: d, via: d}`:
//! first to d's own locator, by the contract.
//!
//! Left alone: destinations outside the LIB (tree IDs) and routes that are not a single relay
//! (several next hops, or this node among them). Errors from nvod are logged on stderr, and the
//! round goes on; the prober never exits on one. Ctrl-C ends it by SIGINT's default action: each
//! change is one API call nvod applies whole, and the streaks, its only state, are disposable.

pub mod decide;

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use clap::Args;
use nvo_api::{
    Client, ClientError, OverlayApp, OverlayInfo, OverlayNode, OverlayRoute, ProbeRequest,
    ProbeResult, RouteNextHops,
};
use serde::Serialize;
use serde_json::Value;

use self::decide::{current_path, decide, Path, Policy, Score, Streak};
use super::overlay::parse_app;
use super::{CliError, Format};

/// `nvo prober`.
#[derive(Debug, Args)]
pub struct ProberArgs {
    /// Seconds from the start of one round to the start of the next (fractions allowed); a
    /// longer round is followed at once by the next.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_interval)]
    pub interval: Duration,
    /// Probes per path and round, 1 to 100.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub count: u32,
    /// How long nvod waits for a path's replies, 10 to 5000 ms.
    #[arg(long, value_name = "MS", default_value_t = 500,
          value_parser = clap::value_parser!(u32).range(10..=5000))]
    pub timeout_ms: u32,
    /// How much better (a fraction of the current path's score, 0 to 1) a path must be to
    /// replace the current one.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.2, value_parser = parse_fraction)]
    pub hysteresis: f64,
    /// Consecutive rounds in which the current path must be beaten before it is replaced.
    #[arg(long, value_name = "ROUNDS", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub confirm: u32,
    /// What 100 % loss adds to a path's score, in µs (the score is mean RTT + loss × this).
    #[arg(long, value_name = "US", default_value_t = 100_000)]
    pub loss_penalty_us: u64,
    /// The application whose routes the prober installs: ethernet, ipv4 or ipv6.
    #[arg(long, value_parser = parse_app, default_value = "ethernet")]
    pub app: OverlayApp,
    /// Run one round and exit.
    #[arg(long, conflicts_with = "rounds")]
    pub once: bool,
    /// Run N rounds and exit (default: until Ctrl-C).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub rounds: Option<u64>,
}

/// A prober option refused by clap, with the text as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProberArgError {
    /// `--interval` not a number of seconds in range.
    #[error("{0:?} is not an interval in seconds (above 0, at most 86400)")]
    Interval(String),
    /// `--hysteresis` not a fraction in [0, 1).
    #[error("{0:?} is not a fraction from 0 to below 1 (0.2 is 20 %)")]
    Fraction(String),
}

fn parse_interval(text: &str) -> Result<Duration, ProberArgError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| ProberArgError::Interval(text.to_owned()))
}

fn parse_fraction(text: &str) -> Result<f64, ProberArgError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| (0.0..1.0).contains(f))
        .ok_or_else(|| ProberArgError::Fraction(text.to_owned()))
}

/// The probe that measures `path` to `dst` while `current` is installed: the direct path of a
/// destination with a relay route goes `via` the destination itself (without `via`, nvod
/// would follow the route).
pub fn probe_request(
    dst: u32,
    path: Path,
    current: Path,
    count: u32,
    timeout_ms: u32,
) -> ProbeRequest {
    let via = match (path, current) {
        (Path::Direct, Path::Direct) => None,
        (Path::Direct, Path::Via(_)) => Some(dst),
        (Path::Via(r), _) => Some(r),
    };
    ProbeRequest {
        dst,
        via,
        count: Some(count),
        timeout_ms: Some(timeout_ms),
    }
}

/// One path's measurement in a round.
#[derive(Debug, Clone, Serialize)]
pub struct PathReport {
    /// The relay; absent: direct.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<u32>,
    /// nvod's answer; absent when the probe failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeResult>,
    /// The score in µs; null: unusable.
    pub score_us: Option<f64>,
}

/// A route change the prober made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The relay before; null: direct.
    pub from_via: Option<u32>,
    /// The relay now; null: direct.
    pub to_via: Option<u32>,
}

/// One destination's round.
#[derive(Debug, Clone, Serialize)]
pub struct DestReport {
    /// The destination node.
    pub dst: u32,
    /// Its relay at the start of the round; null: direct.
    pub current_via: Option<u32>,
    /// Every path measured, direct first.
    pub paths: Vec<PathReport>,
    /// Rounds in a row the current path has been beaten (0 after a change).
    pub streak: u32,
    /// The change made, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

/// One round, as `-o json` prints it (one object per line).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RoundReport {
    /// Rounds since the start, from 1.
    pub round: u64,
    /// This node's ID; absent when it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<u32>,
    /// The destinations probed.
    pub destinations: Vec<DestReport>,
    /// Destinations whose route is not the prober's (trees, this node as next hop).
    pub left_alone: Vec<u32>,
    /// What failed this round, one line each (also logged on stderr).
    pub errors: Vec<String>,
}

impl RoundReport {
    fn error(&mut self, message: String) {
        eprintln!("nvo prober: round {}: {message}", self.round);
        self.errors.push(message);
    }
}

/// What a round reads before probing.
struct View {
    own: u32,
    nodes: Vec<OverlayNode>,
    routes: HashMap<u32, Vec<u32>>,
}

fn view(client: &Client, app: OverlayApp) -> Result<View, ClientError> {
    let info: OverlayInfo = client.get("/v1/overlay")?;
    let nodes: Vec<OverlayNode> = client.get("/v1/overlay/nodes")?;
    let routes: Vec<OverlayRoute> = client.get(&format!("/v1/overlay/routes/{app}"))?;
    let routes = routes.into_iter().map(|r| (r.dst, r.next_hops)).collect();
    Ok(View {
        own: info.node_id,
        nodes,
        routes,
    })
}

/// Runs `nvo prober`.
pub fn prober(client: &Client, format: Format, args: ProberArgs) -> Result<(), CliError> {
    let limit = if args.once { Some(1) } else { args.rounds };
    let policy = Policy {
        hysteresis: args.hysteresis,
        confirm: args.confirm,
    };
    let mut streaks = HashMap::new();
    let mut out = io::stdout().lock();
    let mut n = 0;
    loop {
        n += 1;
        let started = Instant::now();
        let report = round(client, &args, &policy, &mut streaks, n);
        let text = match format {
            Format::Json => format!("{}\n", serde_json::to_string(&report)?),
            Format::Text => report
                .destinations
                .iter()
                .filter_map(decision_line)
                .map(|l| l + "\n")
                .collect(),
        };
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            // The reader went away (`nvo prober | head -3`): done, not an error.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(CliError::Stdout(e)),
        }
        if limit.is_some_and(|l| n >= l) {
            return Ok(());
        }
        std::thread::sleep(args.interval.saturating_sub(started.elapsed()));
    }
}

/// Probes every destination of the LIB and applies the decisions; never fails, errors go in
/// the report.
fn round(
    client: &Client,
    args: &ProberArgs,
    policy: &Policy,
    streaks: &mut HashMap<u32, Streak>,
    n: u64,
) -> RoundReport {
    let mut report = RoundReport {
        round: n,
        ..Default::default()
    };
    let view = match view(client, args.app) {
        Ok(v) if v.own == 0 => {
            report.error("this node has no overlay id; set one with `nvo overlay id set`".into());
            return report;
        }
        Ok(v) => v,
        Err(e) => {
            report.error(format!("cannot read the overlay: {e}"));
            return report;
        }
    };
    let own = view.own;
    report.own = Some(own);
    // Streaks of nodes gone from the LIB go too: the map stays as small as the LIB.
    streaks.retain(|d, _| view.nodes.iter().any(|n| n.node_id == *d));
    // A relay needs a locator to be sent to (weight 0 drains it).
    let relays: Vec<u32> = view
        .nodes
        .iter()
        .filter(|n| n.node_id != own && n.locators.iter().any(|l| l.weight > 0))
        .map(|n| n.node_id)
        .collect();
    for d in view.nodes.iter().map(|n| n.node_id).filter(|&d| d != own) {
        let hops = view.routes.get(&d).map(Vec::as_slice);
        let Some(current) = current_path(d, own, hops) else {
            report.left_alone.push(d);
            continue;
        };
        let paths: Vec<Path> = std::iter::once(Path::Direct)
            .chain(relays.iter().filter(|&&r| r != d).map(|&r| Path::Via(r)))
            .collect();
        let streak = streaks.entry(d).or_default();
        let dest = destination(
            client,
            args,
            policy,
            (d, current),
            &paths,
            streak,
            &mut report,
        );
        report.destinations.push(dest);
    }
    report
}

/// Probes `paths` to `d`, decides, and applies the decision.
fn destination(
    client: &Client,
    args: &ProberArgs,
    policy: &Policy,
    (d, current): (u32, Path),
    paths: &[Path],
    streak: &mut Streak,
    report: &mut RoundReport,
) -> DestReport {
    let mut measured = Vec::with_capacity(paths.len());
    let mut reports = Vec::with_capacity(paths.len());
    for &path in paths {
        let request = probe_request(d, path, current, args.count, args.timeout_ms);
        let probe = match client.post::<_, ProbeResult>("/v1/overlay/probe", &request) {
            Ok(p) => Some(p),
            Err(e) => {
                report.error(format!("node {d} {path}: probe failed: {e}"));
                None
            }
        };
        let score = probe.map_or(Score::Unusable, |p| Score::of(&p, args.loss_penalty_us));
        measured.push((path, score));
        reports.push(PathReport {
            via: path.via(),
            probe,
            score_us: score.us(),
        });
    }
    let change = decide(current, &measured, streak, policy).and_then(|to| {
        match install(client, args.app, d, to) {
            Ok(()) => Some(Change {
                from_via: current.via(),
                to_via: to.via(),
            }),
            Err(e) => {
                report.error(format!("node {d}: cannot switch to {to}: {e}"));
                None
            }
        }
    });
    DestReport {
        dst: d,
        current_via: current.via(),
        paths: reports,
        streak: streak.rounds(),
        change,
    }
}

/// Makes `to` the path to `d`: a route through the relay, or no route for direct.
fn install(client: &Client, app: OverlayApp, d: u32, to: Path) -> Result<(), ClientError> {
    let route = format!("/v1/overlay/routes/{app}/{d}");
    match to {
        Path::Via(r) => {
            let body = serde_json::to_vec(&RouteNextHops { next_hops: vec![r] })
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            client.call::<Value>("PUT", &route, Some(&body)).map(drop)
        }
        // Gone already (removed by someone else since the round began): direct either way.
        Path::Direct => match client.delete(&route) {
            Err(ClientError::Api { status: 404, .. }) => Ok(()),
            other => other,
        },
    }
}

/// A path's measurement as the decision line shows it.
fn measurement(paths: &[PathReport], path: Path) -> String {
    match paths.iter().find(|p| p.via == path.via()) {
        None => "not probed".to_owned(),
        Some(PathReport { probe: None, .. }) => "probe failed".to_owned(),
        Some(PathReport { probe: Some(p), .. }) => match p.rtt_us {
            Some(rtt) => format!(
                "rtt {:.1} ms, loss {:.0} %",
                rtt.mean as f64 / 1000.0,
                p.loss * 100.0
            ),
            None => "no reply".to_owned(),
        },
    }
}

/// The text line for a destination's change, if it changed:
/// `node 3: via 2 (rtt 1.2 ms, loss 0 %) replaces direct (rtt 0.4 ms, loss 60 %)`.
pub fn decision_line(d: &DestReport) -> Option<String> {
    let change = d.change?;
    let path = |via: Option<u32>| via.map_or(Path::Direct, Path::Via);
    let (from, to) = (path(change.from_via), path(change.to_via));
    Some(format!(
        "node {}: {to} ({}) replaces {from} ({})",
        d.dst,
        measurement(&d.paths, to),
        measurement(&d.paths, from)
    ))
}

#[cfg(test)]
mod tests {
    use super::decide::tests::probe;
    use super::*;
    use clap::Parser;

    #[test]
    fn the_direct_path_under_a_relay_route_is_probed_via_the_destination() {
        let r = probe_request(3, Path::Direct, Path::Direct, 10, 500);
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            serde_json::json!({"dst": 3, "count": 10, "timeout_ms": 500})
        );
        assert_eq!(
            probe_request(3, Path::Direct, Path::Via(2), 10, 500).via,
            Some(3)
        );
        assert_eq!(
            probe_request(3, Path::Via(4), Path::Via(2), 10, 500).via,
            Some(4)
        );
    }

    #[test]
    fn a_change_is_one_line_with_both_measurements() {
        let d = DestReport {
            dst: 3,
            current_via: None,
            paths: vec![
                PathReport {
                    via: None,
                    probe: Some(probe(3, None, 400, 0.6)),
                    score_us: Some(60_400.0),
                },
                PathReport {
                    via: Some(2),
                    probe: Some(probe(3, Some(2), 1200, 0.0)),
                    score_us: Some(1200.0),
                },
                PathReport {
                    via: Some(4),
                    probe: Some(probe(3, Some(4), 0, 1.0)),
                    score_us: None,
                },
            ],
            streak: 0,
            change: Some(Change {
                from_via: None,
                to_via: Some(2),
            }),
        };
        assert_eq!(
            decision_line(&d).unwrap(),
            "node 3: via 2 (rtt 1.2 ms, loss 0 %) replaces direct (rtt 0.4 ms, loss 60 %)"
        );
        assert_eq!(measurement(&d.paths, Path::Via(4)), "no reply");
        assert_eq!(measurement(&d.paths, Path::Via(5)), "not probed");
        assert_eq!(decision_line(&DestReport { change: None, ..d }), None);
    }

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ProberArgs,
    }

    #[test]
    fn options_have_their_defaults_and_ranges() {
        let a = Cli::try_parse_from(["prober"]).unwrap().args;
        assert_eq!(a.interval, Duration::from_secs(2));
        assert_eq!((a.count, a.timeout_ms, a.confirm), (10, 500, 2));
        assert_eq!((a.hysteresis, a.loss_penalty_us), (0.2, 100_000));
        assert_eq!(
            (a.app, a.once, a.rounds),
            (OverlayApp::Ethernet, false, None)
        );
        let a = Cli::try_parse_from(["prober", "--interval", "0.5", "--app", "ipv6", "--once"])
            .unwrap()
            .args;
        assert_eq!(
            (a.interval, a.app),
            (Duration::from_millis(500), OverlayApp::Ipv6)
        );
        for bad in [
            &["--interval", "0"][..],
            &["--hysteresis", "1"],
            &["--hysteresis", "-0.1"],
            &["--count", "101"],
            &["--timeout-ms", "5"],
            &["--confirm", "0"],
            &["--once", "--rounds", "3"],
        ] {
            let argv = std::iter::once("prober").chain(bad.iter().copied());
            assert!(Cli::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }
}
