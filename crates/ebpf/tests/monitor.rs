//! `nvo monitor` on the kernel path (BPF_PROG_RUN, as root): `nvo_monitor_event()` writes
//! nothing while the `monitor_on` flag is clear; while bit 0 is set, one record per drop (its
//! reason, the interface, the packet's length and its first 128 bytes) and one per flood the
//! kernel sends itself (copies, network, the frame before encapsulation); while bit 1 is set,
//! one trace per copy sent to a port or a remote. The per-CPU lost counter stays 0 while the
//! ring has room; beyond a CPU's `MONITOR_RATE` (a burst of as many) events are counted, not
//! copied.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_ebpf::layout;
use nvo_pipeline::DropReason;

const C1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const C2: [u8; 6] = [2, 0, 0, 0, 0, 2];
const FAR: [u8; 6] = [2, 0, 0, 0, 0x99, 1];
const BCAST: [u8; 6] = [0xff; 6];

/// Every record the ring holds: (header, bytes).
fn drained(fx: &mut Fixture) -> Vec<(layout::MonitorRecord, Vec<u8>)> {
    let mut out = Vec::new();
    fx.mirror
        .drain_monitor(|hdr, _port, bytes| out.push((*hdr, bytes.to_vec())));
    out
}

/// The one record the ring holds, of `kind`.
fn one_record(fx: &mut Fixture, kind: u32) -> (layout::MonitorRecord, Vec<u8>) {
    let mut records = drained(fx);
    assert_eq!(records.len(), 1, "{records:?}");
    let (hdr, bytes) = records.remove(0);
    assert_eq!(hdr.kind, kind, "{hdr:?}");
    (hdr, bytes)
}

/// The bytes a record captures of `packet`: its first [`layout::MONITOR_CAPTURE`].
fn captured(packet: &[u8]) -> &[u8] {
    &packet[..packet.len().min(layout::MONITOR_CAPTURE)]
}

#[test]
fn drops_reach_the_monitor_ring_only_while_someone_listens() {
    let mut fx = Fixture::new("m1");
    fx.network(100, "vxlan", &[], &[1], &[]);
    // Nowhere to go (one port, no flood list): no_destination, from port 1.
    let frame = udp_frame(BCAST, C1, 1, 2, 300);
    let (k, _) = fx.port_frame(1, &frame);
    assert_eq!(k.drop, Some(DropReason::NoDestination.code()));
    assert!(drained(&mut fx).is_empty(), "off: nothing recorded");

    fx.mirror.set_monitor_bits(layout::MONITOR_ON_EVENTS);
    let (k, _) = fx.port_frame(1, &frame);
    assert_eq!(k.drop, Some(DropReason::NoDestination.code()));
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_DROP);
    assert_eq!(hdr.arg, u32::from(DropReason::NoDestination.code()));
    assert_eq!(hdr.len as usize, frame.len());
    assert_eq!(hdr.captured as usize, layout::MONITOR_CAPTURE);
    assert_eq!(&bytes[..], &frame[..layout::MONITOR_CAPTURE]);

    // A tunnel packet for a VNI nobody serves: unknown_vni, the whole outer frame captured
    // (it is shorter than 128 bytes).
    let inner = udp_frame(BCAST, C1, 1, 2, 10);
    let packet = tunnel_packet(&mut fx.engine, R2, "vxlan", 999, &inner);
    let (k, _) = fx.tunnel_packet_in(&packet);
    assert_eq!(k.drop, Some(DropReason::UnknownVni.code()));
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_DROP);
    assert_eq!(hdr.arg, u32::from(DropReason::UnknownVni.code()));
    assert_eq!(hdr.len as usize, 14 + packet.len());
    assert_eq!(bytes.len(), 14 + packet.len());
    assert_eq!(&bytes[14..], &packet[..]);
    assert_eq!(fx.mirror.monitor_lost(), 0);

    fx.mirror.set_monitor_bits(0);
    fx.port_frame(1, &frame);
    assert!(drained(&mut fx).is_empty(), "off again: nothing recorded");
}

#[test]
fn floods_the_kernel_sends_itself_are_recorded_while_someone_listens() {
    let mut fx = Fixture::new("m2");
    fx.network(100, "vxlan", &[R2, R3], &[1, 2], &[]);
    // A broadcast from port 1: a copy to port 2 and one to each flood remote.
    let frame = udp_frame(BCAST, C1, 1000, 53, 40);
    let (k, _) = fx.port_frame(1, &frame);
    assert_eq!(k.drop, None);
    assert_eq!(k.outs.len(), 3, "port 2, R2, R3");
    assert!(drained(&mut fx).is_empty(), "off: nothing recorded");

    fx.mirror.set_monitor_bits(layout::MONITOR_ON_EVENTS);
    fx.port_frame(1, &frame);
    // One record per flood, none per copy.
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_FLOOD);
    assert_eq!(hdr.arg, 3, "copies: one port, two remotes");
    assert_eq!(hdr.vni, 100);
    assert_eq!(hdr.len as usize, frame.len());
    // The frame as it came from the port (recorded before the outer headers are pushed).
    assert_eq!(&bytes[..], captured(&frame));

    // A broadcast from a remote floods to both ports after decapsulation.
    let inner = udp_frame(BCAST, FAR, 1, 2, 60);
    let packet = tunnel_packet(&mut fx.engine, R2, "vxlan", 100, &inner);
    fx.tunnel_packet_in(&packet);
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_FLOOD);
    assert_eq!(hdr.arg, 2, "copies: both ports");
    assert_eq!(hdr.vni, 100);
    assert_eq!(&bytes[..], captured(&inner));

    fx.mirror.set_monitor_bits(0);
    fx.port_frame(1, &frame);
    assert!(drained(&mut fx).is_empty(), "off again: nothing recorded");
}

