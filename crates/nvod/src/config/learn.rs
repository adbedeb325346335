//! The default learning shares of a port and of a remote VTEP (`learn_port_percent`,
//! `learn_remote_percent`): how much of a network's `max_learned` one of them may hold when the
//! network does not say.

/// The share of a network's `max_learned` one port, or one remote, may hold when the network
/// does not say (`max_learned_per_port`, `max_learned_per_remote`), in percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearnShare {
    /// One local port's share, 1 to 100.
    pub port_percent: u8,
    /// One remote VTEP's share, 1 to 100.
    pub remote_percent: u8,
}

impl Default for LearnShare {
    /// A quarter per port, half per remote: a remote host with one port at its bound leaves
    /// room here for its other hosts' MACs.
    fn default() -> LearnShare {
        LearnShare {
            port_percent: 25,
            remote_percent: 50,
        }
    }
}

impl LearnShare {
    /// A port's bound in a network of `max_learned` (at least 1, at most max_learned).
    pub fn port(&self, max_learned: u32) -> u32 {
        share(max_learned, self.port_percent)
    }

    /// A remote's bound in a network of `max_learned`.
    pub fn remote(&self, max_learned: u32) -> u32 {
        share(max_learned, self.remote_percent)
    }
}

fn share(max_learned: u32, percent: u8) -> u32 {
    let n = u64::from(max_learned) * u64::from(percent) / 100;
    (u32::try_from(n).unwrap_or(max_learned))
        .max(1)
        .min(max_learned)
}
