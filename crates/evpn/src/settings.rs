//! The BGP configuration checked and resolved: every default filled in, route distinguishers and
//! route targets parsed. A configuration that fails here changes nothing (the API answers 400).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use nvo_api as api;
use nvo_bgp::{RouteDistinguisher, RouteTarget};

/// Most neighbours one speaker has.
pub const MAX_NEIGHBORS: usize = 64;
/// Most route targets per network and direction.
pub const MAX_RTS: usize = 16;
/// Most local addresses to listen on.
pub const MAX_LISTEN: usize = 16;
/// Longest TCP-MD5 password (the kernel's `TCP_MD5SIG_MAXKEYLEN`).
pub const MAX_PASSWORD: usize = nvo_io::tcp_auth::MD5_MAX_KEY;

/// The configuration in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// What was asked, with the defaults filled in (what `GET /v1/bgp` shows).
    pub shown: api::BgpConfig,
    /// This node's AS.
    pub asn: u32,
    /// BGP identifier.
    pub router_id: Ipv4Addr,
    /// Accept connections.
    pub listen: bool,
    /// The local addresses listened on (the node's locator unless configured).
    pub listen_addresses: Vec<IpAddr>,
    /// TCP port.
    pub port: u16,
    /// Hold time offered.
    pub hold_time: u16,
    /// Delay between connection attempts.
    pub connect_retry: Duration,
    /// Graceful restart time (None: off).
    pub graceful_restart: Option<u16>,
    /// The VTEP address advertised.
    pub next_hop: IpAddr,
    /// Moves within `dup_window` that mark a MAC duplicate.
    pub dup_moves: u32,
    /// The duplicate detection window (also how long a duplicate MAC stays frozen).
    pub dup_window: Duration,
    /// The neighbours.
    pub neighbors: Vec<Neighbor>,
    /// Per-network settings given explicitly; others take [`Settings::vni`]'s defaults.
    pub vnis: BTreeMap<u32, VniSettings>,
}

/// One neighbour, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbor {
    /// Address.
    pub address: IpAddr,
    /// AS.
    pub asn: u32,
    /// Only accept.
    pub passive: bool,
    /// Port.
    pub port: u16,
    /// Description.
    pub description: Option<String>,
    /// TCP-MD5 password (RFC 2385).
    pub password: Option<api::Password>,
    /// GTSM (RFC 5082): TTL 255 sent and required.
    pub ttl_security: bool,
}

/// One network's EVPN settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VniSettings {
    /// Advertise and import.
    pub advertise: bool,
    /// Route distinguisher of its routes.
    pub rd: RouteDistinguisher,
    /// Imported route targets.
    pub import: Vec<RouteTarget>,
    /// Exported route targets.
    pub export: Vec<RouteTarget>,
    /// ARP/ND suppression.
    pub arp_suppression: bool,
}

