//! The CNI result (spec 1.0 "Success", 1.1 adds an interface's `mtu`): what ADD prints, what
//! an IPAM plugin answers, and what CHECK and chained plugins receive as `prevResult`.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// A result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CniResult {
    /// The configuration's version.
    pub cni_version: String,
    /// Interfaces made: the host end (no sandbox) first, the container end second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Addresses, each pointing at its interface by index.
    #[serde(default)]
    pub ips: Vec<IpConfig>,
    /// Routes in the container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// DNS settings (passed on from IPAM).
    #[serde(default)]
    pub dns: Dns,
}

/// An interface in the result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Interface {
    /// Its name.
    pub name: String,
    /// Its MAC address, `aa:bb:cc:dd:ee:ff`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
    /// Its MTU (a 1.1 field; left out of 1.0 results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The container's namespace path; empty for the host end.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
}

/// An address in the result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IpConfig {
    /// CIDR notation, `10.0.0.2/24`.
    pub address: String,
    /// The default gateway of the subnet, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Index into `interfaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
}

/// A route in the result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Route {
    /// Destination prefix.
    pub dst: String,
    /// Next hop; the address's gateway when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
}

/// DNS settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Dns {
    /// Name servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// Local domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Search domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// resolv.conf options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// An address and prefix length from CIDR notation.
pub fn parse_cidr(text: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = text.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((addr, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_json_has_the_spec_shape() {
        let r = CniResult {
            cni_version: "1.0.0".into(),
            interfaces: vec![
                Interface {
                    name: "nvc0123456789ab".into(),
                    mac: "02:00:00:00:00:01".into(),
                    ..Default::default()
                },
                Interface {
                    name: "eth0".into(),
                    mac: "02:00:00:00:00:02".into(),
                    sandbox: "/var/run/netns/c1".into(),
                    ..Default::default()
                },
            ],
            ips: vec![IpConfig {
                address: "10.0.0.2/24".into(),
                gateway: Some("10.0.0.1".parse().unwrap()),
                interface: Some(1),
            }],
            routes: vec![Route {
                dst: "0.0.0.0/0".into(),
                gw: None,
            }],
            dns: Dns::default(),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({
                "cniVersion": "1.0.0",
                "interfaces": [
                    {"name": "nvc0123456789ab", "mac": "02:00:00:00:00:01"},
                    {"name": "eth0", "mac": "02:00:00:00:00:02", "sandbox": "/var/run/netns/c1"}
                ],
                "ips": [{"address": "10.0.0.2/24", "gateway": "10.0.0.1", "interface": 1}],
                "routes": [{"dst": "0.0.0.0/0"}],
                "dns": {}
            })
        );
    }

    #[test]
    fn host_local_answer_parses() {
        // What Debian's host-local 1.1.1 prints for a /24 with a gateway.
        let text = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","gateway":"10.0.0.1"}],
            "routes":[{"dst":"0.0.0.0/0"}],"dns":{}}"#;
        let r: CniResult = serde_json::from_str(text).unwrap();
        assert_eq!(r.ips[0].interface, None);
        assert_eq!(r.routes[0].dst, "0.0.0.0/0");
    }

    #[test]
    fn cidr_is_checked() {
        assert_eq!(
            parse_cidr("10.0.0.2/24"),
            Some(("10.0.0.2".parse().unwrap(), 24))
        );
        assert_eq!(parse_cidr("fd00::2/64").map(|c| c.1), Some(64));
        for bad in ["10.0.0.2", "10.0.0.2/33", "x/24", "fd00::1/129"] {
            assert_eq!(parse_cidr(bad), None, "{bad}");
        }
    }
}
