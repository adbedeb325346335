//! nvod's configuration: a TOML file whose keys are all optional, resolved once at start into a
//! [`Config`] with every default filled in.
//!
//! A key nvod does not know is an error naming the key (a typo must not silently fall back to
//! a default), and a bad value names the key, the value and what is accepted.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use std::time::Duration;

use nvo_encap::spec::ProfileSpec;
use nvo_encap::stt::ReassemblyLimits;
use serde::Deserialize;

use nvo_datapath::{DatapathChoice, Outer, SttOffload, XdpChoice};

mod access;
mod cluster;
mod help;
mod http;

pub use cluster::ClusterSettings;
pub use help::KEYS_HELP;

use access::resolve_access;
pub use access::{ApiLimits, GroupSetting};
pub use http::HttpSettings;
mod limits;

pub use limits::{key_of as limit_key, reached as limit_reached, Limits};
mod latency;
mod learn;
mod workers;

pub use learn::LearnShare;

/// Defaults of the keys that have a fixed one.
pub const DEFAULT_VXLAN_PORT: u16 = 4789;
/// Default underlay MTU.
pub const DEFAULT_UNDERLAY_MTU: u16 = 1500;
/// Default number of entropy source ports.
pub const DEFAULT_ENTROPY_PORTS: u16 = 16;
/// Default state directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/nvo";
/// Default TTL of datagrams flooded to an underlay multicast group.
pub const DEFAULT_MULTICAST_TTL: u8 = nvo_io::DEFAULT_MULTICAST_TTL;
/// Default log filter.
pub const DEFAULT_LOG: &str = "info";

/// Entropy source ports start here (nvo-io binds them from this port up).
pub const ENTROPY_BASE: u16 = nvo_io::ENTROPY_PORT_BASE;

/// Documentation addresses (RFC 5737, RFC 3849) used to ask the kernel which source address it
/// would use for the default route; connecting a UDP socket sends nothing.
const PROBE_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const PROBE_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

/// The configuration with every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// 32-bit overlay node ID.
    pub node_id: u32,
    /// Underlay address.
    pub locator: IpAddr,
    /// VXLAN UDP port.
    pub vxlan_port: u16,
    /// Underlay MTU.
    pub underlay_mtu: u16,
    /// Control API socket.
    pub api_socket: PathBuf,
    /// Directory of state.json.
    pub state_dir: PathBuf,
    /// Number of entropy source ports.
    pub entropy_ports: u16,
    /// TTL or hop limit of datagrams sent to a multicast group.
    pub multicast_ttl: u8,
    /// Log filter.
    pub log: String,
    /// TTL, TOS and DF of the outer IP header, and the UDP offload switches.
    pub outer: Outer,
    /// Bounds of STT reassembly.
    pub stt_reassembly: ReassemblyLimits,
    /// User-defined profiles from the file, added at start before the state is restored.
    pub profiles: Vec<ProfileSpec>,
    /// The EVPN speaker's configuration from the file (used while state.json has none).
    pub bgp: Option<nvo_api::BgpConfig>,
    /// Which datapath to run.
    pub datapath: DatapathChoice,
    /// Where the kernel path relays overlay packets: XDP or its tc program.
    pub xdp: XdpChoice,
    /// Who may use the API socket and how much of nvod a client may hold.
    pub api: ApiLimits,
    /// Kinds of interface that may be ports ("veth", "tap", others the operator allows).
    pub port_kinds: Vec<String>,
    /// The tables' bounds (`[limits]`).
    pub limits: Limits,
    /// Default learning shares of a port and a remote (`learn_*_percent`).
    pub learn_share: LearnShare,
    /// The metrics listener, when `http_listen` is set.
    pub http: Option<HttpSettings>,
    /// How long the datapath polls on after a packet (`busy_poll_us`; zero: off).
    pub busy_poll: Duration,
    /// Who cuts STT frames into segments (`stt_offload`).
    pub stt_offload: SttOffload,
    /// How many userspace datapath workers forward (`workers`; default one per CPU).
    pub workers: usize,
    /// Cluster mode, when `[cluster]` is set.
    pub cluster: Option<ClusterSettings>,
    /// The OpenFlow listener (`openflow_listen`, TCP), when set.
    pub openflow_listen: Option<std::net::SocketAddr>,
    /// This node's ILA locator (`ila_locator`), when set: ILA networks need it.
    pub ila_locator: Option<std::net::Ipv6Addr>,
}

