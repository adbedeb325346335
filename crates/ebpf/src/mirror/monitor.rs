//! `nvo monitor` on the kernel path: the flag `nvo_monitor_event()` reads, the ring of drop,
//! flood and trace records it writes while the flag is set, and its per-CPU lost counter.

use nvo_pipeline::PortId;

use super::Mirror;
use crate::kernel::sum_per_cpu;
use crate::layout::{self, read_record};

impl Mirror {
    /// Sets the `monitor_on` flag to `bits` (`layout::MONITOR_ON_*`): events (drops, floods)
    /// and traces (each packet sent) are recorded while their bit is set.
    pub fn set_monitor_bits(&mut self, bits: u32) {
        if let Err(e) = self.kernel.maps.monitor_on.set(0, bits, 0) {
            log::warn!("cannot set the eBPF monitor flag to {bits}: {e}");
        }
    }

    /// Hands each record (drop, flood, trace) the programs wrote to `f`: its header, the port whose program
    /// dropped it (none for the underlay's), and its first bytes.
    pub fn drain_monitor(
        &mut self,
        mut f: impl FnMut(&layout::MonitorRecord, Option<PortId>, &[u8]),
    ) -> usize {
        let mut n = 0;
        while let Some(item) = self.kernel.maps.monitor.next() {
            let Some(hdr) = read_record::<layout::MonitorRecord>(&item) else {
                continue;
            };
            let captured = (hdr.captured as usize).min(layout::MONITOR_CAPTURE);
            let end = layout::RECORD_HEAD + captured;
            if let Some(bytes) = item.get(layout::RECORD_HEAD..end) {
                f(&hdr, self.attached.get(&hdr.ifindex).copied(), bytes);
                n += 1;
            }
        }
        n
    }

    /// Records the monitor ring had no room for, on every CPU, so far.
    pub fn monitor_lost(&self) -> u64 {
        sum_per_cpu(&self.kernel.maps.monitor_lost, 0, |t, v| *t += v, 0).unwrap_or(0)
    }

    /// Events beyond a CPU's [`crate::layout::MONITOR_RATE`], on every CPU, so far (nothing
    /// of them was copied).
    pub fn monitor_rate_lost(&self) -> u64 {
        sum_per_cpu(&self.kernel.maps.monitor_lost, 1, |t, v| *t += v, 0).unwrap_or(0)
    }
}
