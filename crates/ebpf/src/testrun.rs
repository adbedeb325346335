//! Running a program on one frame with `BPF_PROG_RUN`: what the differential tests and the
//! packet-rate microbenchmark use. The program runs in the calling thread's network namespace
//! on a socket buffer the kernel builds from the bytes; what it decided comes back in
//! `skb->cb` (`set_verdict` in bpf/common.h) and its output bytes in `data`.

use aya::programs::{TestRun, TestRunOptions};

use crate::kernel::{error_chain, Kernel};

/// `sizeof(struct __sk_buff)` and the offsets of the fields a run sets or reads.
const SKB_LEN: usize = 192;
const SKB_IFINDEX: usize = 40;
const SKB_CB: usize = 48;
const SKB_GSO_SEGS: usize = 164;
const SKB_GSO_SIZE: usize = 176;

/// What a program made of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The program's return value (TC_ACT_*).
    pub retval: u32,
    /// The frame as the program left it.
    pub data: Vec<u8>,
    /// `skb->cb[0..3]`: the verdict, its argument and the drop reason.
    pub verdict: [u32; 3],
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No such program.
    #[error("no program {0}")]
    NoProgram(String),
    /// The kernel refused the run.
    #[error("BPF_PROG_RUN: {0}")]
    Kernel(String),
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_ne_bytes(b)
}

impl Kernel {
    /// Runs `program` on `frame` as if it arrived on interface `ifindex` (1 or less: the
    /// loopback), with GSO segment size `gso_size` (0: none).
    pub fn run(
        &self,
        program: &str,
        frame: &[u8],
        ifindex: u32,
        gso_size: u16,
    ) -> Result<Run, RunError> {
        let prog = self
            .classifier(program)
            .ok_or_else(|| RunError::NoProgram(program.to_string()))?;
        let mut ctx_in = [0u8; SKB_LEN];
        ctx_in[SKB_IFINDEX..SKB_IFINDEX + 4].copy_from_slice(&ifindex.to_ne_bytes());
        if gso_size > 0 {
            ctx_in[SKB_GSO_SIZE..SKB_GSO_SIZE + 4]
                .copy_from_slice(&u32::from(gso_size).to_ne_bytes());
            ctx_in[SKB_GSO_SEGS..SKB_GSO_SEGS + 4].copy_from_slice(&1u32.to_ne_bytes());
        }
        let mut ctx_out = [0u8; SKB_LEN];
        let mut data_out = vec![0u8; frame.len() + 512];
        let result = prog
            .test_run(TestRunOptions {
                data_in: Some(frame),
                data_out: Some(&mut data_out),
                ctx_in: Some(&ctx_in),
                ctx_out: Some(&mut ctx_out),
                ..TestRunOptions::new()
            })
            .map_err(|e| {
                RunError::Kernel(format!("{} ({} bytes)", error_chain(&e), frame.len()))
            })?;
        data_out.truncate(result.data_size_out as usize);
        Ok(Run {
            retval: result.return_value,
            data: data_out,
            verdict: [
                u32_at(&ctx_out, SKB_CB),
                u32_at(&ctx_out, SKB_CB + 4),
                u32_at(&ctx_out, SKB_CB + 8),
            ],
        })
    }
}

/// XDP return values.
pub const XDP_PASS: u32 = 2;
/// Sent back out of the interface it came in on.
pub const XDP_TX: u32 = 3;
/// Sent out of another interface.
pub const XDP_REDIRECT: u32 = 4;

/// What the XDP relay made of one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpRun {
    /// XDP_PASS, XDP_TX, XDP_REDIRECT (or a drop).
    pub retval: u32,
    /// The packet as the program left it.
    pub data: Vec<u8>,
}

impl Kernel {
    /// Runs the XDP relay on `packet` as if it arrived on interface `ifindex` (which must
    /// exist in the calling thread's namespace).
    pub fn run_relay(&self, packet: &[u8], ifindex: u32) -> Result<XdpRun, RunError> {
        let prog = self
            .relay_program()
            .ok_or_else(|| RunError::NoProgram(crate::kernel::RELAY_PROGRAM.to_string()))?;
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index,
        // egress_ifindex; data_end must be the packet's length, the rest of the offsets 0.
        let mut ctx_in = [0u8; 24];
        let len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        ctx_in[4..8].copy_from_slice(&len.to_ne_bytes());
        ctx_in[12..16].copy_from_slice(&ifindex.to_ne_bytes());
        let mut data_out = vec![0u8; packet.len() + 256];
        let result = prog
            .test_run(TestRunOptions {
                data_in: Some(packet),
                data_out: Some(&mut data_out),
                ctx_in: Some(&ctx_in),
                ..TestRunOptions::new()
            })
            .map_err(|e| {
                RunError::Kernel(format!("{} ({} bytes)", error_chain(&e), packet.len()))
            })?;
        data_out.truncate(result.data_size_out as usize);
        Ok(XdpRun {
            retval: result.return_value,
            data: data_out,
        })
    }
}
