//! `nvod:` of an nvo host in a topology: the keys of nvod's configuration file a lab may set,
//! and their checks.

use serde::Deserialize;

use super::cluster::ClusterExtras;
use super::error::ValidationError;

/// `nvod:` of an nvo host: optional keys written into its nvod's configuration file (nvod's
/// `--help` explains each); absent keys take nvod's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvodExtras {
    /// TTL / hop limit of every tunnel packet, 1 to 255, or "inherit" (the inner packet's).
    pub outer_ttl: Option<OuterValue>,
    /// TOS / traffic class of every tunnel packet, or "inherit" (the inner packet's).
    pub outer_tos: Option<OuterValue>,
    /// Don't Fragment on outer IPv4 packets.
    pub outer_df: Option<bool>,
    /// Most bytes of STT frames held in reassembly, 65536 to 1073741824.
    pub stt_reassembly_bytes: Option<u64>,
    /// Seconds an incomplete STT frame is kept, 1 to 3600.
    pub stt_reassembly_timeout_s: Option<u64>,
    /// UDP GRO on nvod's underlay sockets (false turns it off).
    pub udp_gro: Option<bool>,
    /// UDP GSO on nvod's underlay sockets (false turns it off).
    pub udp_gso: Option<bool>,
    /// Microseconds the userspace datapath polls on after a packet, 0 (off) to 1000.
    pub busy_poll_us: Option<u64>,
    /// Who cuts STT frames into segments: the kernel (auto) or nvod (off).
    pub stt_offload: Option<SttOffload>,
    /// Userspace datapath threads, 1 to 64 (nvod's default: one per CPU).
    pub workers: Option<u64>,
    /// The datapath: auto, ebpf or userspace.
    pub datapath: Option<String>,
    /// Where the kernel path relays overlay packets: auto, driver, generic or off (tc).
    pub xdp: Option<String>,
    /// The metrics listener: "ADDRESS:PORT", or ":PORT" for the host's underlay address.
    pub http_listen: Option<String>,
    /// nvod's OpenFlow 1.3 listener: "ADDRESS:PORT" in the host's namespace (127.0.0.1:6653).
    pub openflow_listen: Option<String>,
    /// Metrics connections served at once, 1 to 65536.
    pub http_max_connections: Option<u64>,
    /// Seconds a metrics client has to send a request header, 1 to 3600.
    pub http_header_timeout_s: Option<u64>,
    /// Seconds a metrics connection may stay silent, 1 to 3600.
    pub http_idle_timeout_s: Option<u64>,
    /// Cluster mode: nvod's `[cluster]` table (etcd endpoints, prefix, name, lease_ttl_s, TLS
    /// and auth files), written as given.
    pub cluster: Option<ClusterExtras>,
}

/// The values of `nvod.stt_offload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SttOffload {
    /// The kernel's TCP segmentation where nvod can set it up.
    Auto,
    /// nvod's own segmenter.
    Off,
}

impl std::fmt::Display for SttOffload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SttOffload::Auto => "auto",
            SttOffload::Off => "off",
        })
    }
}

/// The values of `nvod.datapath` (and `nvo lab up --datapath`).
pub const DATAPATHS: [&str; 3] = ["auto", "ebpf", "userspace"];
/// The values of `nvod.xdp`.
pub const XDP_MODES: [&str; 4] = ["auto", "driver", "generic", "off"];

impl NvodExtras {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        *self == NvodExtras::default()
    }

    /// The same bounds nvod applies, checked before any namespace is made.
    pub(super) fn validate(&self, host: &str) -> Result<(), ValidationError> {
        let at = |key: &'static str, value: u64, range: &'static str| {
            Err(ValidationError::NvodRange {
                host: host.to_owned(),
                key,
                value,
                range,
            })
        };
        if self.outer_ttl == Some(OuterValue::Fixed(0)) {
            return at("outer_ttl", 0, "1..=255");
        }
        for (key, value) in [
            ("outer_ttl", &self.outer_ttl),
            ("outer_tos", &self.outer_tos),
        ] {
            if let Some(OuterValue::Word(w)) = value {
                if w != "inherit" {
                    return Err(ValidationError::NvodOuterWord {
                        host: host.to_owned(),
                        key,
                        word: w.clone(),
                    });
                }
            }
        }
        if let Some(b) = self.stt_reassembly_bytes {
            if !(1 << 16..=1 << 30).contains(&b) {
                return at("stt_reassembly_bytes", b, "65536..=1073741824");
            }
        }
        if let Some(t) = self.stt_reassembly_timeout_s {
            if !(1..=3600).contains(&t) {
                return at("stt_reassembly_timeout_s", t, "1..=3600");
            }
        }
        if let Some(us) = self.busy_poll_us {
            if us > 100_000 {
                return at("busy_poll_us", us, "0..=100000");
            }
        }
        if let Some(n) = self.workers {
            if !(1..=64).contains(&n) {
                return at("workers", n, "1..=64");
            }
        }
        if let Some(d) = &self.datapath {
            if !DATAPATHS.contains(&d.as_str()) {
                return Err(ValidationError::NvodDatapath {
                    host: host.to_owned(),
                    datapath: d.clone(),
                });
            }
        }
        if let Some(listen) = &self.http_listen {
            let port_only = listen
                .strip_prefix(':')
                .is_some_and(|p| p.parse::<u16>().is_ok_and(|p| p != 0));
            let full = listen
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.port() != 0);
            if !port_only && !full {
                return Err(ValidationError::NvodHttpListen {
                    host: host.to_owned(),
                    value: listen.clone(),
                });
            }
        }
        let addr = |v: &String| {
            v.parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.port() != 0)
        };
        if let Some(value) = self.openflow_listen.clone().filter(|v| !addr(v)) {
            let host = host.to_owned();
            return Err(ValidationError::NvodOpenflowListen { host, value });
        }
        if let Some(n) = self.http_max_connections {
            if !(1..=65536).contains(&n) {
                return at("http_max_connections", n, "1..=65536");
            }
        }
        for (key, value) in [
            ("http_header_timeout_s", self.http_header_timeout_s),
            ("http_idle_timeout_s", self.http_idle_timeout_s),
        ] {
            if let Some(t) = value {
                if !(1..=3600).contains(&t) {
                    return at(key, t, "1..=3600");
                }
            }
        }
        if let Some(x) = &self.xdp {
            if !XDP_MODES.contains(&x.as_str()) {
                return Err(ValidationError::NvodXdp {
                    host: host.to_owned(),
                    xdp: x.clone(),
                });
            }
        }
        if let Some(c) = &self.cluster {
            c.validate(host)?;
        }
        Ok(())
    }
}

/// An outer header value: a number, or "inherit".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum OuterValue {
    /// A fixed value.
    Fixed(u8),
    /// "inherit".
    Word(String),
}

impl std::fmt::Display for OuterValue {
    /// As a TOML value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OuterValue::Fixed(v) => write!(f, "{v}"),
            OuterValue::Word(w) => write!(f, "{w:?}"),
        }
    }
}
