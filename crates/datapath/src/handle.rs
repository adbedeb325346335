//! The control thread's handle on the datapath: one [`Lane`] per worker; `workers` says which
//! commands go to which worker, and how their answers merge.

use crate::command::{Command, DatapathError, Lane, Reply};
use crate::workers::{for_peer, merge, scope, Scope, WorkerStats};

/// The control thread's end: sends commands and wakes the datapath's workers.
#[derive(Debug, Clone)]
pub struct Datapath {
    lanes: Vec<Lane>,
    stats: WorkerStats,
}

impl Datapath {
    /// The handle of the workers behind `lanes` (worker 0 first).
    pub(crate) fn new(lanes: Vec<Lane>, stats: WorkerStats) -> Datapath {
        Datapath { lanes, stats }
    }

    /// How many workers forward.
    pub fn workers(&self) -> usize {
        self.lanes.len()
    }

    /// Packets (datagrams and frames received) each worker handled, worker 0 first.
    pub fn worker_packets(&self) -> Vec<u64> {
        self.stats.packets(self.lanes.len())
    }

    /// Batches of learned MACs a worker could not pass to another (its queue was full).
    pub fn learn_share_lost(&self) -> u64 {
        self.stats
            .share_lost
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs one command on the datapath and waits for its reply: on worker 0, then (a change)
    /// on every other worker, or (a read of counters or learned entries) on each, merged.
    pub async fn call(&self, command: Command) -> Result<Reply, DatapathError> {
        let Some((first, rest)) = self.lanes.split_first() else {
            return Err(DatapathError::Gone);
        };
        if rest.is_empty() {
            return first.call(command).await;
        }
        match scope(&command) {
            Scope::First => first.call(command).await,
            Scope::All => {
                let copies: Vec<Command> = rest.iter().map(|_| command.clone()).collect();
                let reply = first.call(command).await?;
                for (at, (lane, copy)) in rest.iter().zip(copies).enumerate() {
                    if let Err(e) = lane.call(for_peer(copy)).await {
                        log::warn!(
                            "datapath worker {} refused a change worker 0 made: {e}; its \
                             tables differ until the change is undone",
                            at + 1
                        );
                    }
                }
                Ok(reply)
            }
            Scope::Merged => {
                let mut reply = first.call(command.clone()).await?;
                for lane in rest {
                    reply = merge(reply, lane.call(command.clone()).await?);
                }
                Ok(reply)
            }
        }
    }

    /// Asks every worker to stop, without waiting for an answer (for the shutdown path,
    /// outside the runtime).
    pub fn stop(&self) {
        for lane in &self.lanes {
            lane.stop();
        }
    }
}
