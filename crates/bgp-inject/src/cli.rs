//! Command-line arguments of `nvo-bgp-inject`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use clap::Parser;

/// Advertise many EVPN routes to a BGP peer (a route reflector) over one iBGP session, time it,
/// and hold the session.
///
/// Sends N MAC-only type-2 routes (MACs 02:bb:XX:XX:XX:XX from a counter, spread round-robin
/// over the VNIs; RD router-id:vni, RT asn:vni, encapsulation VXLAN, label = VNI, next hop =
/// the VTEP), optionally one type-3 route per VNI, as full 4096-byte UPDATEs, then End-of-RIB.
/// Prints one JSON object per line on stdout: built, connected, established, sent,
/// end_of_rib, withdrawn, closed (each with t_s since start and unix_s), or error.
/// Exit status: 0 when the session ended by --hold-after, 1 when it failed or the peer closed
/// it, 2 for a usage error.
#[derive(Debug, Clone, Parser)]
#[command(name = "nvo-bgp-inject", version)]
pub struct Cli {
    /// The peer: ADDRESS or ADDRESS:PORT (default port 179).
    #[arg(long, value_parser = parse_peer)]
    pub peer: SocketAddr,
    /// Our AS; also the peer's unless --peer-as is given (iBGP to a route reflector).
    #[arg(long, default_value_t = 65000)]
    pub asn: u32,
    /// The peer's AS (default: --asn).
    #[arg(long)]
    pub peer_as: Option<u32>,
    /// Our BGP identifier; also the RD's address part.
    #[arg(long)]
    pub router_id: Ipv4Addr,
    /// The VTEP address sent as next hop and type-3 originator (default: --router-id).
    #[arg(long)]
    pub next_hop: Option<IpAddr>,
    /// Number of MAC routes.
    #[arg(long, default_value_t = 1000)]
    pub routes: u64,
    /// The VNIs: a comma-separated list of numbers and ranges, e.g. 100 or 100-109,200.
    #[arg(long, default_value = "100", value_parser = parse_vnis)]
    pub vnis: Vnis,
    /// First value of the MAC counter (give two injectors disjoint ranges).
    #[arg(long, default_value_t = 0)]
    pub first: u64,
    /// Also advertise one type-3 (inclusive multicast) route per VNI.
    #[arg(long)]
    pub type3: bool,
    /// Hold time offered in OPEN, seconds (0, or 3 to 65535).
    #[arg(long, default_value_t = 90, value_parser = parse_hold)]
    pub hold_time: u16,
    /// Seconds to wait for the TCP connection and for each message of the opening exchange.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Withdraw every route this many seconds after End-of-RIB.
    #[arg(long)]
    pub withdraw_after: Option<f64>,
    /// Close the session (NOTIFICATION Cease) this many seconds after End-of-RIB and exit 0;
    /// without it the session stays up until the process is killed or the peer closes it.
    #[arg(long)]
    pub hold_after: Option<f64>,
}

/// A list of VNIs, as `--vnis` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vnis(pub Vec<u32>);

/// At most this many VNIs in one `--vnis` (one group of UPDATEs each).
pub const MAX_VNIS: usize = 65536;

fn parse_peer(s: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    s.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, 179))
        .map_err(|_| format!("{s:?} is not ADDRESS or ADDRESS:PORT ([v6]:port for IPv6)"))
}

fn parse_hold(s: &str) -> Result<u16, String> {
    match s.parse::<u16>() {
        Ok(h) if h == 0 || h >= 3 => Ok(h),
        _ => Err(format!(
            "hold time {s:?} must be 0 or 3 to 65535 (RFC 4271 §4.2)"
        )),
    }
}

fn parse_vnis(s: &str) -> Result<Vnis, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("vni {t:?} is not a number"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi || (hi - lo) as usize >= MAX_VNIS || out.len() + ((hi - lo) as usize) >= MAX_VNIS
        {
            return Err(format!(
                "vni range {part:?} is empty or longer than {MAX_VNIS}"
            ));
        }
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        return Err("no vni given".into());
    }
    Ok(Vnis(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_peers_and_vnis() {
        assert_eq!(parse_peer("10.0.0.1").unwrap().port(), 179);
        assert_eq!(parse_peer("10.0.0.1:1179").unwrap().port(), 1179);
        assert_eq!(parse_peer("[fd00::1]:179").unwrap().port(), 179);
        assert!(parse_peer("rr1").is_err());
        assert_eq!(
            parse_vnis("100-102, 7").unwrap(),
            Vnis(vec![100, 101, 102, 7])
        );
        assert!(parse_vnis("5-3").is_err());
        assert!(parse_vnis("x").is_err());
        assert!(parse_vnis("1-100000").is_err());
        assert!(parse_hold("2").is_err());
        assert_eq!(parse_hold("0"), Ok(0));
    }

    #[test]
    fn help_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
