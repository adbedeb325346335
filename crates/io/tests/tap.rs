//! TapPort: created up, frames both ways (seen through a PacketPort on the same device),
//! gone when closed.
//!
//! ```text
//!   ns nvo-<t>-PID
//!  ┌─────────────────────────────────────────────────────┐
//!  │  TapPort (fd) ══ nvotap0 (kernel) ── PacketPort     │
//!  │   write → kernel receives on nvotap0 → PacketPort   │
//!  │   PacketPort sends on nvotap0 → kernel → TapPort    │
//!  └─────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::wait_for;
use nvo_io::netns::{run_in, unique_name, NamedNetns};
use nvo_io::{FrameBatch, FramePort, PacketPort, Poller, TapPort};

fn test_frame(src: u8, seq: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xff, 0x02, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.extend(std::iter::repeat_n(seq, 100));
    f
}

fn receive_test_frame(port: &dyn FramePort, batch: &mut FrameBatch) -> Option<Vec<u8>> {
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let mut got = None;
    wait_for(Duration::from_secs(5), || {
        poller.wait(Some(Duration::from_millis(20))).unwrap();
        port.recv_batch(batch).unwrap();
        let mut frames = batch.frames();
        while let Some(f) = frames.next_frame() {
            if f[12..14] == [0x88, 0xb5] {
                got = Some(f.to_vec());
            }
        }
        got.is_some()
    });
    got
}

#[test]
fn tap_ports_come_up_carry_frames_and_vanish_when_closed() {
    for vnet in [false, true] {
        let ns = NamedNetns::create(&unique_name(if vnet { "tv" } else { "tp" })).unwrap();
        let tap = run_in(ns.name(), || TapPort::create("nvotap0", vnet))
            .unwrap()
            .unwrap();
        assert_eq!(
            (tap.name(), tap.vnet_hdr(), tap.mtu().unwrap()),
            ("nvotap0", vnet, 1500)
        );
        let link = ns.ip(&["-o", "link", "show", "nvotap0"]).unwrap();
        assert!(link.contains(",UP"), "link is up: {link}");
        let peer = run_in(ns.name(), || PacketPort::open("nvotap0"))
            .unwrap()
            .unwrap();
        assert_eq!(peer.ifindex(), tap.ifindex());
        let mut batch = FrameBatch::default();

        tap.send(&test_frame(1, 1)).unwrap();
        assert_eq!(
            receive_test_frame(&peer, &mut batch),
            Some(test_frame(1, 1)),
            "tap write reaches the kernel"
        );
        let frames = [test_frame(2, 2), test_frame(2, 3)];
        assert_eq!(
            peer.send_batch(&mut frames.iter().map(Vec::as_slice))
                .unwrap(),
            2
        );
        assert_eq!(
            receive_test_frame(&tap, &mut batch),
            Some(test_frame(2, 3)),
            "kernel transmit reaches tap reads"
        );

        drop(peer);
        drop(tap);
        assert!(
            ns.ip(&["link", "show", "nvotap0"]).is_err(),
            "the device is gone with its fd"
        );
    }
}

#[test]
fn kernel_picks_a_name_when_none_is_given() {
    let ns = NamedNetns::create(&unique_name("tn")).unwrap();
    let tap = run_in(ns.name(), || TapPort::create("", false))
        .unwrap()
        .unwrap();
    assert!(tap.name().starts_with("tap"), "{}", tap.name());
    assert!(run_in(ns.name(), || TapPort::create(
        "this-name-is-too-long",
        false
    ))
    .unwrap()
    .is_err());
}
