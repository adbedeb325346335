//! MAC mobility's memory (RFC 7432 §15): the recent moves of each MAC, duplicate detection and
//! the freeze it puts on a MAC, the remote routes that went with nothing in their place. All
//! bounded by [`MAX_TRACKED`] MACs, each for `dup_window`.

use std::net::IpAddr;
use std::time::Instant;

use nvo_pipeline::Mac;

use super::{Rib, MAX_TRACKED};

/// Moves of one MAC that moved at least once lately.
#[derive(Debug, Default)]
pub(super) struct History {
    pub(super) moves: Vec<Instant>,
    pub(super) duplicate_since: Option<Instant>,
}

impl Rib {
    pub(super) fn record_move(&mut self, key: (u32, Mac), now: Instant) {
        if !self.history.contains_key(&key) && self.history.len() >= MAX_TRACKED {
            self.prune_quiet(now);
            if self.history.len() >= MAX_TRACKED {
                return;
            }
        }
        let window = self.settings.dup_window;
        let limit = self.settings.dup_moves as usize;
        let h = self.history.entry(key).or_default();
        h.moves
            .retain(|&t| now.saturating_duration_since(t) <= window);
        h.moves.push(now);
        if h.moves.len() >= limit && h.duplicate_since.is_none() {
            h.duplicate_since = Some(now);
            self.duplicates.insert(key);
            log::warn!(
                "evpn: vni {} mac {} moved {} times within {:?}: marked duplicate for as long",
                key.0,
                key.1,
                h.moves.len(),
                window
            );
        }
    }

    pub(super) fn is_duplicate(&mut self, key: (u32, Mac), now: Instant) -> bool {
        let window = self.settings.dup_window;
        let Some(h) = self.history.get_mut(&key) else {
            return false;
        };
        match h.duplicate_since {
            Some(t) if now.saturating_duration_since(t) > window => {
                h.duplicate_since = None;
                h.moves.clear();
                self.duplicates.remove(&key);
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Remembers that `key`'s remote route (from `vtep`, sequence `seq`) went with nothing in
    /// its place.
    pub(super) fn note_departed(&mut self, key: (u32, Mac), vtep: IpAddr, seq: u32, now: Instant) {
        let window = self.settings.dup_window;
        if self.departed.len() >= MAX_TRACKED {
            self.departed
                .retain(|_, &mut (_, _, t)| now.saturating_duration_since(t) <= window);
            if self.departed.len() >= MAX_TRACKED {
                return;
            }
        }
        self.departed.insert(key, (vtep, seq, now));
    }

    /// Duplicate MACs whose freeze has run out are evaluated again; departed routes older than
    /// the window are forgotten.
    pub(super) fn thaw(&mut self, now: Instant) {
        let window = self.settings.dup_window;
        self.departed
            .retain(|_, &mut (_, _, t)| now.saturating_duration_since(t) <= window);
        let thawed: Vec<(u32, Mac)> = self
            .duplicates
            .iter()
            .filter(|k| {
                self.history
                    .get(k)
                    .and_then(|h| h.duplicate_since)
                    .is_none_or(|t| now.saturating_duration_since(t) > window)
            })
            .copied()
            .collect();
        self.dirty_macs.extend(thawed);
    }

    /// Forgets histories with no move inside the window.
    fn prune_quiet(&mut self, now: Instant) {
        let window = self.settings.dup_window;
        self.history.retain(|_, h| {
            h.duplicate_since.is_some()
                || h.moves
                    .iter()
                    .any(|&t| now.saturating_duration_since(t) <= window)
        });
    }
}