impl Config {
    /// The datapath's part of the configuration.
    pub fn datapath_settings(&self) -> nvo_datapath::Settings {
        nvo_datapath::Settings {
            node_id: self.node_id,
            locator: self.locator,
            vxlan_port: self.vxlan_port,
            underlay_mtu: self.underlay_mtu,
            entropy_ports: self.entropy_ports,
            multicast_ttl: self.multicast_ttl,
            outer: self.outer,
            stt_reassembly: self.stt_reassembly,
            datapath: self.datapath,
            xdp: self.xdp,
            limits: self.limits.pipeline,
            overlay_limits: self.limits.overlay,
            engine_limits: self.limits.engine,
            busy_poll: self.busy_poll,
            stt_offload: self.stt_offload,
            ila_locator: self.ila_locator,
            workers: self.workers,
        }
    }
}

/// Default bytes of STT frames in reassembly.
pub const DEFAULT_STT_REASSEMBLY_BYTES: usize = 16 << 20;
/// Default lifetime of an incomplete STT frame, seconds.
pub const DEFAULT_STT_REASSEMBLY_TIMEOUT_S: u64 = 30;

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    node_id: Option<u32>,
    locator: Option<IpAddr>,
    vxlan_port: Option<u16>,
    underlay_mtu: Option<u16>,
    api_socket: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    entropy_ports: Option<u16>,
    multicast_ttl: Option<u8>,
    log: Option<String>,
    outer_ttl: Option<OuterSetting>,
    outer_tos: Option<OuterSetting>,
    outer_df: Option<bool>,
    stt_reassembly_bytes: Option<usize>,
    stt_reassembly_timeout_s: Option<u64>,
    udp_gro: Option<bool>,
    udp_gso: Option<bool>,
    #[serde(default)]
    profile: Vec<ProfileSpec>,
    bgp: Option<nvo_api::BgpConfig>,
    datapath: Option<DatapathChoice>,
    xdp: Option<XdpChoice>,
    api_group: Option<GroupSetting>,
    api_max_connections: Option<usize>,
    api_header_timeout_s: Option<u64>,
    api_idle_timeout_s: Option<u64>,
    port_kinds: Option<Vec<String>>,
    limits: Option<limits::LimitsFile>,
    learn_port_percent: Option<u8>,
    busy_poll_us: Option<u64>,
    stt_offload: Option<SttOffload>,
    workers: Option<u64>,
    learn_remote_percent: Option<u8>,
    http_listen: Option<String>,
    openflow_listen: Option<String>,
    ila_locator: Option<String>,
    http_max_connections: Option<usize>,
    http_header_timeout_s: Option<u64>,
    http_idle_timeout_s: Option<u64>,
    cluster: Option<cluster::ClusterFile>,
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax, an unknown key or a value of the wrong type.
    #[error("config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where, which key, what is wrong.
        source: TomlError,
    },
    /// A value of the right type outside what nvod accepts.
    #[error("config key `{key}` = {value}: {reason}")]
    Value {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        reason: &'static str,
    },
    /// No locator was configured and none could be derived.
    #[error(
        "cannot find an underlay address: no route to {PROBE_V4} nor {PROBE_V6} ({source}); \
         set `locator` in the config file"
    )]
    NoLocator {
        /// What the kernel said for the last attempt.
        source: std::io::Error,
    },
    /// A `[cluster]` file that cannot be read.
    #[error("config [cluster]: {0}")]
    Cluster(String),
}

