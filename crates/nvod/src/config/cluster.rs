//! The `[cluster]` table (issue 19): cluster mode on etcd. Setting `etcd` turns it on; every
//! other key needs it. Unknown keys are refused with the key named, like the rest of the file.

use std::path::PathBuf;

use nvo_cluster::{
    check_endpoint, check_host_name, Access, Layout, Tls, DEFAULT_LEASE_TTL_S, DEFAULT_PREFIX,
    LEASE_TTL_S,
};
use serde::Deserialize;

use super::{bad, ConfigError};

/// `[cluster]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClusterFile {
    etcd: Option<Vec<String>>,
    prefix: Option<String>,
    name: Option<String>,
    lease_ttl_s: Option<u32>,
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    username: Option<String>,
    password_file: Option<PathBuf>,
}

/// Cluster mode's settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// How to reach etcd.
    pub access: Access,
    /// The key layout (the prefix).
    pub layout: Layout,
    /// This host's name in the cluster.
    pub name: String,
    /// TTL of its registration lease, seconds.
    pub lease_ttl_s: u32,
}

/// The checked settings; `None` when there is no `[cluster]` table (cluster mode off).
pub(super) fn resolve_cluster(
    file: Option<&ClusterFile>,
    hostname: impl FnOnce() -> Option<String>,
) -> Result<Option<ClusterSettings>, ConfigError> {
    let Some(file) = file else {
        return Ok(None);
    };
    let endpoints = file.etcd.clone().unwrap_or_default();
    if endpoints.is_empty() {
        return Err(bad(
            "cluster.etcd",
            "[]",
            "must list at least one endpoint, e.g. [\"http://10.1.0.1:2379\"] (or remove the \
             [cluster] table)",
        ));
    }
    for url in &endpoints {
        check_endpoint(url).map_err(|why| bad("cluster.etcd", format!("{url:?}"), why))?;
    }
    let prefix = file.prefix.as_deref().unwrap_or(DEFAULT_PREFIX);
    let layout = Layout::new(prefix).map_err(|_| {
        bad(
            "cluster.prefix",
            format!("{prefix:?}"),
            "must start and end with '/'",
        )
    })?;
    let name = match &file.name {
        Some(name) => name.clone(),
        None => hostname().unwrap_or_default(),
    };
    // The hostname when no name is set: an empty or odd one is named as the value.
    check_host_name(&name).map_err(|why| bad("cluster.name", format!("{name:?}"), why))?;
    let lease_ttl_s = file.lease_ttl_s.unwrap_or(DEFAULT_LEASE_TTL_S);
    if !LEASE_TTL_S.contains(&lease_ttl_s) {
        return Err(bad("cluster.lease_ttl_s", lease_ttl_s, "must be 2 to 300"));
    }
    let tls = Tls {
        ca_file: file.ca_file.clone(),
        cert_file: file.cert_file.clone(),
        key_file: file.key_file.clone(),
    };
    if tls.cert_file.is_some() != tls.key_file.is_some() {
        return Err(bad(
            "cluster.cert_file",
            format!("{:?}", tls.cert_file),
            "cert_file and key_file go together",
        ));
    }
    for path in [&tls.ca_file, &tls.cert_file, &tls.key_file]
        .into_iter()
        .flatten()
    {
        if let Err(e) = std::fs::metadata(path) {
            return Err(ConfigError::Cluster(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    }
    let user = match (&file.username, &file.password_file) {
        (None, None) => None,
        (Some(user), Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError::Cluster(format!("cannot read password_file {}: {e}", path.display()))
            })?;
            let password = text.lines().next().unwrap_or_default().to_owned();
            Some((user.clone(), password))
        }
        _ => {
            return Err(bad(
                "cluster.username",
                format!("{:?}", file.username),
                "username and password_file go together",
            ))
        }
    };
    Ok(Some(ClusterSettings {
        access: Access {
            endpoints,
            tls,
            user,
        },
        layout,
        name,
        lease_ttl_s,
    }))
}

/// The kernel's host name (the default cluster name).
pub(super) fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(name.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<Option<ClusterSettings>, String> {
        let file: ClusterFile = toml::from_str(text).map_err(|e| e.to_string())?;
        resolve_cluster(Some(&file), || Some("box".to_owned())).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults() {
        let s = resolve("etcd = [\"http://127.0.0.1:2379\"]")
            .unwrap()
            .unwrap();
        assert_eq!(s.access.endpoints, ["http://127.0.0.1:2379"]);
        assert_eq!(s.layout.prefix(), "/nvo/");
        assert_eq!(s.name, "box");
        assert_eq!(s.lease_ttl_s, 10);
        assert_eq!(resolve_cluster(None, || None).unwrap(), None);
    }

    #[test]
    fn refuses_bad_values_naming_the_key() {
        for (text, key) in [
            ("etcd = []", "cluster.etcd"),
            ("etcd = [\"10.0.0.1:2379\"]", "cluster.etcd"),
            (
                "etcd = [\"http://a:1\"]\nprefix = \"nvo\"",
                "cluster.prefix",
            ),
            (
                "etcd = [\"http://a:1\"]\nlease_ttl_s = 1",
                "cluster.lease_ttl_s",
            ),
            (
                "etcd = [\"http://a:1\"]\nlease_ttl_s = 301",
                "cluster.lease_ttl_s",
            ),
            ("etcd = [\"http://a:1\"]\nname = \"a/b\"", "cluster.name"),
            (
                "etcd = [\"http://a:1\"]\nusername = \"u\"",
                "cluster.username",
            ),
        ] {
            let e = resolve(text).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        let e = resolve("etcd = [\"http://a:1\"]\ncolour = 1").unwrap_err();
        assert!(e.contains("unknown field `colour`"), "{e}");
    }
}