/// Why a BGP configuration is refused (the API answers 400 with this line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// AS 0.
    #[error("asn 0 is reserved; use 1 to 4294967295")]
    ReservedAsn,
    /// Router ID 0.0.0.0.
    #[error("router_id 0.0.0.0 is not allowed (RFC 6286); use this node's IPv4 address")]
    UnspecifiedRouterId,
    /// A hold time of 1 or 2 seconds (RFC 4271 §4.2).
    #[error("hold_time_s {0} is not allowed: use 0 or 3 to 65535")]
    HoldTime(u16),
    /// A connect retry time outside 1..=3600 s.
    #[error("connect_retry_s {0} is outside 1..=3600")]
    ConnectRetry(u16),
    /// A restart time that does not fit the capability.
    #[error("graceful_restart_s {0} is above 4095 (the capability's 12-bit field)")]
    GracefulRestart(u16),
    /// Duplicate detection bounds out of range.
    #[error("dup_moves {moves} / dup_window_s {window} outside 2..=1000 / 1..=86400")]
    Duplicates {
        /// dup_moves.
        moves: u32,
        /// dup_window_s.
        window: u32,
    },
    /// Port 0.
    #[error("port 0 is not a port")]
    ZeroPort,
    /// More neighbours than [`MAX_NEIGHBORS`].
    #[error("{0} neighbors; at most {MAX_NEIGHBORS}")]
    TooManyNeighbors(usize),
    /// A next hop that is not unicast.
    #[error("next_hop {0} is not a unicast address")]
    NextHop(IpAddr),
    /// A neighbour address that is not unicast.
    #[error("neighbor {0} is not a unicast address")]
    NeighborAddress(IpAddr),
    /// A neighbour listed twice.
    #[error("neighbor {0} is listed twice")]
    NeighborTwice(IpAddr),
    /// A neighbour with AS 0.
    #[error("neighbor {0}: asn 0 is reserved")]
    NeighborAsn(IpAddr),
    /// A neighbour with port 0.
    #[error("neighbor {0}: port 0 is not a port")]
    NeighborPort(IpAddr),
    /// A password the kernel cannot take.
    #[error("neighbor {address}: the password is {len} bytes; use 1 to {MAX_PASSWORD}")]
    PasswordLength {
        /// The neighbour.
        address: IpAddr,
        /// Its length.
        len: usize,
    },
    /// `password_set` without a password, and none in force to keep.
    #[error(
        "neighbor {0}: password_set is true but no password is given and none is in force; \
         give the password"
    )]
    PasswordMissing(IpAddr),
    /// A listen address that cannot be bound for unicast.
    #[error("listen_addresses: {0} is not a unicast address (0.0.0.0 or :: listens on all)")]
    ListenAddress(IpAddr),
    /// A listen address given twice.
    #[error("listen_addresses: {0} is listed twice")]
    ListenTwice(IpAddr),
    /// Too many listen addresses, or none.
    #[error("listen_addresses: {0} addresses; give 1 to {MAX_LISTEN} (or set listen = false)")]
    ListenCount(usize),
    /// A VNI outside 24 bits (or 0).
    #[error("vnis: vni {0} is outside 1..=16777215")]
    VniRange(u32),
    /// A network's settings are refused.
    #[error("vnis: vni {vni}: {source}")]
    Vni {
        /// The network.
        vni: u32,
        /// Why.
        source: VniError,
    },
    /// A network listed twice.
    #[error("vnis: vni {0} is listed twice")]
    VniTwice(u32),
}

/// Why one network's EVPN settings are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VniError {
    /// A route distinguisher or target that does not parse.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// An empty or too long list of route targets.
    #[error("{what} needs 1 to {MAX_RTS} route targets, got {count}")]
    RouteTargets {
        /// "import_rt" or "export_rt".
        what: &'static str,
        /// How many were given.
        count: usize,
    },
}

/// Why the text of a route distinguisher or target does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// No colon.
    #[error("{what} {text:?} is not ADMIN:NUMBER (e.g. 65000:100)")]
    Form {
        /// "route distinguisher" or "route target".
        what: &'static str,
        /// The text.
        text: String,
    },
    /// The number after the colon is out of range for the administrator's form.
    #[error("{what} {text:?}: {number:?} is not {range}")]
    Number {
        /// "route distinguisher" or "route target".
        what: &'static str,
        /// The text.
        text: String,
        /// The number as written.
        number: String,
        /// What it must be.
        range: &'static str,
    },
    /// The part before the colon is neither an AS nor an IPv4 address.
    #[error("{what} {text:?}: {admin:?} is neither an AS nor an IPv4 address")]
    Admin {
        /// "route distinguisher" or "route target".
        what: &'static str,
        /// The text.
        text: String,
        /// The administrator as written.
        admin: String,
    },
}

