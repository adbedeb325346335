//! The configuration keys of issue 15's API and port hardening: the API socket's group, the
//! API server's bounds, and which kinds of interface may be ports (see `KEYS_HELP`).

use std::time::Duration;

use serde::Deserialize;

use super::limits::{self, size};
use super::{bad, ConfigError, ConfigFile};

/// Default cap on concurrent API connections.
pub const DEFAULT_API_MAX_CONNECTIONS: usize = 256;
/// Default seconds to send a request header.
pub const DEFAULT_API_HEADER_TIMEOUT_S: u64 = 10;
/// Default seconds a connection may stay without moving a byte.
pub const DEFAULT_API_IDLE_TIMEOUT_S: u64 = 60;
/// Kinds of interface that may be ports by default.
pub const DEFAULT_PORT_KINDS: [&str; 2] = ["veth", "tap"];

/// The API socket's group and the API server's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiLimits {
    /// Group of the socket; `None` leaves nvod's own.
    pub group: Option<GroupSetting>,
    /// Connections served at once.
    pub max_connections: usize,
    /// Time to send a request header.
    pub header_timeout: Duration,
    /// Time a connection may stay without moving a byte.
    pub idle_timeout: Duration,
}

impl Default for ApiLimits {
    fn default() -> ApiLimits {
        ApiLimits {
            group: None,
            max_connections: DEFAULT_API_MAX_CONNECTIONS,
            header_timeout: Duration::from_secs(DEFAULT_API_HEADER_TIMEOUT_S),
            idle_timeout: Duration::from_secs(DEFAULT_API_IDLE_TIMEOUT_S),
        }
    }
}

/// A group as written: a gid or a name (looked up in /etc/group when the socket is made).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum GroupSetting {
    /// A numeric gid.
    Gid(u32),
    /// A group name.
    Name(String),
}

/// The API socket's group, the API server's bounds and the port kinds, checked.
pub(super) fn resolve_access(file: &ConfigFile) -> Result<(ApiLimits, Vec<String>), ConfigError> {
    if let Some(GroupSetting::Name(name)) = &file.api_group {
        if name.is_empty() || name.contains([':', '\n', '/']) {
            return Err(bad(
                "api_group",
                format!("{name:?}"),
                "must be a group name from /etc/group or a gid",
            ));
        }
    }
    let max_connections = connections(
        "api_max_connections",
        file.api_max_connections,
        DEFAULT_API_MAX_CONNECTIONS,
    )?;
    let api = ApiLimits {
        group: file.api_group.clone(),
        max_connections,
        header_timeout: seconds(
            "api_header_timeout_s",
            file.api_header_timeout_s,
            DEFAULT_API_HEADER_TIMEOUT_S,
        )?,
        idle_timeout: seconds(
            "api_idle_timeout_s",
            file.api_idle_timeout_s,
            DEFAULT_API_IDLE_TIMEOUT_S,
        )?,
    };
    let port_kinds = match &file.port_kinds {
        None => DEFAULT_PORT_KINDS.map(str::to_owned).to_vec(),
        Some(kinds) => kinds.clone(),
    };
    for kind in &port_kinds {
        let plain = kind
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if kind.is_empty() || kind.len() > 31 || !plain {
            return Err(bad(
                "port_kinds",
                format!("{kind:?}"),
                "each kind must be a driver name as `ethtool -i` shows it (veth, macvlan, ...) \
                 or \"tap\"",
            ));
        }
        if kind == "lo" || kind == "loopback" {
            return Err(bad(
                "port_kinds",
                format!("{kind:?}"),
                "loopback can never be a port",
            ));
        }
    }
    Ok((api, port_kinds))
}

/// A listener's connection cap (`api_max_connections`, `http_max_connections`): 1 to 65536.
pub(super) fn connections(
    key: &'static str,
    value: Option<usize>,
    default: usize,
) -> Result<usize, ConfigError> {
    size(key, value, default, 1 << 16, "must be 1 to 65536")
}

/// A listener's timeout in seconds (`*_header_timeout_s`, `*_idle_timeout_s`): 1 to 3600.
pub(super) fn seconds(
    key: &'static str,
    value: Option<u64>,
    default: u64,
) -> Result<Duration, ConfigError> {
    limits::key(key, value, default, 3600, "must be 1 to 3600").map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::super::tests::resolve_text;
    use super::*;

    #[test]
    fn access_keys_are_read_and_checked() {
        let c = resolve_text("").unwrap();
        assert_eq!(c.api, ApiLimits::default());
        assert_eq!(c.port_kinds, ["veth", "tap"]);
        let c = resolve_text(
            "api_group = \"nvo\"\napi_max_connections = 8\napi_header_timeout_s = 2\n\
             api_idle_timeout_s = 3\nport_kinds = [\"veth\", \"macvlan\"]\n",
        )
        .unwrap();
        assert_eq!(c.api.group, Some(GroupSetting::Name("nvo".into())));
        assert_eq!(c.api.max_connections, 8);
        assert_eq!(c.api.header_timeout, Duration::from_secs(2));
        assert_eq!(c.api.idle_timeout, Duration::from_secs(3));
        assert_eq!(c.port_kinds, ["veth", "macvlan"]);
        assert_eq!(
            resolve_text("api_group = 27\n").unwrap().api.group,
            Some(GroupSetting::Gid(27))
        );
        for (text, key) in [
            ("api_max_connections = 0\n", "api_max_connections"),
            ("api_max_connections = 65537\n", "api_max_connections"),
            ("api_header_timeout_s = 0\n", "api_header_timeout_s"),
            ("api_idle_timeout_s = 4000\n", "api_idle_timeout_s"),
            ("port_kinds = [\"lo\"]\n", "port_kinds"),
            ("port_kinds = [\"a b\"]\n", "port_kinds"),
            ("api_group = \"a:b\"\n", "api_group"),
        ] {
            let e = resolve_text(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
