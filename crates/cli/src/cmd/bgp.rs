//! `nvo bgp ...` and `nvo evpn ...`: nvod's BGP/EVPN speaker (issue 7, docs/design/evpn.md) on
//! its API:
//!
//! | command                         | API call(s)                                   |
//! |---------------------------------|-----------------------------------------------|
//! | `bgp summary`                   | `GET /v1/bgp`                                 |
//! | `bgp show`                      | `GET /v1/bgp` (its `config` member)           |
//! | `bgp set ...`                   | `PUT /v1/bgp`                                 |
//! | `bgp neighbor add/del ADDR`     | `GET /v1/bgp`, then `PUT /v1/bgp`             |
//! | `bgp stop`                      | `DELETE /v1/bgp`                              |
//! | `evpn routes [--vni] [--type]`  | `GET /v1/evpn/routes[?vni=N&type=T]`          |
//!
//! The API sets the configuration as a whole, so `bgp set` replaces it, and adding or deleting
//! one neighbor reads the configuration in force, changes it here and writes it back (a
//! concurrent change by another client between the two calls is overwritten). The written-back
//! configuration carries the defaults nvod filled in, now explicit.
//!
//! On the command line a neighbor is `ADDR[,asn=N][,passive][,port=P][,description=TEXT]` and
//! a network's EVPN settings `VNI[,rd=RD][,rt=RT]...` (commas, because IPv6 addresses hold
//! colons). Their syntax and ranges are checked here, with the bad part named, before anything
//! is sent; nvod checks the rest (answering 400 with its reason).

mod error;
mod view;

use std::net::{IpAddr, Ipv4Addr};

use clap::{Args, Subcommand};
use nvo_api::{BgpConfig, BgpSummary, Client, EvpnRoute, EvpnVniSpec, NeighborSpec};
use serde_json::Value;

use super::api::{done, show, vni_parser};
use super::{print_json, CliError, Format};
use crate::table::list;

pub use error::{BgpError, Spec};
#[cfg(test)]
use view::up_down;
pub use view::{config_view, routes_view, summary_view};

/// The syntax of `--neighbor`, quoted in its errors.
pub const NEIGHBOR_SYNTAX: &str =
    "ADDR[,asn=N][,passive][,port=P][,description=TEXT][,password-file=PATH][,ttl-security]";

/// The syntax of `--vni`, quoted in its errors.
pub const VNI_SYNTAX: &str =
    "VNI[,rd=RD][,rt=RT][,import-rt=RT][,export-rt=RT][,no-advertise][,no-arp-suppression]";

/// What `neighbor add/del` say when nvod has no BGP configuration to change.
pub const NOT_CONFIGURED: &str = "bgp is not configured; configure it first with \
     `nvo bgp set --asn N --router-id A [--neighbor ADDR]...`";

use nvo_wire::VNI_MAX;

/// Parses an AS number, 1 to 4294967295 (4-octet, RFC 6793; 0 is reserved).
pub fn parse_asn(text: &str) -> Result<u32, BgpError> {
    match text.trim().parse::<u32>() {
        Ok(asn) if asn > 0 => Ok(asn),
        _ => Err(BgpError::Asn(text.to_owned())),
    }
}

/// Parses a TCP port, 1 to 65535.
pub fn parse_port(text: &str) -> Result<u16, BgpError> {
    match text.trim().parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(BgpError::Port(text.to_owned())),
    }
}

/// Parses a BGP identifier: an IPv4 address other than 0.0.0.0 (RFC 6286 section 2.1).
pub fn parse_router_id(text: &str) -> Result<Ipv4Addr, BgpError> {
    match text.trim().parse::<Ipv4Addr>() {
        Ok(id) if !id.is_unspecified() => Ok(id),
        Ok(_) => Err(BgpError::RouterIdZero),
        Err(_) => Err(BgpError::RouterId(text.to_owned())),
    }
}

/// Parses a hold time: 0 (no keepalives) or 3 to 65535 seconds (RFC 4271 section 4.2).
pub fn parse_hold_time(text: &str) -> Result<u16, BgpError> {
    match text.trim().parse::<u16>() {
        Ok(s) if s == 0 || s >= 3 => Ok(s),
        _ => Err(BgpError::HoldTime(text.to_owned())),
    }
}