impl Settings {
    /// Checks `config`; `locator` is the default next hop.
    pub fn resolve(config: &api::BgpConfig, locator: IpAddr) -> Result<Settings, ConfigError> {
        if config.asn == 0 {
            return Err(ConfigError::ReservedAsn);
        }
        if config.router_id.is_unspecified() {
            return Err(ConfigError::UnspecifiedRouterId);
        }
        let hold_time = config.hold_time_s.unwrap_or(90);
        if matches!(hold_time, 1 | 2) {
            return Err(ConfigError::HoldTime(hold_time));
        }
        let connect_retry = config.connect_retry_s.unwrap_or(5);
        if !(1..=3600).contains(&connect_retry) {
            return Err(ConfigError::ConnectRetry(connect_retry));
        }
        let gr = config.graceful_restart_s.unwrap_or(120);
        if gr > 4095 {
            return Err(ConfigError::GracefulRestart(gr));
        }
        let dup_moves = config.dup_moves.unwrap_or(5);
        let dup_window = config.dup_window_s.unwrap_or(180);
        if !(2..=1000).contains(&dup_moves) || !(1..=86400).contains(&dup_window) {
            return Err(ConfigError::Duplicates {
                moves: dup_moves,
                window: dup_window,
            });
        }
        let port = config.port.unwrap_or(179);
        if port == 0 {
            return Err(ConfigError::ZeroPort);
        }
        if config.neighbors.len() > MAX_NEIGHBORS {
            return Err(ConfigError::TooManyNeighbors(config.neighbors.len()));
        }
        let next_hop = config.next_hop.unwrap_or(locator);
        if next_hop.is_unspecified() || next_hop.is_multicast() {
            return Err(ConfigError::NextHop(next_hop));
        }
        let mut neighbors: Vec<Neighbor> = Vec::new();
        for n in &config.neighbors {
            if n.address.is_unspecified() || n.address.is_multicast() {
                return Err(ConfigError::NeighborAddress(n.address));
            }
            if neighbors.iter().any(|seen| seen.address == n.address) {
                return Err(ConfigError::NeighborTwice(n.address));
            }
            if n.asn == Some(0) {
                return Err(ConfigError::NeighborAsn(n.address));
            }
            if n.port == Some(0) {
                return Err(ConfigError::NeighborPort(n.address));
            }
            match &n.password {
                Some(p) if p.0.is_empty() || p.0.len() > MAX_PASSWORD => {
                    return Err(ConfigError::PasswordLength {
                        address: n.address,
                        len: p.0.len(),
                    })
                }
                None if n.password_set == Some(true) => {
                    return Err(ConfigError::PasswordMissing(n.address))
                }
                _ => {}
            }
            neighbors.push(Neighbor {
                address: n.address,
                asn: n.asn.unwrap_or(config.asn),
                passive: n.passive.unwrap_or(false),
                port: n.port.unwrap_or(port),
                description: n.description.clone(),
                password: n.password.clone(),
                ttl_security: n.ttl_security.unwrap_or(false),
            });
        }
        let listen_addresses = listen_addresses(config, locator)?;
        let mut vnis = BTreeMap::new();
        for v in &config.vnis {
            if !(1..=0x00ff_ffff).contains(&v.vni) {
                return Err(ConfigError::VniRange(v.vni));
            }
            let resolved = resolve_vni(v, config.asn, config.router_id)
                .map_err(|source| ConfigError::Vni { vni: v.vni, source })?;
            if vnis.insert(v.vni, resolved).is_some() {
                return Err(ConfigError::VniTwice(v.vni));
            }
        }
        let mut shown = config.clone();
        shown.listen = Some(config.listen.unwrap_or(true));
        shown.port = Some(port);
        shown.hold_time_s = Some(hold_time);
        shown.connect_retry_s = Some(connect_retry);
        shown.graceful_restart_s = Some(gr);
        // next_hop stays as given: filled in, it would pin today's locator into the saved
        // configuration when a client writes back what GET showed.
        shown.dup_moves = Some(dup_moves);
        shown.dup_window_s = Some(dup_window);
        // listen_addresses stays as given, like next_hop. Passwords are never shown: only that
        // one is set (which a PUT of what GET showed keeps, see `password_set`).
        for n in &mut shown.neighbors {
            n.password_set = n.password.take().map(|_| true);
        }
        Ok(Settings {
            shown,
            asn: config.asn,
            router_id: config.router_id,
            listen: config.listen.unwrap_or(true),
            listen_addresses,
            port,
            hold_time,
            connect_retry: Duration::from_secs(connect_retry.into()),
            graceful_restart: (gr > 0).then_some(gr),
            next_hop,
            dup_moves,
            dup_window: Duration::from_secs(dup_window.into()),
            neighbors,
            vnis,
        })
    }

