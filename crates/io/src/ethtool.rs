//! Per-interface offload switches, as `ethtool -K IFNAME tso|gso|gro|tx|sg on|off` sets them,
//! through the legacy `SIOCETHTOOL` commands that take a `struct ethtool_value`.
//!
//! ```text
//!   Offload      ethtool -k line           get / set command
//!   Tso          tcp-segmentation-offload  ETHTOOL_GTSO    / ETHTOOL_STSO
//!   Gso          generic-segmentation-...  ETHTOOL_GGSO    / ETHTOOL_SGSO
//!   Gro          generic-receive-offload   ETHTOOL_GGRO    / ETHTOOL_SGRO
//!   TxChecksum   tx-checksumming           ETHTOOL_GTXCSUM / ETHTOOL_STXCSUM
//!   Sg           scatter-gather            ETHTOOL_GSG     / ETHTOOL_SSG
//! ```
//!
//! The kernel maps each command onto its feature bits and re-derives the dependent ones
//! (`netdev_update_features`): turning the TX checksum or scatter-gather off also turns TSO
//! off, for example, and a feature the driver cannot change is refused (`EOPNOTSUPP`) or left
//! as it is. Read back with [`get_offload`] to know what is in force.
//!
//! A legacy command covers a fixed set of feature bits, and newer kernels have bits it does
//! not cover: Linux 6.18's `tx-tcp-accecn-segmentation` is left on by `ETHTOOL_STSO` off (so
//! `ethtool -k` still prints `tcp-segmentation-offload: on`, from that one bit; only
//! connections that negotiated AccECN are still segmented by the device). [`get_offload`]
//! reports the bits the command covers: on when any of them is.
//!
//! Both calls act on the interface of that name in the calling thread's network namespace (the
//! socket the ioctl goes through is made there), and setting needs CAP_NET_ADMIN.

use std::fmt;
use std::io;
use std::os::fd::AsFd;

use crate::sys::{self, EthtoolValue};

/// One offload switch of an interface; see the module docs for the `ethtool` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Offload {
    /// TCP segmentation offload.
    Tso,
    /// Generic segmentation offload (segmenting in software as late as possible).
    Gso,
    /// Generic receive offload (coalescing received segments).
    Gro,
    /// Transmit checksum offload.
    TxChecksum,
    /// Scatter-gather.
    Sg,
}

impl Offload {
    /// Every switch, in the order of the module docs.
    pub const ALL: [Offload; 5] = [
        Offload::Tso,
        Offload::Gso,
        Offload::Gro,
        Offload::TxChecksum,
        Offload::Sg,
    ];

    /// (get, set) `ethtool_value` commands.
    fn commands(self) -> (u32, u32) {
        match self {
            Offload::Tso => (0x1e, 0x1f),
            Offload::Gso => (0x23, 0x24),
            Offload::Gro => (0x2b, 0x2c),
            Offload::TxChecksum => (0x16, 0x17),
            Offload::Sg => (0x18, 0x19),
        }
    }

    /// The name `ethtool -K` takes.
    pub fn ethtool_name(self) -> &'static str {
        match self {
            Offload::Tso => "tso",
            Offload::Gso => "gso",
            Offload::Gro => "gro",
            Offload::TxChecksum => "tx",
            Offload::Sg => "sg",
        }
    }
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ethtool_name())
    }
}

/// Whether `feature` is on for interface `ifname`.
pub fn get_offload(ifname: &str, feature: Offload) -> io::Result<bool> {
    let mut value = EthtoolValue {
        cmd: feature.commands().0,
        data: 0,
    };
    call(ifname, feature, "reading", &mut value)?;
    Ok(value.data != 0)
}

/// Turns `feature` on or off for interface `ifname`. `Ok` means the kernel took the request;
/// a dependent feature may still keep it off (see the module docs).
pub fn set_offload(ifname: &str, feature: Offload, on: bool) -> io::Result<()> {
    let mut value = EthtoolValue {
        cmd: feature.commands().1,
        data: u32::from(on),
    };
    call(ifname, feature, "setting", &mut value)
}

/// The name of the driver behind interface `ifname` (`ethtool -i`: "veth", "tun", "mlx5_core").
pub fn driver(ifname: &str) -> io::Result<String> {
    let socket = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    sys::ethtool_driver(socket.as_fd(), ifname)
        .map_err(|e| io::Error::new(e.kind(), format!("driver of interface {ifname}: {e}")))
}

fn call(ifname: &str, feature: Offload, what: &str, value: &mut EthtoolValue) -> io::Result<()> {
    let context = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("{what} offload {feature} of interface {ifname}: {e}"),
        )
    };
    let socket = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0).map_err(context)?;
    sys::ethtool_value(socket.as_fd(), ifname, value).map_err(context)
}