/// Checks a route distinguisher or route target and writes it canonically: `ASN:N` with a
/// 2-octet AS and a 4-octet number, or a 4-octet AS (over 65535) or an IPv4 address with a
/// 2-octet number (RFC 4364 section 4.2, RFC 4360 section 4, RFC 5668).
pub fn parse_admin_value(what: &str, text: &str) -> Result<String, BgpError> {
    let Some((admin, number)) = text.trim().split_once(':') else {
        return Err(BgpError::AdminSyntax {
            what: what.to_owned(),
            text: text.to_owned(),
        });
    };
    let n: u32 = number.parse().map_err(|_| BgpError::AdminNumber {
        what: what.to_owned(),
        text: text.to_owned(),
        number: number.to_owned(),
    })?;
    if let Ok(ip) = admin.parse::<Ipv4Addr>() {
        if n > u32::from(u16::MAX) {
            return Err(BgpError::AdminIpv4Number {
                what: what.to_owned(),
                text: text.to_owned(),
            });
        }
        return Ok(format!("{ip}:{n}"));
    }
    let asn: u32 = admin.parse().map_err(|_| BgpError::AdminAs {
        what: what.to_owned(),
        text: text.to_owned(),
        admin: admin.to_owned(),
    })?;
    if asn > u32::from(u16::MAX) && n > u32::from(u16::MAX) {
        return Err(BgpError::AdminFourOctetNumber {
            what: what.to_owned(),
            text: text.to_owned(),
        });
    }
    Ok(format!("{asn}:{n}"))
}

/// Splits `HEAD,key=value,flag,...` into the head and its options, each a key and its value
/// if it has one.
fn split_options(text: &str) -> (&str, Vec<(&str, Option<&str>)>) {
    let mut parts = text.split(',');
    let head = parts.next().unwrap_or_default();
    let options = parts
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (p.trim(), None),
        })
        .collect();
    (head, options)
}

/// The value of `key=value`, or an error saying that `key` needs one.
fn value<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, BgpError> {
    value.ok_or_else(|| BgpError::NeedsValue(key.to_owned()))
}

/// A flag option: an error when it was given a value.
fn flag(key: &str, value: Option<&str>) -> Result<(), BgpError> {
    match value {
        None => Ok(()),
        Some(v) => Err(BgpError::TakesNoValue {
            key: key.to_owned(),
            value: v.to_owned(),
        }),
    }
}

/// Sets an option once; an error when it was given twice.
fn once<T>(slot: &mut Option<T>, key: &str, value: T) -> Result<(), BgpError> {
    if slot.is_some() {
        return Err(BgpError::Twice(key.to_owned()));
    }
    *slot = Some(value);
    Ok(())
}

/// Reads a TCP-MD5 password from a file (its first line; a password on the command line would
/// show in `ps`).
pub fn read_password(path: &str) -> Result<nvo_api::Password, BgpError> {
    let refused = |reason: String| BgpError::PasswordFile {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| refused(e.to_string()))?;
    let line = text.lines().next().unwrap_or_default();
    if line.is_empty() || line.len() > 80 {
        return Err(refused(format!(
            "its first line is {} bytes; a password is 1 to 80",
            line.len()
        )));
    }
    Ok(nvo_api::Password(line.to_owned()))
}

/// Parses `--neighbor ADDR[,asn=N][,passive][,port=P][,description=TEXT][,password-file=PATH]
/// [,ttl-security]`.
pub fn parse_neighbor(text: &str) -> Result<NeighborSpec, BgpError> {
    let (addr, options) = split_options(text);
    let address = addr
        .trim()
        .parse()
        .map_err(|_| BgpError::NeighborAddress(addr.to_owned()))?;
    let mut n = NeighborSpec {
        address,
        asn: None,
        passive: None,
        port: None,
        description: None,
        password: None,
        password_set: None,
        ttl_security: None,
    };
    for (key, v) in options {
        match key {
            "asn" => once(&mut n.asn, key, parse_asn(value(key, v)?)?)?,
            "port" => once(&mut n.port, key, parse_port(value(key, v)?)?)?,
            "passive" => {
                flag(key, v)?;
                once(&mut n.passive, key, true)?;
            }
            "description" => once(&mut n.description, key, value(key, v)?.to_owned())?,
            "password-file" => once(&mut n.password, key, read_password(value(key, v)?)?)?,
            "ttl-security" => {
                flag(key, v)?;
                once(&mut n.ttl_security, key, true)?;
            }
            "" => return Err(BgpError::EmptyOption(Spec::Neighbor)),
            _ => {
                return Err(BgpError::UnknownOption {
                    key: key.to_owned(),
                    spec: Spec::Neighbor,
                })
            }
        }
    }
    Ok(n)
}