    /// The settings of network `vni`: the explicit ones, or the defaults.
    pub fn vni(&self, vni: u32) -> VniSettings {
        self.vnis.get(&vni).cloned().unwrap_or_else(|| VniSettings {
            advertise: true,
            rd: default_rd(self.router_id, vni),
            import: vec![default_rt(self.asn, vni)],
            export: vec![default_rt(self.asn, vni)],
            arp_suppression: true,
        })
    }
}

/// The addresses to listen on: as configured, or the locator.
fn listen_addresses(config: &api::BgpConfig, locator: IpAddr) -> Result<Vec<IpAddr>, ConfigError> {
    let Some(list) = &config.listen_addresses else {
        return Ok(vec![locator]);
    };
    if list.is_empty() || list.len() > MAX_LISTEN {
        return Err(ConfigError::ListenCount(list.len()));
    }
    let mut seen = Vec::with_capacity(list.len());
    for &a in list {
        if a.is_multicast() || a == IpAddr::from([255u8; 4]) {
            return Err(ConfigError::ListenAddress(a));
        }
        if seen.contains(&a) {
            return Err(ConfigError::ListenTwice(a));
        }
        seen.push(a);
    }
    Ok(seen)
}

/// Merges the passwords in force into a new configuration: a neighbour given with
/// `password_set = true` and no password keeps the one `current` has for its address (what a
/// client writes back after a GET, which never shows passwords).
pub fn keep_passwords(new: &mut api::BgpConfig, current: Option<&api::BgpConfig>) {
    for n in new.neighbors.iter_mut() {
        if n.password.is_none() && n.password_set == Some(true) {
            n.password = current
                .and_then(|c| c.neighbors.iter().find(|c| c.address == n.address))
                .and_then(|c| c.password.clone());
        }
        // What is stored says only what it has; a `password_set` left without a password is
        // refused by the check that follows.
        if n.password.is_some() || n.password_set == Some(false) {
            n.password_set = None;
        }
    }
}

fn resolve_vni(
    v: &api::EvpnVniSpec,
    asn: u32,
    router_id: Ipv4Addr,
) -> Result<VniSettings, VniError> {
    let rd = match &v.rd {
        Some(text) => parse_rd(text)?,
        None => default_rd(router_id, v.vni),
    };
    let rts =
        |list: &Option<Vec<String>>, what: &'static str| -> Result<Vec<RouteTarget>, VniError> {
            let Some(list) = list else {
                return Ok(vec![default_rt(asn, v.vni)]);
            };
            if list.is_empty() || list.len() > MAX_RTS {
                return Err(VniError::RouteTargets {
                    what,
                    count: list.len(),
                });
            }
            Ok(list.iter().map(|t| parse_rt(t)).collect::<Result<_, _>>()?)
        };
    Ok(VniSettings {
        advertise: v.advertise.unwrap_or(true),
        rd,
        import: rts(&v.import_rt, "import_rt")?,
        export: rts(&v.export_rt, "export_rt")?,
        arp_suppression: v.arp_suppression.unwrap_or(true),
    })
}

/// router_id:vni (the low 16 bits of the VNI: the RD's number is 16 bits wide).
pub fn default_rd(router_id: Ipv4Addr, vni: u32) -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 {
        addr: router_id,
        value: (vni & 0xffff) as u16,
    }
}

