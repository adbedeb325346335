//! `nvod: {cluster: {…}}` of a lab host: cluster mode on etcd (docs/cluster.md). The keys are
//! those of nvod's `[cluster]` table and are written into it as given; the checks here are the
//! ones that need no etcd (URL scheme, prefix shape, lease bounds), so that a typo fails before
//! any namespace is made rather than in an nvod's log.

use serde::{Deserialize, Serialize};

use super::ValidationError;

/// `nvod.cluster` of an nvo host: nvod's `[cluster]` table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterExtras {
    /// etcd client URLs, `http://…` or `https://…`; at least one.
    pub etcd: Vec<String>,
    /// Key prefix of the cluster's objects; starts and ends with '/' (nvod's default "/nvo/").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// This host's name in the cluster (nvod's default: the hostname, which in a lab is the
    /// machine's for every host — so labs with several hosts should set it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// TTL of the host's registration lease, 2 to 300 seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_ttl_s: Option<u64>,
    /// TLS: the CA that signed the etcd servers' certificates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// TLS: the client certificate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// TLS: the client key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// etcd authentication: the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// etcd authentication: a file holding the password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<String>,
}

impl ClusterExtras {
    /// The checks that need no etcd.
    pub fn validate(&self, host: &str) -> Result<(), ValidationError> {
        let bad = |message: String| {
            Err(ValidationError::NvodCluster {
                host: host.to_owned(),
                message,
            })
        };
        if self.etcd.is_empty() {
            return bad("etcd lists no endpoint".into());
        }
        for url in &self.etcd {
            if let Err(why) = nvo_cluster::check_endpoint(url) {
                return bad(format!("etcd endpoint {url:?}: {why}"));
            }
        }
        if let Some(p) = &self.prefix {
            if let Err(why) = nvo_cluster::Layout::new(p) {
                return bad(why);
            }
        }
        if let Some(name) = &self.name {
            if let Err(why) = nvo_cluster::check_host_name(name) {
                return bad(format!("name {name:?} {why}"));
            }
        }
        if let Some(t) = self.lease_ttl_s {
            let fits = u32::try_from(t).is_ok_and(|t| nvo_cluster::LEASE_TTL_S.contains(&t));
            if !fits {
                return Err(ValidationError::NvodRange {
                    host: host.to_owned(),
                    key: "cluster.lease_ttl_s",
                    value: t,
                    range: "2..=300",
                });
            }
        }
        Ok(())
    }

    /// The `[cluster]` table of nvod's configuration, TOML-quoted by the toml crate.
    pub fn to_toml(&self) -> String {
        #[derive(Serialize)]
        struct Table<'a> {
            cluster: &'a ClusterExtras,
        }
        // Serializing plain strings, integers and a list of strings cannot fail.
        toml::to_string(&Table { cluster: self }).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_the_keys_as_given() {
        let c = ClusterExtras {
            etcd: vec!["http://10.1.0.1:2379".into(), "http://10.1.0.2:2379".into()],
            prefix: Some("/t\"x/".into()),
            name: Some("h1".into()),
            lease_ttl_s: Some(3),
            ..Default::default()
        };
        let text = c.to_toml();
        let back: toml::Value = toml::from_str(&text).unwrap();
        let t = &back["cluster"];
        assert_eq!(t["etcd"].as_array().unwrap().len(), 2, "{text}");
        assert_eq!(t["prefix"].as_str(), Some("/t\"x/"), "{text}");
        assert_eq!(t["name"].as_str(), Some("h1"));
        assert_eq!(t["lease_ttl_s"].as_integer(), Some(3));
        assert!(t.get("ca_file").is_none(), "{text}");
    }

    #[test]
    fn bad_values_are_named() {
        let ok = ClusterExtras {
            etcd: vec!["http://10.1.0.1:2379".into()],
            ..Default::default()
        };
        assert!(ok.validate("h1").is_ok());
        for (c, want) in [
            (
                ClusterExtras::default(),
                "host h1: nvod.cluster: etcd lists no endpoint",
            ),
            (
                ClusterExtras {
                    etcd: vec!["10.1.0.1:2379".into()],
                    ..Default::default()
                },
                "etcd endpoint \"10.1.0.1:2379\"",
            ),
            (
                ClusterExtras {
                    prefix: Some("nvo/".into()),
                    ..ok.clone()
                },
                "prefix \"nvo/\" must start and end with '/'",
            ),
            (
                ClusterExtras {
                    lease_ttl_s: Some(1),
                    ..ok.clone()
                },
                "nvod.cluster.lease_ttl_s 1 is outside 2..=300",
            ),
            (
                ClusterExtras {
                    name: Some("a/b".into()),
                    ..ok.clone()
                },
                "name \"a/b\"",
            ),
            (
                ClusterExtras {
                    name: Some("h 1".into()),
                    ..ok.clone()
                },
                "name \"h 1\" must be 1 to 253 characters without '/' or spaces",
            ),
        ] {
            let e = c.validate("h1").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