/// Parses `--vni VNI[,rd=RD][,rt=RT][,import-rt=RT][,export-rt=RT][,no-advertise]
/// [,no-arp-suppression]`; `rt=` is both imported and exported, and each RT option repeats.
pub fn parse_vni_spec(text: &str) -> Result<EvpnVniSpec, BgpError> {
    let (vni, options) = split_options(text);
    let vni = match vni.trim().parse::<u32>() {
        Ok(v) if (1..=VNI_MAX).contains(&v) => v,
        _ => return Err(BgpError::Vni(vni.to_owned())),
    };
    let mut spec = EvpnVniSpec {
        vni,
        advertise: None,
        rd: None,
        import_rt: None,
        export_rt: None,
        arp_suppression: None,
    };
    for (key, v) in options {
        match key {
            "rd" => once(&mut spec.rd, key, parse_admin_value("rd", value(key, v)?)?)?,
            "rt" | "import-rt" | "export-rt" => {
                let rt = parse_admin_value(key, value(key, v)?)?;
                if key != "export-rt" {
                    spec.import_rt.get_or_insert_with(Vec::new).push(rt.clone());
                }
                if key != "import-rt" {
                    spec.export_rt.get_or_insert_with(Vec::new).push(rt);
                }
            }
            "no-advertise" => {
                flag(key, v)?;
                once(&mut spec.advertise, key, false)?;
            }
            "no-arp-suppression" => {
                flag(key, v)?;
                once(&mut spec.arp_suppression, key, false)?;
            }
            "" => return Err(BgpError::EmptyOption(Spec::Vni)),
            _ => {
                return Err(BgpError::UnknownOption {
                    key: key.to_owned(),
                    spec: Spec::Vni,
                })
            }
        }
    }
    Ok(spec)
}

/// `nvo bgp ...`
#[derive(Debug, Subcommand)]
pub enum BgpCmd {
    /// Show the speaker and its sessions, like FRR's `show bgp summary`.
    ///
    /// A header with this node's AS and router ID and the EVPN route counts (local, received
    /// from all peers, installed into the data path, duplicate MACs), then one row per
    /// neighbor: its AS, session state and time in that state (UP/DOWN: hh:mm:ss, then
    /// 1d02h03m, then 02w3d04h), the routes held from it ("12 (3)": 3 of the 12 are stale,
    /// kept while it restarts), the routes sent to it, the BGP messages exchanged, and the
    /// last error (a NOTIFICATION, a connection failure).
    #[command(after_help = "Example:\n  nvo bgp summary\n  nvo -o json bgp summary")]
    Summary,
    /// Show the BGP configuration in force, defaults filled in (TOML; -o json: JSON).
    #[command(after_help = "Example:\n  nvo bgp show\n  nvo -o json bgp show")]
    Show,
    /// Configure the BGP/EVPN speaker, replacing its whole configuration, and (re)start it.
    ///
    /// nvod peers with the --neighbor routers (typically route reflectors) over BGP with EVPN
    /// (RFC 7432, 8365): it advertises the MACs/IPs behind its ports and the networks it serves
    /// (type 2 and 3 routes, next hop = its VTEP address) and installs what they advertise
    /// into the FDB, flood lists and ARP/ND suppression tables. The configuration is persisted.
    ///
    /// A neighbor is ADDR[,asn=N][,passive][,port=P][,description=TEXT][,password-file=PATH]
    /// [,ttl-security]: without asn= it is in this node's AS (iBGP); passive never connects,
    /// only accepts; password-file signs its TCP segments with TCP-MD5 (RFC 2385), with the
    /// password on the file's first line (never shown again); ttl-security is GTSM (RFC 5082)
    /// for a directly connected peer. nvod listens on its locator unless --listen-address
    /// says otherwise, and closes connections from other addresses. Every network takes EVPN
    /// defaults (advertised, RD router-id:vni, RT asn:vni, ARP/ND suppression on); --vni
    /// VNI[,rd=RD][,rt=RT][,import-rt=RT][,export-rt=RT][,no-advertise][,no-arp-suppression]
    /// changes them for one (rt= both imports and exports; RT options repeat). RDs and RTs are
    /// ASN:N or IPv4:N.
    #[command(
        after_help = "Example:\n  nvo bgp set --asn 65000 --router-id 192.0.2.1 --neighbor 192.0.2.254\n  \
                      nvo bgp set --asn 65001 --router-id 192.0.2.1 --neighbor 192.0.2.254,asn=65000 \\\n    \
                      --neighbor fd00::fe,asn=65000,passive --hold-time 30 --graceful-restart 120\n  \
                      nvo bgp set --asn 65000 --router-id 192.0.2.1 --neighbor 192.0.2.254 \\\n    \
                      --vni 100,rt=65000:100,rt=65000:1 --vni 200,no-advertise"
    )]
    Set(BgpSetArgs),
    /// Add or delete one neighbor, keeping the rest of the configuration.
    #[command(subcommand)]
    Neighbor(NeighborCmd),
    /// Stop the speaker: close every session and withdraw the routes it installed.
    ///
    /// The data path keeps its other entries (static, learned); `nvo bgp set` starts the
    /// speaker again.
    #[command(after_help = "Example:\n  nvo bgp stop")]
    Stop,
}

