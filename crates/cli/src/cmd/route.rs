//! `nvo route list|add|del`: the IPv4 and IPv6 routes of an L3 network (`nvo network add
//! --l3`), each a prefix of the tenant's addresses and the remote tunnel end it is behind
//! (`/v1/networks/{vni}/routes`). On an ILA network (`--encap ila`) a route is an identifier →
//! locator mapping: the SIR addresses under the prefix live at the host whose locator is the
//! remote's /64 (docs/ila.md).
//!
//! A prefix is checked here as nvod checks it (no host bits set), so a typo fails with
//! clap's usage message before anything is sent. `del` names the route by its prefix, which
//! the API takes as two path segments: `DELETE /v1/networks/{vni}/routes/{addr}/{len}`.

use std::fmt;
use std::net::IpAddr;

use clap::Subcommand;
use nvo_api::{Client, RouteSpec};
use serde_json::Value;

use super::api::{done, show, vni_parser};
use super::{view, CliError, Format};
use crate::addr::{AddrError, Cidr};

/// Why a route's prefix is refused before it is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// Not ADDRESS/PREFIX at all.
    #[error(transparent)]
    Cidr(#[from] AddrError),
    /// Host bits set; `network` is the prefix meant.
    #[error("prefix {text} has host bits set; use {network}/{len}")]
    HostBits {
        /// The prefix as typed.
        text: String,
        /// Its network address.
        network: IpAddr,
        /// Its length.
        len: u8,
    },
}

/// An IPv4 or IPv6 prefix with its host bits clear, `10.0.0.0/24`, `fd00:1::/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// The network address.
    pub addr: IpAddr,
    /// The prefix length, 0 to 32 (IPv4) or 128 (IPv6).
    pub len: u8,
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Parses a route's prefix: IPv4 or IPv6 with no host bits set, the rules nvod applies, with
/// the corrected prefix in the message when host bits are set.
pub fn parse_prefix(text: &str) -> Result<Prefix, PrefixError> {
    let cidr: Cidr = text.parse()?;
    let addr = cidr.addr;
    let network = cidr.network();
    if network != cidr.addr {
        return Err(PrefixError::HostBits {
            text: text.to_owned(),
            network,
            len: cidr.prefix,
        });
    }
    Ok(Prefix {
        addr,
        len: cidr.prefix,
    })
}

/// `nvo route ...`
#[derive(Debug, Subcommand)]
pub enum RouteCmd {
    /// List an L3 network's routes: each prefix and the remote it is behind.
    #[command(after_help = "Example:\n  nvo route list 100\n  nvo -o json route list 100")]
    List {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
    /// Route a prefix of an L3 network to a remote tunnel end.
    ///
    /// Replaces the route with the same prefix. The network must have been created with `nvo
    /// network add --l3`; packets of its containers to an address the prefix holds are sent to
    /// the remote, and the longest matching prefix wins. On an ILA network the route maps SIR
    /// addresses to the locator, the remote's /64 (docs/ila.md).
    #[command(
        after_help = "Example:\n  nvo network add 100 --encap vxlan-gpe --l3\n  \
                      nvo route add 100 10.0.0.2/32 --remote 192.0.2.2\n  \
                      nvo route add 100 10.1.0.0/16 --remote 192.0.2.3\n  \
                      nvo network add 300 --encap ip6ip6\n  \
                      nvo route add 300 fd00:3::/64 --remote 2001:db8::2\n  \
                      nvo network add 900 --encap ila\n  \
                      nvo route add 900 fd10::2/128 --remote fd00:1a:0:2::1"
    )]
    Add {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// The IPv4 or IPv6 prefix, like 10.0.0.0/24 or fd00:3::/64 (host bits clear).
        #[arg(value_parser = parse_prefix)]
        prefix: Prefix,
        /// The remote tunnel end (underlay address) the prefix is behind.
        #[arg(long, value_name = "IP")]
        remote: IpAddr,
    },
    /// Delete an L3 network's route to a prefix.
    #[command(after_help = "Example:\n  nvo route del 100 10.1.0.0/16")]
    Del {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// The route's prefix, as listed.
        #[arg(value_parser = parse_prefix)]
        prefix: Prefix,
    },
}

/// Runs `nvo route ...`.
pub fn route(client: &Client, format: Format, cmd: RouteCmd) -> Result<(), CliError> {
    match cmd {
        RouteCmd::List { vni } => {
            let answer = client.get(&format!("/v1/networks/{vni}/routes"))?;
            show(format, answer, |r: &Vec<RouteSpec>| {
                view::routes(r).to_string()
            })
        }
        RouteCmd::Add {
            vni,
            prefix,
            remote,
        } => {
            let body = RouteSpec {
                prefix: prefix.to_string(),
                remote,
            };
            let answer: Value = client.post(&format!("/v1/networks/{vni}/routes"), &body)?;
            done(
                format,
                answer,
                format!("network {vni}: route {prefix} via {remote}"),
            )
        }
        RouteCmd::Del { vni, prefix } => {
            client.delete(&format!(
                "/v1/networks/{vni}/routes/{}/{}",
                prefix.addr, prefix.len
            ))?;
            done(
                format,
                Value::Null,
                format!("network {vni}: route {prefix} deleted"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_have_host_bits_clear() {
        let p = parse_prefix("10.0.0.0/24").unwrap();
        assert_eq!((p.addr, p.len), ("10.0.0.0".parse().unwrap(), 24));
        assert_eq!(p.to_string(), "10.0.0.0/24");
        assert_eq!(
            parse_prefix("fd00:3::/64").unwrap().to_string(),
            "fd00:3::/64"
        );
        assert_eq!(parse_prefix("10.0.0.2/32").unwrap().len, 32);
        assert_eq!(parse_prefix("0.0.0.0/0").unwrap().len, 0);
        for (bad, want) in [
            ("10.0.0.1/24", "host bits set; use 10.0.0.0/24"),
            ("10.0.0.0", "ADDRESS/PREFIX"),
            ("10.0.0.0/33", "longer than the address"),
            ("fd00::1/64", "host bits set; use fd00::/64"),
            ("fd00::/129", "longer than the address"),
            ("ten/8", "not an IP address"),
        ] {
            let e = parse_prefix(bad).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(bad), "{bad}: {e}");
        }
    }
}
