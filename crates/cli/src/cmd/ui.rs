//! `nvo ui`: prints the URL of the local nvod's status page (`GET /` on its `http_listen`
//! address, which `GET /v1/node` names), and with `--open` opens it with `xdg-open`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;

use clap::Args;
use nvo_api::{Client, NodeInfo};
use serde_json::json;

use super::{print_json, CliError, Format};

/// `nvo ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// Open the page in the desktop's browser (xdg-open) as well.
    #[arg(long)]
    pub open: bool,
}

/// Why there is no page to show.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// nvod has no `http_listen`.
    #[error(
        "nvod serves no status page: http_listen is not set; add http_listen = \"127.0.0.1:9477\" \
         to nvod's config file (in a lab: nvod: {{http_listen: \"127.0.0.1:9477\"}}) and restart \
         nvod"
    )]
    Off,
    /// `xdg-open` could not be run.
    #[error("cannot open {url} in a browser: xdg-open: {reason}; open it yourself")]
    Open {
        /// The page.
        url: String,
        /// What failed.
        reason: String,
    },
}

/// The page's URL for a listener on `listen`: an unspecified address (`0.0.0.0`, `::`) is
/// reached on the loopback address of its family.
pub fn url(listen: SocketAddr) -> String {
    let ip = match listen.ip() {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}/", SocketAddr::new(ip, listen.port()))
}

/// `nvo ui`.
pub fn ui(client: &Client, format: Format, args: &UiArgs) -> Result<(), CliError> {
    let node: NodeInfo = client.get("/v1/node")?;
    let listen = node.http_listen.ok_or(UiError::Off)?;
    let url = url(listen);
    match format {
        Format::Text => println!("{url}"),
        Format::Json => print_json(&json!({"url": url, "http_listen": listen}))?,
    }
    if args.open {
        let status = Command::new("xdg-open").arg(&url).status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => Err(UiError::Open {
                url,
                reason: format!("exited with {s}"),
            })?,
            Err(e) => Err(UiError::Open {
                url,
                reason: e.to_string(),
            })?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_reach_the_listener() {
        let u = |s: &str| url(s.parse().unwrap());
        assert_eq!(u("127.0.0.1:9477"), "http://127.0.0.1:9477/");
        assert_eq!(u("0.0.0.0:9477"), "http://127.0.0.1:9477/");
        assert_eq!(u("[::]:9100"), "http://[::1]:9100/");
        assert_eq!(u("[2001:db8::1]:80"), "http://[2001:db8::1]:80/");
        assert_eq!(u("10.0.0.1:9477"), "http://10.0.0.1:9477/");
    }
}