/// `nvo bgp set`.
#[derive(Debug, Args)]
pub struct BgpSetArgs {
    /// This node's AS number (1 to 4294967295).
    #[arg(long, value_parser = parse_asn, value_name = "N")]
    pub asn: u32,
    /// The BGP identifier: a nonzero IPv4 address unique among the speakers.
    #[arg(long, value_parser = parse_router_id, value_name = "A")]
    pub router_id: Ipv4Addr,
    /// A peer (repeatable): ADDR[,asn=N][,passive][,port=P][,description=TEXT]
    /// [,password-file=PATH][,ttl-security].
    #[arg(long = "neighbor", value_parser = parse_neighbor, value_name = "ADDR[,OPTION]...")]
    pub neighbors: Vec<NeighborSpec>,
    /// Accept connections from the neighbors (the default).
    #[arg(long, overrides_with = "no_listen")]
    pub listen: bool,
    /// Do not listen; only connect out to the neighbors.
    #[arg(long, overrides_with = "listen")]
    pub no_listen: bool,
    /// A local address to listen on (repeatable; default: the node's locator only; 0.0.0.0 or
    /// :: for every address).
    #[arg(long = "listen-address", value_name = "IP")]
    pub listen_addresses: Vec<IpAddr>,
    /// The TCP port to listen on and to connect to (default 179).
    #[arg(long, value_parser = parse_port, value_name = "P")]
    pub port: Option<u16>,
    /// Hold time offered in OPEN, seconds: 0 (no keepalives) or 3 to 65535 (default 90).
    #[arg(long, value_parser = parse_hold_time, value_name = "SECS")]
    pub hold_time: Option<u16>,
    /// Seconds between connection attempts to a neighbor that is down, 1 to 3600 (default 5).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=3600), value_name = "SECS")]
    pub connect_retry: Option<u16>,
    /// Graceful restart time advertised to peers, 0 to 4095 seconds; 0 turns graceful restart
    /// off (default 120).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=4095), value_name = "SECS")]
    pub graceful_restart: Option<u16>,
    /// The VTEP address advertised as next hop (default: the underlay's local address).
    #[arg(long, value_name = "IP")]
    pub next_hop: Option<IpAddr>,
    /// MAC mobility: moves within --dup-window that mark a MAC duplicate (default 5).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub dup_moves: Option<u32>,
    /// MAC mobility: the window of duplicate detection, seconds (default 180).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), value_name = "SECS")]
    pub dup_window: Option<u32>,
    /// One network's EVPN settings (repeatable):
    /// VNI[,rd=RD][,rt=RT][,import-rt=RT][,export-rt=RT][,no-advertise][,no-arp-suppression].
    #[arg(long = "vni", value_parser = parse_vni_spec, value_name = "VNI[,OPTION]...")]
    pub vnis: Vec<EvpnVniSpec>,
}