/// Reads and resolves the configuration; `None` means no file: every default.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    let file = match path {
        None => ConfigFile::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            parse(&text).map_err(|source| ConfigError::Parse {
                path: path.to_owned(),
                source,
            })?
        }
    };
    resolve(file, derive_locator)
}

/// A config file the TOML parser refuses, on one line: the parser's message without its
/// multi-line excerpt, after the offending line of the file when the parser knows it.
#[derive(Debug, thiserror::Error)]
pub enum TomlError {
    /// At a known place in the file.
    #[error("line {line_no} `{line}`: {}", .source.message().trim())]
    At {
        /// The line's number, from 1.
        line_no: usize,
        /// The line, trimmed.
        line: String,
        /// The parser's error (boxed: it is large, and every config error would carry it).
        source: Box<toml::de::Error>,
    },
    /// Somewhere the parser does not say.
    #[error("{}", .source.message().trim())]
    Whole {
        /// The parser's error (boxed: it is large, and every config error would carry it).
        source: Box<toml::de::Error>,
    },
}

/// Parses TOML text; the error quotes the offending line of the file.
fn parse(text: &str) -> Result<ConfigFile, TomlError> {
    toml::from_str(text).map_err(|source| match source.span() {
        Some(span) => {
            let line_no = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let line = text.lines().nth(line_no - 1).unwrap_or_default().trim();
            TomlError::At {
                line_no,
                line: line.to_owned(),
                source: Box::new(source),
            }
        }
        None => TomlError::Whole {
            source: Box::new(source),
        },
    })
}

/// An outer header value as written: a number, or a word ("inherit").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OuterSetting {
    Fixed(u8),
    Word(String),
}

/// (fixed value, inherit) of an outer header key.
fn outer_setting(
    key: &'static str,
    value: Option<OuterSetting>,
) -> Result<(Option<u8>, bool), ConfigError> {
    match value {
        None => Ok((None, false)),
        Some(OuterSetting::Fixed(v)) => Ok((Some(v), false)),
        Some(OuterSetting::Word(w)) if w == "inherit" => Ok((None, true)),
        Some(OuterSetting::Word(w)) => Err(bad(
            key,
            format!("{w:?}"),
            "must be a number 0 to 255 or \"inherit\"",
        )),
    }
}

fn bad(key: &'static str, value: impl fmt::Display, reason: &'static str) -> ConfigError {
    ConfigError::Value {
        key,
        value: value.to_string(),
        reason,
    }
}

