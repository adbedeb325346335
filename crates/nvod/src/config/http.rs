//! The configuration keys of the metrics listener (issue 20): `http_listen` turns it on, and
//! its bounds mirror the API server's (see `KEYS_HELP`).

use std::net::SocketAddr;
use std::time::Duration;

use super::access::{connections, seconds};
use super::{bad, ConfigError, ConfigFile};

/// Default cap on concurrent metrics connections.
pub const DEFAULT_HTTP_MAX_CONNECTIONS: usize = 64;
/// Default seconds to send a request header to the metrics listener.
pub const DEFAULT_HTTP_HEADER_TIMEOUT_S: u64 = 10;
/// Default seconds a metrics connection may stay without moving a byte.
pub const DEFAULT_HTTP_IDLE_TIMEOUT_S: u64 = 60;

/// The metrics listener: where, and how much of nvod its clients may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// The TCP address `GET /metrics` is served on.
    pub listen: SocketAddr,
    /// Connections served at once.
    pub max_connections: usize,
    /// Time to send a request header.
    pub header_timeout: Duration,
    /// Time a connection may stay without moving a byte.
    pub idle_timeout: Duration,
}

/// The metrics listener's settings, checked; `None` when `http_listen` is not set (off).
pub(super) fn resolve_http(file: &ConfigFile) -> Result<Option<HttpSettings>, ConfigError> {
    let max_connections = connections(
        "http_max_connections",
        file.http_max_connections,
        DEFAULT_HTTP_MAX_CONNECTIONS,
    )?;
    let header_timeout = seconds(
        "http_header_timeout_s",
        file.http_header_timeout_s,
        DEFAULT_HTTP_HEADER_TIMEOUT_S,
    )?;
    let idle_timeout = seconds(
        "http_idle_timeout_s",
        file.http_idle_timeout_s,
        DEFAULT_HTTP_IDLE_TIMEOUT_S,
    )?;
    let Some(text) = &file.http_listen else {
        return Ok(None);
    };
    let listen: SocketAddr = text.parse().map_err(|_| {
        bad(
            "http_listen",
            format!("{text:?}"),
            "must be an address and a port, such as \"127.0.0.1:9477\" or \"[::1]:9477\"",
        )
    })?;
    if listen.port() == 0 || listen.ip().is_multicast() {
        return Err(bad(
            "http_listen",
            format!("{text:?}"),
            "must be a unicast (or unspecified) address of this host and a port 1 to 65535",
        ));
    }
    Ok(Some(HttpSettings {
        listen,
        max_connections,
        header_timeout,
        idle_timeout,
    }))
}

/// The OpenFlow listener's address (`openflow_listen`, off unless set): TCP, plaintext, so
/// meant for loopback or a management network (docs/openflow.md).
pub fn resolve_openflow(file: &ConfigFile) -> Result<Option<SocketAddr>, ConfigError> {
    let Some(text) = &file.openflow_listen else {
        return Ok(None);
    };
    match text.parse::<SocketAddr>() {
        Ok(a) if a.port() != 0 && !a.ip().is_multicast() => Ok(Some(a)),
        _ => Err(bad(
            "openflow_listen",
            format!("{text:?}"),
            "must be a unicast (or unspecified) address of this host and a port 1 to 65535, such as \"127.0.0.1:6653\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::resolve_text;
    use super::*;

    #[test]
    fn metrics_are_off_unless_http_listen_is_set() {
        assert_eq!(resolve_text("").unwrap().http, None);
        let c = resolve_text(
            "http_listen = \"127.0.0.1:9477\"\nhttp_max_connections = 4\n\
             http_header_timeout_s = 2\nhttp_idle_timeout_s = 3\n",
        )
        .unwrap();
        assert_eq!(
            c.http,
            Some(HttpSettings {
                listen: "127.0.0.1:9477".parse().unwrap(),
                max_connections: 4,
                header_timeout: Duration::from_secs(2),
                idle_timeout: Duration::from_secs(3),
            })
        );
        let c = resolve_text("http_listen = \"[::1]:9100\"\n").unwrap();
        let http = c.http.unwrap();
        assert_eq!(http.max_connections, DEFAULT_HTTP_MAX_CONNECTIONS);
        assert_eq!(http.header_timeout, Duration::from_secs(10));
    }

    #[test]
    fn bad_values_are_named() {
        for (text, key) in [
            ("http_listen = \"127.0.0.1\"\n", "http_listen"),
            ("http_listen = \"127.0.0.1:0\"\n", "http_listen"),
            ("http_listen = \"239.1.1.1:9477\"\n", "http_listen"),
            ("http_listen = \"localhost:9477\"\n", "http_listen"),
            ("http_max_connections = 0\n", "http_max_connections"),
            ("http_header_timeout_s = 0\n", "http_header_timeout_s"),
            ("http_idle_timeout_s = 3601\n", "http_idle_timeout_s"),
        ] {
            let e = resolve_text(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
