//! The prober's decision, a pure function of the measurements: which path a destination
//! should take this round, if any, given its current path and its streak (rounds in a row the
//! current path has been clearly beaten). No I/O and no clock: the runner in `super` probes,
//! calls [`decide`] once per destination and round, and applies what it returns.

use std::fmt;

use nvo_api::ProbeResult;

/// A way to a destination: straight to it, or through one relay node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// To the destination's own locator.
    Direct,
    /// To this relay's locator first; it relays on by its own routes.
    Via(u32),
}

impl Path {
    /// The relay, if any (as in the API's `via`).
    pub fn via(self) -> Option<u32> {
        match self {
            Path::Direct => None,
            Path::Via(r) => Some(r),
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Direct => f.write_str("direct"),
            Path::Via(r) => write!(f, "via {r}"),
        }
    }
}

/// How good a path measured: lower is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Score {
    /// Mean RTT plus loss penalty, in µs.
    Usable(f64),
    /// Nothing came back (or the path could not be probed).
    Unusable,
}

impl Score {
    /// The score of a probe run: mean RTT + loss × `loss_penalty_us`; unusable when no reply
    /// came back.
    pub fn of(probe: &ProbeResult, loss_penalty_us: u64) -> Score {
        match probe.rtt_us {
            Some(rtt) if probe.received > 0 && (0.0..1.0).contains(&probe.loss) => {
                Score::Usable(rtt.mean as f64 + probe.loss * loss_penalty_us as f64)
            }
            _ => Score::Unusable,
        }
    }

    /// The score in µs, none when unusable.
    pub fn us(self) -> Option<f64> {
        match self {
            Score::Usable(us) => Some(us),
            Score::Unusable => None,
        }
    }

    /// Whether this score is lower than `current`'s by more than the fraction `hysteresis`
    /// of it (any usable score beats an unusable one).
    pub fn beats(self, current: Score, hysteresis: f64) -> bool {
        match (self, current) {
            (Score::Unusable, _) => false,
            (Score::Usable(_), Score::Unusable) => true,
            (Score::Usable(new), Score::Usable(old)) => new < old * (1.0 - hysteresis),
        }
    }
}

/// When a better path replaces the current one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// The fraction of the current score a path must beat it by.
    pub hysteresis: f64,
    /// Consecutive rounds the current path must be beaten.
    pub confirm: u32,
}

/// One destination's memory between rounds: for how many rounds in a row its current path has
/// been clearly beaten.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streak {
    /// The path the rounds were counted against; another current path starts over.
    against: Option<Path>,
    rounds: u32,
}

impl Streak {
    /// Consecutive rounds the current path has been clearly beaten.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }
}

/// The best usable path of `measured`, the first of equals (direct is listed first).
pub fn best(measured: &[(Path, Score)]) -> Option<(Path, f64)> {
    let mut best: Option<(Path, f64)> = None;
    for &(path, score) in measured {
        if let Score::Usable(us) = score {
            if best.is_none_or(|(_, b)| us < b) {
                best = Some((path, us));
            }
        }
    }
    best
}

/// Decides one round for one destination: the path to switch to, or none. A path of
/// `measured` replaces `current` only when it beats it by more than the hysteresis for
/// `policy.confirm` rounds in a row; `current` missing from `measured` counts as unusable.
pub fn decide(
    current: Path,
    measured: &[(Path, Score)],
    streak: &mut Streak,
    policy: &Policy,
) -> Option<Path> {
    if streak.against != Some(current) {
        *streak = Streak {
            against: Some(current),
            rounds: 0,
        };
    }
    let now = measured
        .iter()
        .find(|(p, _)| *p == current)
        .map_or(Score::Unusable, |&(_, s)| s);
    let beaten = best(measured)
        .filter(|&(path, us)| path != current && Score::Usable(us).beats(now, policy.hysteresis));
    let Some((path, _)) = beaten else {
        streak.rounds = 0;
        return None;
    };
    streak.rounds += 1;
    if streak.rounds < policy.confirm {
        return None;
    }
    *streak = Streak::default();
    Some(path)
}