/// Fills in defaults and checks ranges; `derive` finds the locator when none is configured.
fn resolve(
    file: ConfigFile,
    derive: impl FnOnce() -> Result<IpAddr, ConfigError>,
) -> Result<Config, ConfigError> {
    let locator = match file.locator {
        Some(ip) => ip,
        None => derive()?,
    };
    if locator.is_unspecified() || locator.is_multicast() || locator.is_loopback() {
        return Err(bad(
            "locator",
            format!("\"{locator}\""),
            "must be a unicast address of this host, not unspecified, multicast or loopback",
        ));
    }
    let (api, port_kinds) = resolve_access(&file)?;
    let http = http::resolve_http(&file)?;
    let openflow_listen = http::resolve_openflow(&file)?;
    let ila_locator = file.ila_locator.as_deref().map(ila_locator).transpose()?;
    let cluster = cluster::resolve_cluster(file.cluster.as_ref(), cluster::hostname)?;
    let node_id = file.node_id.unwrap_or_else(|| node_id_from(locator));
    if node_id == 0 {
        return Err(bad("node_id", node_id, "must be 1 to 4294967295"));
    }
    let vxlan_port = file.vxlan_port.unwrap_or(DEFAULT_VXLAN_PORT);
    if vxlan_port == 0 {
        return Err(bad("vxlan_port", vxlan_port, "must be 1 to 65535"));
    }
    let underlay_mtu = file.underlay_mtu.unwrap_or(DEFAULT_UNDERLAY_MTU);
    if underlay_mtu < 1280 {
        return Err(bad("underlay_mtu", underlay_mtu, "must be 1280 to 65535"));
    }
    let entropy_ports = file.entropy_ports.unwrap_or(DEFAULT_ENTROPY_PORTS);
    if entropy_ports == 0 || entropy_ports > u16::MAX - ENTROPY_BASE {
        return Err(bad("entropy_ports", entropy_ports, "must be 1 to 16383"));
    }
    let multicast_ttl = file.multicast_ttl.unwrap_or(DEFAULT_MULTICAST_TTL);
    if multicast_ttl == 0 {
        return Err(bad("multicast_ttl", multicast_ttl, "must be 1 to 255"));
    }
    let api_socket = file
        .api_socket
        .unwrap_or_else(|| PathBuf::from(nvo_api::DEFAULT_SOCKET));
    if api_socket.as_os_str().is_empty() || api_socket.file_name().is_none() {
        return Err(bad(
            "api_socket",
            format!("{api_socket:?}"),
            "must be a path to a socket file",
        ));
    }
    let state_dir = file
        .state_dir
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR));
    if state_dir.as_os_str().is_empty() {
        return Err(bad("state_dir", "\"\"", "must be a directory path"));
    }
    if let Some(bgp) = &file.bgp {
        nvo_evpn::check(bgp, locator).map_err(|e| bad("bgp", e, "is refused"))?;
    }
    let log = file.log.unwrap_or_else(|| DEFAULT_LOG.to_owned());
    if log.trim().is_empty() {
        return Err(bad("log", "\"\"", "must be a level such as info or debug"));
    }
    let (ttl, inherit_ttl) = outer_setting("outer_ttl", file.outer_ttl)?;
    if ttl == Some(0) {
        return Err(bad("outer_ttl", 0, "must be 1 to 255 or \"inherit\""));
    }
    let (tos, inherit_tos) = outer_setting("outer_tos", file.outer_tos)?;
    let stt_bytes = file
        .stt_reassembly_bytes
        .unwrap_or(DEFAULT_STT_REASSEMBLY_BYTES);
    if !(1 << 16..=1 << 30).contains(&stt_bytes) {
        return Err(bad(
            "stt_reassembly_bytes",
            stt_bytes,
            "must be 65536 to 1073741824",
        ));
    }
    let stt_timeout = file
        .stt_reassembly_timeout_s
        .unwrap_or(DEFAULT_STT_REASSEMBLY_TIMEOUT_S);
    if !(1..=3600).contains(&stt_timeout) {
        return Err(bad(
            "stt_reassembly_timeout_s",
            stt_timeout,
            "must be 1 to 3600",
        ));
    }
    let mut learn_share = LearnShare::default();
    for (key, value, into) in [
        (
            "learn_port_percent",
            file.learn_port_percent,
            &mut learn_share.port_percent,
        ),
        (
            "learn_remote_percent",
            file.learn_remote_percent,
            &mut learn_share.remote_percent,
        ),
    ] {
        match value {
            Some(v) if !(1..=100).contains(&v) => return Err(bad(key, v, "must be 1 to 100")),
            Some(v) => *into = v,
            None => {}
        }
    }
    let stt_reassembly = ReassemblyLimits {
        max_bytes: stt_bytes,
        timeout: Duration::from_secs(stt_timeout),
        ..ReassemblyLimits::default()
    };
    let limits = limits::resolve(file.limits.unwrap_or_default())?;
    Ok(Config {
        node_id,
        locator,
        vxlan_port,
        underlay_mtu,
        api_socket,
        state_dir,
        entropy_ports,
        multicast_ttl,
        log,
        outer: Outer {
            ttl,
            tos,
            inherit_ttl,
            inherit_tos,
            df: file.outer_df,
            no_gro: file.udp_gro == Some(false),
            no_gso: file.udp_gso == Some(false),
        },
        stt_reassembly,
        profiles: file.profile,
        bgp: file.bgp,
        datapath: file.datapath.unwrap_or_default(),
        xdp: file.xdp.unwrap_or_default(),
        api,
        port_kinds,
        limits,
        learn_share,
        http,
        cluster,
        openflow_listen,
        ila_locator,
        busy_poll: latency::busy_poll(file.busy_poll_us)?,
        stt_offload: file.stt_offload.unwrap_or_default(),
        workers: workers::workers(file.workers)?,
    })
}