/// asn:vni, as FRR and RFC 8365 §5.1.2.1 derive it (2-octet AS: the VNI fills the number; a
/// 4-octet AS keeps the VNI's low 16 bits).
pub fn default_rt(asn: u32, vni: u32) -> RouteTarget {
    match u16::try_from(asn) {
        Ok(asn) => RouteTarget::TwoOctetAs { asn, value: vni },
        Err(_) => RouteTarget::FourOctetAs {
            asn,
            value: (vni & 0xffff) as u16,
        },
    }
}

/// The administrator and number of an RD or RT, by the form its text takes.
enum Admin {
    Ipv4(Ipv4Addr, u16),
    As2(u16, u32),
    As4(u32, u16),
}

/// "ASN:N" or "A.B.C.D:N"; `what` names the value in errors.
fn parse_admin(text: &str, what: &'static str) -> Result<Admin, ValueError> {
    let (admin, number) = text.rsplit_once(':').ok_or_else(|| ValueError::Form {
        what,
        text: text.to_owned(),
    })?;
    let range = |range: &'static str| ValueError::Number {
        what,
        text: text.to_owned(),
        number: number.to_owned(),
        range,
    };
    if let Ok(addr) = admin.parse::<Ipv4Addr>() {
        let value = number.parse().map_err(|_| range("0..=65535"))?;
        return Ok(Admin::Ipv4(addr, value));
    }
    let asn: u32 = admin.parse().map_err(|_| ValueError::Admin {
        what,
        text: text.to_owned(),
        admin: admin.to_owned(),
    })?;
    match u16::try_from(asn) {
        Ok(asn) => Ok(Admin::As2(
            asn,
            number.parse().map_err(|_| range("a 32-bit number"))?,
        )),
        Err(_) => Ok(Admin::As4(
            asn,
            number
                .parse()
                .map_err(|_| range("0..=65535 (with a 4-octet AS)"))?,
        )),
    }
}

/// "ASN:N" or "A.B.C.D:N".
pub fn parse_rd(text: &str) -> Result<RouteDistinguisher, ValueError> {
    Ok(match parse_admin(text, "route distinguisher")? {
        Admin::Ipv4(addr, value) => RouteDistinguisher::Ipv4 { addr, value },
        Admin::As2(asn, value) => RouteDistinguisher::As2 { asn, value },
        Admin::As4(asn, value) => RouteDistinguisher::As4 { asn, value },
    })
}

/// "ASN:N" or "A.B.C.D:N".
pub fn parse_rt(text: &str) -> Result<RouteTarget, ValueError> {
    Ok(match parse_admin(text, "route target")? {
        Admin::Ipv4(addr, value) => RouteTarget::Ipv4 { addr, value },
        Admin::As2(asn, value) => RouteTarget::TwoOctetAs { asn, value },
        Admin::As4(asn, value) => RouteTarget::FourOctetAs { asn, value },
    })
}

/// How the API shows a route distinguisher.
pub fn show_rd(rd: &RouteDistinguisher) -> String {
    match *rd {
        RouteDistinguisher::As2 { asn, value } => format!("{asn}:{value}"),
        RouteDistinguisher::Ipv4 { addr, value } => format!("{addr}:{value}"),
        RouteDistinguisher::As4 { asn, value } => format!("{asn}:{value}"),
        RouteDistinguisher::Unknown(b) => format!("raw:{}", hex(&b)),
    }
}