#[test]
fn traces_are_recorded_only_while_their_bit_is_set() {
    let mut fx = Fixture::new("m3");
    fx.network(100, "vxlan", &[R2], &[1, 2], &[]);
    fx.static_remote(100, FAR, R3);
    // C1 on port 1 learned first (monitor off).
    fx.port_frame(1, &udp_frame(C2, C1, 1, 2, 40));
    let to_port = udp_frame(C1, C2, 2000, 80, 100);
    let to_remote = udp_frame(FAR, C1, 2000, 80, 100);

    // Events only: a forwarded packet is no event.
    fx.mirror.set_monitor_bits(layout::MONITOR_ON_EVENTS);
    fx.port_frame(2, &to_port);
    fx.port_frame(1, &to_remote);
    assert!(drained(&mut fx).is_empty(), "events only: no traces");

    fx.mirror.set_monitor_bits(layout::MONITOR_ON_TRACES);
    let (k, _) = fx.port_frame(2, &to_port);
    assert_eq!(k.outs.len(), 1);
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_TRACE);
    assert_eq!(hdr.arg, layout::TRACE_PORT);
    assert_eq!(hdr.vni, 100);
    assert_eq!(hdr.target, 1, "port 1");
    assert_eq!(&bytes[..], captured(&to_port));

    let (k, _) = fx.port_frame(1, &to_remote);
    assert_eq!(k.outs.len(), 1);
    let (hdr, bytes) = one_record(&mut fx, layout::MONITOR_TRACE);
    assert_eq!(hdr.arg, layout::TRACE_UNDERLAY);
    assert_eq!(hdr.vni, 100);
    assert_eq!(hdr.target, u32::from_ne_bytes(R3.octets()), "to R3");
    // Encapsulated: outer Ethernet + IPv4 + UDP + VXLAN, then the frame.
    assert_eq!(hdr.len as usize, 14 + 20 + 8 + 8 + to_remote.len());
    assert_eq!(&bytes[50..], &to_remote[..layout::MONITOR_CAPTURE - 50]);

    fx.mirror.set_monitor_bits(0);
    fx.port_frame(2, &to_port);
    assert!(drained(&mut fx).is_empty(), "off: nothing recorded");
}

/// Pins the calling thread to its current CPU (the monitor's token bucket is per CPU).
#[allow(unsafe_code)]
fn pin_to_this_cpu() {
    // SAFETY: sched_getcpu has no arguments; the cpu_set_t is zeroed, then filled by CPU_SET
    // for one CPU and passed with its size.
    unsafe {
        let cpu = libc::sched_getcpu();
        assert!(cpu >= 0, "sched_getcpu");
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        let r = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(r, 0, "sched_setaffinity");
    }
}

#[test]
fn beyond_a_cpus_rate_drops_are_counted_not_copied() {
    let mut fx = Fixture::new("m9");
    fx.network(100, "vxlan", &[], &[1], &[]);
    let frame = udp_frame(BCAST, C1, 1, 2, 300);
    fx.mirror.set_monitor_bits(layout::MONITOR_ON_EVENTS);
    pin_to_this_cpu();
    let calls = 3 * layout::MONITOR_RATE as usize;
    let t0 = std::time::Instant::now();
    for _ in 0..calls {
        let (k, _) = fx.port_frame(1, &frame);
        assert_eq!(k.drop, Some(DropReason::NoDestination.code()));
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let records = drained(&mut fx);
    eprintln!("{} records of {calls} in {elapsed:.3} s", records.len());
    let refilled = (elapsed * f64::from(layout::MONITOR_RATE)).ceil() as usize + 1;
    assert!(
        records.len() >= layout::MONITOR_RATE as usize,
        "a full bucket: {}",
        records.len()
    );
    assert!(
        records.len() <= layout::MONITOR_RATE as usize + refilled,
        "{} records in {elapsed:.3} s",
        records.len()
    );
    assert!(records
        .iter()
        .all(|(hdr, _)| hdr.kind == layout::MONITOR_DROP));
    assert_eq!(fx.mirror.monitor_lost(), 0, "the ring had room");
    assert_eq!(
        records.len() as u64 + fx.mirror.monitor_rate_lost(),
        calls as u64,
        "every drop recorded or counted beyond the rate"
    );
}