/// The `ila_locator` key: an IPv6 /64 prefix (`fd00:1::/64`) or an address in it; the upper
/// 64 bits are the locator.
fn ila_locator(text: &str) -> Result<std::net::Ipv6Addr, ConfigError> {
    let bad = |reason| bad("ila_locator", format!("{text:?}"), reason);
    let (addr, len) = text.split_once('/').unwrap_or((text, "64"));
    if len != "64" {
        return Err(bad("the locator is a /64 prefix, e.g. \"fd00:1::/64\""));
    }
    let addr: std::net::Ipv6Addr = addr
        .parse()
        .map_err(|_| bad("not an ipv6 prefix; use e.g. \"fd00:1::/64\""))?;
    if addr.is_unspecified() || addr.is_multicast() || addr.is_loopback() {
        return Err(bad("a unicast ipv6 prefix is needed"));
    }
    Ok(addr)
}

/// The node ID an unconfigured node takes: its IPv4 locator as a number, or a 32-bit FNV-1a
/// hash of its IPv6 locator (stable across versions and machines, so two nodes agree on it).
pub fn node_id_from(locator: IpAddr) -> u32 {
    let id = match locator {
        IpAddr::V4(v4) => u32::from(v4),
        IpAddr::V6(v6) => v6.octets().iter().fold(0x811c_9dc5_u32, |h, &b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        }),
    };
    id.max(1)
}