/// How the API shows a route target.
pub fn show_rt(rt: &RouteTarget) -> String {
    match *rt {
        RouteTarget::TwoOctetAs { asn, value } => format!("{asn}:{value}"),
        RouteTarget::Ipv4 { addr, value } => format!("{addr}:{value}"),
        RouteTarget::FourOctetAs { asn, value } => format!("{asn}:{value}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A configuration with one neighbour and every optional key absent.
    pub(crate) fn base() -> api::BgpConfig {
        api::BgpConfig {
            asn: 65000,
            router_id: Ipv4Addr::new(10, 0, 0, 1),
            listen: None,
            listen_addresses: None,
            port: None,
            hold_time_s: None,
            connect_retry_s: None,
            graceful_restart_s: None,
            next_hop: None,
            dup_moves: None,
            dup_window_s: None,
            neighbors: vec![api::NeighborSpec {
                address: "10.0.0.9".parse().unwrap(),
                asn: None,
                passive: None,
                port: None,
                description: None,
                password: None,
                password_set: None,
                ttl_security: None,
            }],
            vnis: vec![],
        }
    }

    #[test]
    fn defaults_fill_in() {
        let s = Settings::resolve(&base(), "10.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(
            (s.port, s.hold_time, s.graceful_restart),
            (179, 90, Some(120))
        );
        assert_eq!(s.neighbors[0].asn, 65000);
        let v = s.vni(100);
        assert_eq!(show_rd(&v.rd), "10.0.0.1:100");
        assert_eq!(
            v.import,
            vec![RouteTarget::TwoOctetAs {
                asn: 65000,
                value: 100
            }]
        );
        assert!(v.arp_suppression && v.advertise);
    }

    #[test]
    fn refusals_name_the_value() {
        let mut c = base();
        c.hold_time_s = Some(2);
        assert!(Settings::resolve(&c, "10.0.0.1".parse().unwrap())
            .unwrap_err()
            .to_string()
            .contains("hold_time_s 2"));
        let mut c = base();
        c.neighbors.push(c.neighbors[0].clone());
        assert!(Settings::resolve(&c, "10.0.0.1".parse().unwrap())
            .unwrap_err()
            .to_string()
            .contains("twice"));
        let mut c = base();
        c.vnis.push(api::EvpnVniSpec {
            vni: 100,
            advertise: None,
            rd: Some("nonsense".into()),
            import_rt: None,
            export_rt: None,
            arp_suppression: None,
        });
        assert!(Settings::resolve(&c, "10.0.0.1".parse().unwrap())
            .unwrap_err()
            .to_string()
            .contains("\"nonsense\""));
    }

    #[test]
    fn rd_and_rt_forms() {
        assert_eq!(
            parse_rd("65000:7").unwrap(),
            RouteDistinguisher::As2 {
                asn: 65000,
                value: 7
            }
        );
        assert_eq!(
            parse_rd("4200000000:7").unwrap(),
            RouteDistinguisher::As4 {
                asn: 4_200_000_000,
                value: 7
            }
        );
        assert_eq!(
            parse_rt("1.2.3.4:9").unwrap(),
            RouteTarget::Ipv4 {
                addr: Ipv4Addr::new(1, 2, 3, 4),
                value: 9
            }
        );
        assert!(parse_rt("65000").is_err());
        assert!(parse_rt("4200000000:70000").is_err());
    }

    /// The lines the API answers with (they were `String`s before the typed errors).
    #[test]
    fn refusal_messages_read_as_before() {
        let refused = |edit: fn(&mut api::BgpConfig)| {
            let mut c = base();
            edit(&mut c);
            Settings::resolve(&c, "10.0.0.1".parse().unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(|c| c.router_id = Ipv4Addr::UNSPECIFIED),
            "router_id 0.0.0.0 is not allowed (RFC 6286); use this node's IPv4 address"
        );
        assert_eq!(
            refused(|c| c.dup_moves = Some(1)),
            "dup_moves 1 / dup_window_s 180 outside 2..=1000 / 1..=86400"
        );
        assert_eq!(
            refused(|c| c.vnis.push(api::EvpnVniSpec {
                vni: 100,
                advertise: None,
                rd: None,
                import_rt: Some(vec![]),
                export_rt: None,
                arp_suppression: None,
            })),
            "vnis: vni 100: import_rt needs 1 to 16 route targets, got 0"
        );
        assert_eq!(
            parse_rt("65000").unwrap_err().to_string(),
            "route target \"65000\" is not ADMIN:NUMBER (e.g. 65000:100)"
        );
        assert_eq!(
            parse_rd("4200000000:70000").unwrap_err().to_string(),
            "route distinguisher \"4200000000:70000\": \"70000\" is not 0..=65535 (with a \
             4-octet AS)"
        );
        assert_eq!(
            parse_rt("x:1").unwrap_err().to_string(),
            "route target \"x:1\": \"x\" is neither an AS nor an IPv4 address"
        );
    }
}

#[cfg(test)]
mod auth_tests {
    use super::tests::base;
    use super::*;

    fn locator() -> IpAddr {
        "10.0.0.1".parse().unwrap()
    }

    #[test]
    fn listens_on_the_locator_unless_told() {
        let s = Settings::resolve(&base(), locator()).unwrap();
        assert_eq!(s.listen_addresses, vec![locator()]);
        assert_eq!(s.shown.listen_addresses, None);
        let mut c = base();
        c.listen_addresses = Some(vec!["10.0.0.1".parse().unwrap(), "::".parse().unwrap()]);
        let s = Settings::resolve(&c, locator()).unwrap();
        assert_eq!(s.listen_addresses.len(), 2);
        for (bad, says) in [
            (vec![], "0 addresses"),
            (
                vec!["224.0.0.5".parse().unwrap()],
                "224.0.0.5 is not a unicast",
            ),
            (
                vec!["10.0.0.1".parse().unwrap(), "10.0.0.1".parse().unwrap()],
                "listed twice",
            ),
        ] {
            c.listen_addresses = Some(bad);
            let e = Settings::resolve(&c, locator()).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn passwords_are_checked_and_never_shown() {
        let mut c = base();
        c.neighbors[0].password = Some(api::Password("s3cret".into()));
        c.neighbors[0].ttl_security = Some(true);
        let s = Settings::resolve(&c, locator()).unwrap();
        assert_eq!(
            s.neighbors[0].password,
            Some(api::Password("s3cret".into()))
        );
        assert!(s.neighbors[0].ttl_security);
        let shown = serde_json::to_string(&s.shown).unwrap();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("\"password_set\":true"), "{shown}");
        assert!(!format!("{s:?}").contains("s3cret"));
        for (bad, says) in [(String::new(), "0 bytes"), ("x".repeat(81), "81 bytes")] {
            c.neighbors[0].password = Some(api::Password(bad));
            let e = Settings::resolve(&c, locator()).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("10.0.0.9"), "{e}");
        }
        c.neighbors[0].password = None;
        c.neighbors[0].password_set = Some(true);
        let e = Settings::resolve(&c, locator()).unwrap_err().to_string();
        assert!(e.contains("none is in force"), "{e}");
    }

    #[test]
    fn what_get_showed_written_back_keeps_the_password() {
        let mut current = base();
        current.neighbors[0].password = Some(api::Password("s3cret".into()));
        let shown = Settings::resolve(&current, locator()).unwrap().shown;
        let mut back = shown.clone();
        keep_passwords(&mut back, Some(&current));
        assert_eq!(
            back.neighbors[0].password,
            Some(api::Password("s3cret".into()))
        );
        assert_eq!(back.neighbors[0].password_set, None);
        // Without password_set the password goes.
        let mut cleared = shown;
        cleared.neighbors[0].password_set = None;
        keep_passwords(&mut cleared, Some(&current));
        assert_eq!(cleared.neighbors[0].password, None);
        // Nothing to keep: refused, not silently dropped.
        let mut orphan = Settings::resolve(&current, locator()).unwrap().shown;
        keep_passwords(&mut orphan, None);
        let e = Settings::resolve(&orphan, locator())
            .unwrap_err()
            .to_string();
        assert!(e.contains("none is in force"), "{e}");
    }
}