impl BgpSetArgs {
    /// The configuration to `PUT`; an error when a neighbor or a network is given twice.
    pub fn config(self) -> Result<BgpConfig, BgpError> {
        for (i, n) in self.neighbors.iter().enumerate() {
            if self.neighbors[..i].iter().any(|m| m.address == n.address) {
                return Err(BgpError::NeighborTwice(n.address));
            }
        }
        for (i, v) in self.vnis.iter().enumerate() {
            if self.vnis[..i].iter().any(|w| w.vni == v.vni) {
                return Err(BgpError::VniTwice(v.vni));
            }
        }
        let listen = match (self.listen, self.no_listen) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        };
        Ok(BgpConfig {
            asn: self.asn,
            router_id: self.router_id,
            listen,
            listen_addresses: (!self.listen_addresses.is_empty()).then_some(self.listen_addresses),
            port: self.port,
            hold_time_s: self.hold_time,
            connect_retry_s: self.connect_retry,
            graceful_restart_s: self.graceful_restart,
            next_hop: self.next_hop,
            dup_moves: self.dup_moves,
            dup_window_s: self.dup_window,
            neighbors: self.neighbors,
            vnis: self.vnis,
        })
    }
}

/// `nvo bgp neighbor ...`
#[derive(Debug, Subcommand)]
pub enum NeighborCmd {
    /// Add a neighbor to the configuration in force (`nvo bgp set` must have configured BGP).
    #[command(after_help = "Example:\n  nvo bgp neighbor add 192.0.2.253\n  \
                      nvo bgp neighbor add fd00::fe --asn 65000 --passive")]
    Add {
        /// The peer's address.
        address: IpAddr,
        /// The peer's AS (default: this node's, an iBGP peer such as a route reflector).
        #[arg(long, value_parser = parse_asn, value_name = "N")]
        asn: Option<u32>,
        /// Never connect; only accept the peer's connection.
        #[arg(long)]
        passive: bool,
        /// The peer's port (default: the speaker's).
        #[arg(long, value_parser = parse_port, value_name = "P")]
        port: Option<u16>,
        /// A name shown in `nvo bgp summary`.
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        /// TCP-MD5 (RFC 2385): the password is the first line of this file.
        #[arg(long, value_name = "PATH")]
        password_file: Option<String>,
        /// GTSM (RFC 5082): TTL 255 sent and required, for a directly connected peer.
        #[arg(long)]
        ttl_security: bool,
    },
    /// Delete a neighbor: its session closes and the routes learned from it are withdrawn.
    #[command(after_help = "Example:\n  nvo bgp neighbor del 192.0.2.253")]
    Del {
        /// The peer's address.
        address: IpAddr,
    },
}

/// `nvo evpn ...`
#[derive(Debug, Subcommand)]
pub enum EvpnCmd {
    /// List the EVPN routes the speaker holds: its own and every peer's.
    ///
    /// Type 2 routes advertise a MAC (and IP) behind a VTEP, type 3 routes a VTEP's membership
    /// of a network (its flood list). SEQ is the MAC mobility sequence number, SOURCE "local"
    /// or the peer it came from. FLAGS: * best (installed or advertised), S stale (kept while
    /// its peer restarts), D duplicate MAC (moving too often; frozen), st sticky (static) MAC.
    #[command(
        after_help = "Example:\n  nvo evpn routes\n  nvo evpn routes --vni 100 --type 2\n  \
                      nvo -o json evpn routes --type 3"
    )]
    Routes {
        /// Only this network's routes.
        #[arg(long, value_parser = vni_parser())]
        vni: Option<u32>,
        /// Only routes of this type: 2 (MAC/IP) or 3 (inclusive multicast).
        #[arg(long = "type", value_parser = clap::value_parser!(u8).range(2..=3), value_name = "2|3")]
        route_type: Option<u8>,
    },
}

/// Adds a neighbor to `config`; an error when one with its address is there already.
pub fn add_neighbor(config: &mut BgpConfig, neighbor: NeighborSpec) -> Result<(), BgpError> {
    if config
        .neighbors
        .iter()
        .any(|n| n.address == neighbor.address)
    {
        return Err(BgpError::NeighborExists(neighbor.address));
    }
    config.neighbors.push(neighbor);
    Ok(())
}