/// Asks the kernel which source address it would use towards a documentation address: that
/// is the address of the default route's interface. Tries IPv4 first, then IPv6.
fn derive_locator() -> Result<IpAddr, ConfigError> {
    let probe = |bind: IpAddr, to: IpAddr| -> std::io::Result<IpAddr> {
        let socket = UdpSocket::bind(SocketAddr::new(bind, 0))?;
        socket.connect(SocketAddr::new(to, 9))?;
        Ok(socket.local_addr()?.ip())
    };
    probe(Ipv4Addr::UNSPECIFIED.into(), PROBE_V4.into())
        .or_else(|_| probe(Ipv6Addr::UNSPECIFIED.into(), PROBE_V6.into()))
        .map_err(|source| ConfigError::NoLocator { source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed() -> Result<IpAddr, ConfigError> {
        Ok("192.0.2.7".parse().unwrap())
    }

    pub(super) fn resolve_text(text: &str) -> Result<Config, ConfigError> {
        let file = parse(text).map_err(|source| ConfigError::Parse {
            path: "nvod.toml".into(),
            source,
        })?;
        resolve(file, fixed)
    }

    #[test]
    fn learn_shares_default_to_a_quarter_and_a_half_and_are_checked() {
        let c = resolve_text("").unwrap();
        assert_eq!(
            (c.learn_share.port(4096), c.learn_share.remote(4096)),
            (1024, 2048)
        );
        assert_eq!((c.learn_share.port(2), c.learn_share.remote(1)), (1, 1));
        let c = resolve_text("learn_port_percent = 10\nlearn_remote_percent = 100").unwrap();
        assert_eq!(
            (c.learn_share.port(100), c.learn_share.remote(100)),
            (10, 100)
        );
        for bad in ["learn_port_percent = 0", "learn_remote_percent = 101"] {
            let e = resolve_text(bad).unwrap_err().to_string();
            assert!(e.contains("1 to 100"), "{e}");
        }
    }

    #[test]
    fn stt_offload_is_auto_or_off() {
        assert_eq!(resolve_text("").unwrap().stt_offload, SttOffload::Auto);
        let off = resolve_text("stt_offload = \"off\"").unwrap();
        assert_eq!(off.stt_offload, SttOffload::Off);
        assert_eq!(off.datapath_settings().stt_offload, SttOffload::Off);
        let e = resolve_text("stt_offload = \"on\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("on"), "{e}");
    }

    #[test]
    fn xdp_takes_its_four_values_and_refuses_others() {
        assert_eq!(resolve_text("").unwrap().xdp, XdpChoice::Auto);
        for (text, want) in [
            ("auto", XdpChoice::Auto),
            ("driver", XdpChoice::Driver),
            ("generic", XdpChoice::Generic),
            ("off", XdpChoice::Off),
        ] {
            assert_eq!(
                resolve_text(&format!("xdp = \"{text}\"")).unwrap().xdp,
                want
            );
        }
        assert!(resolve_text("xdp = \"native\"").is_err());
    }

    #[test]
    fn empty_file_gives_every_default() {
        let c = resolve_text("").unwrap();
        assert_eq!(c.locator, "192.0.2.7".parse::<IpAddr>().unwrap());
        assert_eq!(c.node_id, u32::from(Ipv4Addr::new(192, 0, 2, 7)));
        assert_eq!(c.vxlan_port, 4789);
        assert_eq!(c.underlay_mtu, 1500);
        assert_eq!(c.outer, Outer::default());
        assert_eq!(c.stt_reassembly.max_bytes, 16 << 20);
        assert_eq!(c.stt_reassembly.timeout, Duration::from_secs(30));
        assert!(c.profiles.is_empty());
        assert_eq!(c.api_socket, PathBuf::from("/run/nvo/nvod.sock"));
        assert_eq!(c.state_dir, PathBuf::from("/var/lib/nvo"));
        assert_eq!(c.entropy_ports, 16);
        assert_eq!(c.multicast_ttl, 8);
        assert_eq!(c.log, "info");
    }

    #[test]
    fn every_key_is_read() {
        let c = resolve_text(
            "node_id = 7\nlocator = \"fd00::1\"\nvxlan_port = 8472\nunderlay_mtu = 9000\n\
             api_socket = \"/tmp/x.sock\"\nstate_dir = \"/tmp/s\"\nentropy_ports = 4\nlog = \"debug\"\n\
             multicast_ttl = 1\nouter_ttl = 9\nouter_tos = \"inherit\"\nouter_df = true\n\
             stt_reassembly_bytes = 1048576\nstt_reassembly_timeout_s = 2\n\
             [[profile]]\nname = \"ntun\"\nudp_port = 7777\ntemplate = \"4e56 0100 0000 0000\"\n\
             vni = { offset = 4, len = 3 }\npayload = \"ethernet\"\n",
        )
        .unwrap();
        assert_eq!(
            c.outer,
            Outer {
                ttl: Some(9),
                tos: None,
                df: Some(true),
                inherit_ttl: false,
                inherit_tos: true,
                no_gro: false,
                no_gso: false,
            }
        );
        assert_eq!(c.stt_reassembly.max_bytes, 1 << 20);
        assert_eq!(c.stt_reassembly.timeout, Duration::from_secs(2));
        assert_eq!(c.profiles.len(), 1);
        assert_eq!(c.profiles[0].name, "ntun");
        assert_eq!(c.node_id, 7);
        assert_eq!(c.locator, "fd00::1".parse::<IpAddr>().unwrap());
        assert_eq!(c.vxlan_port, 8472);
        assert_eq!(c.api_socket, PathBuf::from("/tmp/x.sock"));
        assert_eq!(c.state_dir, PathBuf::from("/tmp/s"));
        assert_eq!(c.entropy_ports, 4);
        assert_eq!(c.multicast_ttl, 1);
        assert_eq!(c.log, "debug");
    }

    #[test]
    fn bgp_section_is_read_and_checked() {
        let c = resolve_text(
            "[bgp]\nasn = 65000\nrouter_id = \"192.0.2.7\"\n\
             neighbors = [{address = \"192.0.2.250\"}]\n",
        )
        .unwrap();
        let bgp = c.bgp.unwrap();
        assert_eq!((bgp.asn, bgp.neighbors.len()), (65000, 1));
        let e = resolve_text("[bgp]\nasn = 65000\nrouter_id = \"0.0.0.0\"\nneighbors = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bgp") && e.contains("0.0.0.0"), "{e}");
        let e = resolve_text("[bgp]\nasn = 65000\nrouter_id = \"192.0.2.7\"\nneighbours = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("neighbours"), "{e}");
    }

    #[test]
    fn bgp_section_takes_passwords_gtsm_and_listen_addresses() {
        let c = resolve_text(
            "[bgp]\nasn = 65000\nrouter_id = \"192.0.2.7\"\nlisten_addresses = [\"192.0.2.7\"]\n\
             neighbors = [{address = \"192.0.2.250\", password = \"s3cret\", ttl_security = true}]\n",
        )
        .unwrap();
        let bgp = c.bgp.unwrap();
        assert_eq!(
            bgp.neighbors[0].password,
            Some(nvo_api::Password("s3cret".into()))
        );
        assert_eq!(bgp.neighbors[0].ttl_security, Some(true));
        assert!(!format!("{bgp:?}").contains("s3cret"));
        let e = resolve_text(
            "[bgp]\nasn = 65000\nrouter_id = \"192.0.2.7\"\n\
             neighbors = [{address = \"192.0.2.250\", password = \"\"}]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("password is 0 bytes"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = resolve_text("vxlan_prot = 4789\n").unwrap_err().to_string();
        assert!(e.contains("vxlan_prot"), "{e}");
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn bad_values_name_key_and_value() {
        let e = resolve_text("vxlan_port = 70000\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("vxlan_port") && e.contains("70000"), "{e}");
        let e = resolve_text("locator = \"not-an-ip\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("locator") && e.contains("not-an-ip"), "{e}");
        let e = resolve_text("underlay_mtu = 100\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("underlay_mtu") && e.contains("100"), "{e}");
        let e = resolve_text("entropy_ports = 0\n").unwrap_err().to_string();
        assert!(e.contains("entropy_ports") && e.contains('0'), "{e}");
        let e = resolve_text("locator = \"224.0.0.1\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("locator") && e.contains("224.0.0.1"), "{e}");
        let e = resolve_text("multicast_ttl = 0\n").unwrap_err().to_string();
        assert!(e.contains("multicast_ttl") && e.contains('0'), "{e}");
        let e = resolve_text("multicast_ttl = 256\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("multicast_ttl") && e.contains("256"), "{e}");
        let e = resolve_text("node_id = 0\n").unwrap_err().to_string();
        assert!(e.contains("node_id"), "{e}");
        let e = resolve_text("outer_ttl = \"copy\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("outer_ttl") && e.contains("copy"), "{e}");
        let e = resolve_text("outer_ttl = 0\n").unwrap_err().to_string();
        assert!(e.contains("outer_ttl"), "{e}");
        let e = resolve_text("stt_reassembly_bytes = 10\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("stt_reassembly_bytes") && e.contains("10"),
            "{e}"
        );
    }

    #[test]
    fn ipv6_node_id_is_a_stable_hash() {
        let a = node_id_from("fd00::1".parse().unwrap());
        assert_eq!(a, node_id_from("fd00::1".parse().unwrap()));
        assert_ne!(a, node_id_from("fd00::2".parse().unwrap()));
        assert_ne!(a, 0);
    }
}
