//! Offload switches on a veth in a namespace, read back with `ethtool -k`.
//!
//! ```text
//!   ns nvo-<t>a-PID                  ns nvo-<t>b-PID
//!  ┌─────────────────────────┐      ┌─────────────┐
//!  │ va: offloads switched   ├─veth─┤ vb          │
//!  └─────────────────────────┘      └─────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::VethPair;
use nvo_io::ethtool::{get_offload, set_offload, Offload};
use nvo_io::netns::run_in;

/// What `ethtool -k` says of each switch, in the order of [`Offload::ALL`]. A switch is on
/// when any of the kernel features its legacy command covers is on; the summary lines of
/// `ethtool -k` cover more (e.g. `tx-tcp-accecn-segmentation`, which the legacy TSO command
/// leaves alone), so the feature lines are read instead.
fn ethtool_k(ns: &str, dev: &str) -> Vec<bool> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-k", dev])
        .output()
        .expect("ethtool installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let on = |name: &str| -> bool {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{name}:")))
            .any(|v| v.trim().starts_with("on"))
    };
    let any = |names: &[&str]| names.iter().any(|n| on(n));
    vec![
        any(&[
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
        ]),
        on("generic-segmentation-offload"),
        on("generic-receive-offload"),
        any(&[
            "tx-checksum-ipv4",
            "tx-checksum-ip-generic",
            "tx-checksum-ipv6",
        ]),
        on("tx-scatter-gather"),
    ]
}

fn ours(ns: &str, dev: &str) -> Vec<bool> {
    run_in(ns, || {
        Offload::ALL
            .iter()
            .map(|&f| get_offload(dev, f).unwrap())
            .collect()
    })
    .unwrap()
}

#[test]
fn offloads_switch_as_ethtool_sees_them() {
    let net = VethPair::new("et");
    let ns = net.a.name();
    assert_eq!(ours(ns, "va"), ethtool_k(ns, "va"), "initial state");
    for feature in Offload::ALL {
        for on in [false, true] {
            run_in(ns, || set_offload("va", feature, on))
                .unwrap()
                .unwrap();
            let now = ours(ns, "va");
            assert_eq!(now, ethtool_k(ns, "va"), "after {feature} {on}");
            let i = Offload::ALL.iter().position(|&f| f == feature).unwrap();
            assert_eq!(now[i], on, "{feature} is {on} after setting it");
        }
    }
    // The peer, in the other namespace, was not touched.
    assert_eq!(ours(net.b.name(), "vb"), ethtool_k(net.b.name(), "vb"));

    let err = run_in(ns, || get_offload("nosuchdev0", Offload::Tso))
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("nosuchdev0"), "{err}");
    let err = run_in(ns, || {
        set_offload("this-name-is-too-long", Offload::Gro, true)
    })
    .unwrap()
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}
