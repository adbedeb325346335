//! Memory of the FDB and allocations on the hot path (issue 4, "Microbenchmarks": bytes per
//! entry), measured with a counting global allocator rather than timed.
//!
//! - Bytes per FDB entry: the heap a pipeline holds after learning n MACs (n = 1k, 100k, 1M)
//!   through `from_port`, minus what it held before, divided by n; and the peak on the way,
//!   which includes the old and the new table while the map grows. Counted are the sizes the
//!   pipeline asked for, not the allocator's own overhead.
//! - Allocations per frame: how many times the hot path calls the allocator once warm, for the
//!   known-unicast, flood, encapsulation and decapsulation paths, and for ARP and NS requests
//!   answered by suppression (snooped too); the data plane's contract is zero.
//!
//! The results are printed for a reader and, on one line starting with `NVO_BENCH `, as JSON for
//! bench/micro.py. The run takes a few seconds; command-line arguments are ignored.
// Setup runs on constant input; a failure there is a broken benchmark and should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// GlobalAlloc is an unsafe trait: the only way to count the heap without changing the crate.
// The wrapper forwards every call unchanged to the system allocator; nothing else is unsafe.
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use common::*;
use nvo_pipeline::{Actions, EvpnChange, FdbDest, Mac, Pipeline};

/// The system allocator, counting live bytes, their peak and the number of allocations.
#[derive(Debug)]
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(live, Relaxed);
    ALLOCATIONS.fetch_add(1, Relaxed);
}

// SAFETY: every method passes its arguments unchanged to `System`, which implements the trait's
// contract; the counters are atomics and never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`; forwarded as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds `realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What learning n MACs cost in heap.
#[derive(Debug, serde::Serialize)]
struct FdbMemory {
    entries: u32,
    /// Live heap after learning minus before.
    bytes: usize,
    bytes_per_entry: f64,
    /// The highest live heap while learning, minus before.
    peak_bytes: usize,
    peak_bytes_per_entry: f64,
}

fn fdb_memory(n: u32, now: Instant) -> FdbMemory {
    let mut p = bed();
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    learn_from_p2(&mut p, n, now);
    let (after, peak) = (LIVE.load(Relaxed), PEAK.load(Relaxed));
    let learned = p.network(VNI).expect("vni 100 exists").learned;
    assert_eq!(learned, n as usize, "every mac must have been learned");
    drop(p);
    let bytes = after - before;
    let peak_bytes = peak - before;
    FdbMemory {
        entries: n,
        bytes,
        bytes_per_entry: bytes as f64 / f64::from(n),
        peak_bytes,
        peak_bytes_per_entry: peak_bytes as f64 / f64::from(n),
    }
}

/// How many allocations `frames` calls of `send` make, per call.
fn allocations_per_frame(frames: u32, mut send: impl FnMut(u32)) -> f64 {
    // Warm up: `Actions` and the FDB reach their working size.
    for i in 0..1000 {
        send(i);
    }
    let before = ALLOCATIONS.load(Relaxed);
    for i in 0..frames {
        send(i);
    }
    (ALLOCATIONS.load(Relaxed) - before) as f64 / f64::from(frames)
}

/// Allocations per frame on each hot path, in a bed with 100k learned MACs.
fn hot_path_allocations(now: Instant) -> Vec<(&'static str, f64)> {
    const N: u32 = 100_000;
    let mut p: Pipeline = bed();
    learn_from_p2(&mut p, N, now);
    p.fdb_add_static(VNI, REMOTE, FdbDest::Remote(R1))
        .expect("a static entry fits");
    let mut actions = Actions::new();
    let mut frame = udp4(learned_mac(0), LOCAL, 64);
    let mut spread = Spread::new(N);
    let hit = allocations_per_frame(N, |_| {
        frame[..6].copy_from_slice(&learned_mac(spread.next_index()).0);
        p.from_port(P1, &frame, now, &mut actions);
    });
    let miss = allocations_per_frame(N, |i| {
        frame[..6].copy_from_slice(&unknown_mac(i).0);
        p.from_port(P1, &frame, now, &mut actions);
    });
    let encap_frame = udp4(REMOTE, LOCAL, 1400);
    let encap = allocations_per_frame(N, |_| p.from_port(P1, &encap_frame, now, &mut actions));
    let payload = vxlan(VNI, &udp4(LOCAL, REMOTE, 1400));
    let decap = allocations_per_frame(N, |_| p.receive_vxlan(R1, &payload, now, &mut actions));
    let [arp, nd] = suppression_allocations(&mut p, now);
    vec![
        ("fdb_hit", hit),
        ("fdb_miss", miss),
        ("encap", encap),
        ("decap", decap),
        ("arp_suppressed", arp),
        ("nd_suppressed", nd),
    ]
}

/// Allocations per ARP request and per neighbour solicitation answered by suppression: the
/// requests of the scapy vectors (tests/vectors/suppress.json), for an EVPN-installed target.
fn suppression_allocations(p: &mut Pipeline, now: Instant) -> [f64; 2] {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/suppress.json");
    let vectors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let frame = |name: &str| -> Vec<u8> {
        let v = vectors["vectors"].as_array().unwrap().iter();
        let hex = v.clone().find(|v| v["name"] == name).unwrap()["frame"]
            .as_str()
            .unwrap();
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    let target = Mac([2, 0, 0, 0, 0, 2]);
    let installed = p.evpn_apply(&[
        EvpnChange::NeighSet {
            vni: VNI,
            ip: "10.0.0.2".parse().unwrap(),
            mac: target,
        },
        EvpnChange::NeighSet {
            vni: VNI,
            ip: "fd00::2".parse().unwrap(),
            mac: target,
        },
    ]);
    assert_eq!(installed.refused, 0);
    p.set_arp_suppression(VNI, true).unwrap();
    let mut actions = Actions::new();
    let mut answered = |request: Vec<u8>| {
        allocations_per_frame(1000, |_| {
            p.from_port(P1, &request, now, &mut actions);
            assert!(matches!(
                actions.as_slice(),
                [nvo_pipeline::Action::Reply { .. }]
            ));
        })
    };
    [answered(frame("arp_request")), answered(frame("ns"))]
}

fn main() {
    let now = Instant::now();
    let mut sizes = Vec::new();
    for n in [1_000, 100_000, 1_000_000] {
        let m = fdb_memory(n, now);
        println!(
            "fdb memory: {:>9} learned entries: {:>11} bytes, {:>6.1} bytes/entry (peak while \
             growing {:.1} bytes/entry)",
            m.entries, m.bytes, m.bytes_per_entry, m.peak_bytes_per_entry
        );
        sizes.push(m);
    }
    let allocations = hot_path_allocations(now);
    for (path, per_frame) in &allocations {
        println!("hot path allocations per frame, {path}: {per_frame}");
    }
    let summary = serde_json::json!({
        "fdb_memory": sizes,
        "allocations_per_frame": allocations.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
    });
    println!("NVO_BENCH {summary}");
}
