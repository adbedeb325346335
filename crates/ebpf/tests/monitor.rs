//! `nvo monitor` on the kernel path (BPF_PROG_RUN, as root): `drop()` writes nothing while
//! the `monitor_on` flag is clear, and one record per drop — its reason, the interface, the
//! packet's length and its first 128 bytes — while it is set; the per-CPU lost counter stays 0
//! while the ring has room.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_ebpf::layout;
use nvo_pipeline::DropReason;

const C1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const BCAST: [u8; 6] = [0xff; 6];

/// Every record the ring holds: (header, bytes).
fn drained(fx: &mut Fixture) -> Vec<(layout::MonitorDrop, Vec<u8>)> {
    let mut out = Vec::new();
    fx.mirror
        .drain_monitor(|hdr, _port, bytes| out.push((*hdr, bytes.to_vec())));
    out
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

    fx.mirror.set_monitor(true);
    let (k, _) = fx.port_frame(1, &frame);
    assert_eq!(k.drop, Some(DropReason::NoDestination.code()));
    let records = drained(&mut fx);
    assert_eq!(records.len(), 1, "one record per drop");
    let (hdr, bytes) = &records[0];
    assert_eq!(hdr.reason, u32::from(DropReason::NoDestination.code()));
    assert_eq!(hdr.len as usize, frame.len());
    assert_eq!(hdr.captured as usize, layout::MONITOR_CAPTURE);
    assert_eq!(&bytes[..], &frame[..layout::MONITOR_CAPTURE]);

    // A tunnel packet for a VNI nobody serves: unknown_vni, the whole outer frame captured
    // (it is shorter than 128 bytes).
    let inner = udp_frame(BCAST, C1, 1, 2, 10);
    let packet = tunnel_packet(&mut fx.engine, R2, "vxlan", 999, &inner);
    let (k, _) = fx.tunnel_packet_in(&packet);
    assert_eq!(k.drop, Some(DropReason::UnknownVni.code()));
    let records = drained(&mut fx);
    assert_eq!(records.len(), 1);
    let (hdr, bytes) = &records[0];
    assert_eq!(hdr.reason, u32::from(DropReason::UnknownVni.code()));
    assert_eq!(hdr.len as usize, 14 + packet.len());
    assert_eq!(bytes.len(), 14 + packet.len());
    assert_eq!(&bytes[14..], &packet[..]);
    assert_eq!(fx.mirror.monitor_lost(), 0);

    fx.mirror.set_monitor(false);
    fx.port_frame(1, &frame);
    assert!(drained(&mut fx).is_empty(), "off again: nothing recorded");
}