/// Deletes the neighbor with `address` from `config`; an error naming the neighbors there
/// when it is not one of them.
pub fn del_neighbor(config: &mut BgpConfig, address: IpAddr) -> Result<(), BgpError> {
    let Some(at) = config.neighbors.iter().position(|n| n.address == address) else {
        let addresses: Vec<IpAddr> = config.neighbors.iter().map(|n| n.address).collect();
        return Err(BgpError::NoNeighbor {
            address,
            neighbors: list(&addresses),
        });
    };
    config.neighbors.remove(at);
    Ok(())
}

/// The path of `GET /v1/evpn/routes` with its filters.
pub fn routes_path(vni: Option<u32>, route_type: Option<u8>) -> String {
    let mut query = Vec::new();
    if let Some(v) = vni {
        query.push(format!("vni={v}"));
    }
    if let Some(t) = route_type {
        query.push(format!("type={t}"));
    }
    if query.is_empty() {
        "/v1/evpn/routes".to_owned()
    } else {
        format!("/v1/evpn/routes?{}", query.join("&"))
    }
}

/// Runs `nvo bgp ...`.
pub fn bgp(client: &Client, format: Format, cmd: BgpCmd) -> Result<(), CliError> {
    match cmd {
        BgpCmd::Summary => show(format, client.get("/v1/bgp")?, |s: &BgpSummary| {
            summary_view(s)
        }),
        BgpCmd::Show => {
            let answer: Value = client.get("/v1/bgp")?;
            let config = answer.get("config").cloned().unwrap_or(Value::Null);
            match format {
                Format::Json => print_json(&config),
                Format::Text => show(format, config, |c: &Option<BgpConfig>| {
                    config_view(c.as_ref())
                }),
            }
        }
        BgpCmd::Set(args) => {
            let config = args.config()?;
            let message = set_message(&config);
            let answer: Value = client.put("/v1/bgp", &config)?;
            done(format, answer, message)
        }
        BgpCmd::Neighbor(c) => neighbor(client, format, c),
        BgpCmd::Stop => {
            client.delete("/v1/bgp")?;
            done(
                format,
                Value::Null,
                "bgp stopped: sessions closed, the routes it installed withdrawn".to_owned(),
            )
        }
    }
}

/// Runs `nvo evpn ...`.
pub fn evpn(client: &Client, format: Format, cmd: EvpnCmd) -> Result<(), CliError> {
    match cmd {
        EvpnCmd::Routes { vni, route_type } => show(
            format,
            client.get(&routes_path(vni, route_type))?,
            |r: &Vec<EvpnRoute>| routes_view(r),
        ),
    }
}

/// Reads the configuration in force, applies one neighbor change and writes it back.
fn neighbor(client: &Client, format: Format, cmd: NeighborCmd) -> Result<(), CliError> {
    let summary: BgpSummary = client.get("/v1/bgp")?;
    let mut config = summary.config.ok_or(BgpError::NotConfigured)?;
    let message = match cmd {
        NeighborCmd::Add {
            address,
            asn,
            passive,
            port,
            description,
            password_file,
            ttl_security,
        } => {
            let spec = NeighborSpec {
                address,
                asn,
                passive: passive.then_some(true),
                port,
                description,
                password: password_file.as_deref().map(read_password).transpose()?,
                password_set: None,
                ttl_security: ttl_security.then_some(true),
            };
            let asn = asn.unwrap_or(config.asn);
            add_neighbor(&mut config, spec)?;
            format!("bgp: neighbor {address} (AS {asn}) added")
        }
        NeighborCmd::Del { address } => {
            del_neighbor(&mut config, address)?;
            format!("bgp: neighbor {address} deleted")
        }
    };
    let answer: Value = client.put("/v1/bgp", &config)?;
    done(format, answer, message)
}

/// The line `nvo bgp set` prints: what was configured.
fn set_message(c: &BgpConfig) -> String {
    let neighbors: Vec<IpAddr> = c.neighbors.iter().map(|n| n.address).collect();
    format!(
        "bgp: AS {}, router id {}, neighbors {}",
        c.asn,
        c.router_id,
        list(&neighbors)
    )
}

#[cfg(test)]
mod tests;