/// The path a destination's route gives it: none for a route the prober leaves alone (several
/// next hops, none, or this node among them).
pub fn current_path(dst: u32, own: u32, next_hops: Option<&[u32]>) -> Option<Path> {
    match next_hops {
        None => Some(Path::Direct),
        Some(&[hop]) if hop == dst => Some(Path::Direct),
        Some(&[hop]) if hop != own => Some(Path::Via(hop)),
        Some(_) => None,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use nvo_api::RttStats;

    const POLICY: Policy = Policy {
        hysteresis: 0.2,
        confirm: 2,
    };

    /// A probe answer: `loss` of 10 probes lost, the rest at `mean_us`.
    pub(crate) fn probe(dst: u32, via: Option<u32>, mean_us: u64, loss: f64) -> ProbeResult {
        let received = ((1.0 - loss) * 10.0).round() as u32;
        ProbeResult {
            dst,
            via,
            sent: 10,
            received,
            loss,
            rtt_us: (received > 0).then_some(RttStats {
                min: mean_us,
                mean: mean_us,
                max: mean_us,
            }),
        }
    }

    #[test]
    fn scores_add_a_loss_penalty_and_no_reply_is_unusable() {
        assert_eq!(
            Score::of(&probe(3, None, 400, 0.6), 100_000),
            Score::Usable(60_400.0)
        );
        assert_eq!(
            Score::of(&probe(3, Some(2), 1200, 0.0), 100_000),
            Score::Usable(1200.0)
        );
        assert_eq!(
            Score::of(&probe(3, None, 400, 1.0), 100_000),
            Score::Unusable
        );
        let mut odd = probe(3, None, 400, 0.0);
        odd.loss = f64::NAN;
        assert_eq!(Score::of(&odd, 100_000), Score::Unusable);
        assert!(Score::Usable(79.0).beats(Score::Usable(100.0), 0.2));
        assert!(!Score::Usable(80.0).beats(Score::Usable(100.0), 0.2));
        assert!(Score::Usable(1e9).beats(Score::Unusable, 0.2));
        assert!(!Score::Unusable.beats(Score::Unusable, 0.0));
    }

    #[test]
    fn small_differences_never_flap() {
        let mut s = Streak::default();
        // The relay is 15 % better, round after round: below the 20 % hysteresis.
        let m = [
            (Path::Direct, Score::Usable(1000.0)),
            (Path::Via(2), Score::Usable(850.0)),
        ];
        for _ in 0..10 {
            assert_eq!(decide(Path::Direct, &m, &mut s, &POLICY), None);
            assert_eq!(s.rounds(), 0);
        }
        // Installed on the relay, direct being 15 % better does not bring it back either.
        let m = [
            (Path::Direct, Score::Usable(850.0)),
            (Path::Via(2), Score::Usable(1000.0)),
        ];
        for _ in 0..10 {
            assert_eq!(decide(Path::Via(2), &m, &mut s, &POLICY), None);
        }
    }

    #[test]
    fn a_clearly_better_relay_wins_after_confirm_rounds_and_direct_wins_back() {
        let mut s = Streak::default();
        let lossy = [
            (Path::Direct, Score::Usable(60_400.0)),
            (Path::Via(2), Score::Usable(1200.0)),
            (Path::Via(4), Score::Unusable),
        ];
        assert_eq!(decide(Path::Direct, &lossy, &mut s, &POLICY), None);
        assert_eq!(s.rounds(), 1);
        assert_eq!(
            decide(Path::Direct, &lossy, &mut s, &POLICY),
            Some(Path::Via(2))
        );
        assert_eq!(s.rounds(), 0);
        // Direct recovers: one good round is not enough, a blip resets the count.
        let recovered = [
            (Path::Direct, Score::Usable(400.0)),
            (Path::Via(2), Score::Usable(1200.0)),
        ];
        assert_eq!(decide(Path::Via(2), &recovered, &mut s, &POLICY), None);
        assert_eq!(decide(Path::Via(2), &lossy, &mut s, &POLICY), None);
        assert_eq!(s.rounds(), 0);
        assert_eq!(decide(Path::Via(2), &recovered, &mut s, &POLICY), None);
        assert_eq!(
            decide(Path::Via(2), &recovered, &mut s, &POLICY),
            Some(Path::Direct)
        );
    }

    #[test]
    fn a_dead_or_missing_current_path_is_beaten_by_any_usable_one() {
        let once = Policy {
            hysteresis: 0.2,
            confirm: 1,
        };
        let mut s = Streak::default();
        let dead = [
            (Path::Direct, Score::Unusable),
            (Path::Via(2), Score::Usable(90_000.0)),
        ];
        assert_eq!(
            decide(Path::Direct, &dead, &mut s, &once),
            Some(Path::Via(2))
        );
        // The current relay left the LIB: it was not probed at all.
        assert_eq!(
            decide(Path::Via(9), &dead, &mut s, &once),
            Some(Path::Via(2))
        );
        // Nothing usable: keep what is there.
        let none = [
            (Path::Direct, Score::Unusable),
            (Path::Via(2), Score::Unusable),
        ];
        assert_eq!(decide(Path::Direct, &none, &mut s, &once), None);
        assert_eq!(decide(Path::Via(2), &[], &mut s, &once), None);
    }

    #[test]
    fn the_streak_counts_rounds_beaten_whoever_wins_them() {
        let mut s = Streak::default();
        let a = [
            (Path::Direct, Score::Unusable),
            (Path::Via(2), Score::Usable(1000.0)),
            (Path::Via(3), Score::Usable(1010.0)),
        ];
        let b = [
            (Path::Direct, Score::Unusable),
            (Path::Via(2), Score::Usable(1010.0)),
            (Path::Via(3), Score::Usable(1000.0)),
        ];
        assert_eq!(decide(Path::Direct, &a, &mut s, &POLICY), None);
        assert_eq!(
            decide(Path::Direct, &b, &mut s, &POLICY),
            Some(Path::Via(3))
        );
        // Ties go to the first listed: direct before relays.
        let tie = [
            (Path::Direct, Score::Usable(500.0)),
            (Path::Via(2), Score::Usable(500.0)),
        ];
        assert_eq!(best(&tie), Some((Path::Direct, 500.0)));
    }

    #[test]
    fn a_route_changed_by_someone_else_starts_the_count_over() {
        let mut s = Streak::default();
        let m = [
            (Path::Direct, Score::Usable(5000.0)),
            (Path::Via(2), Score::Usable(1000.0)),
            (Path::Via(3), Score::Usable(9000.0)),
        ];
        assert_eq!(decide(Path::Direct, &m, &mut s, &POLICY), None);
        assert_eq!(s.rounds(), 1);
        assert_eq!(decide(Path::Via(3), &m, &mut s, &POLICY), None);
        assert_eq!(s.rounds(), 1, "counted against via 3 from scratch");
        assert_eq!(
            decide(Path::Via(3), &m, &mut s, &POLICY),
            Some(Path::Via(2))
        );
    }

    #[test]
    fn only_direct_and_single_relay_routes_are_the_probers() {
        assert_eq!(current_path(3, 1, None), Some(Path::Direct));
        assert_eq!(current_path(3, 1, Some(&[3])), Some(Path::Direct));
        assert_eq!(current_path(3, 1, Some(&[2])), Some(Path::Via(2)));
        assert_eq!(current_path(3, 1, Some(&[1])), None, "delivered here");
        assert_eq!(current_path(3, 1, Some(&[2, 4])), None, "a tree");
        assert_eq!(current_path(3, 1, Some(&[])), None);
    }
}
