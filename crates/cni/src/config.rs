//! What the runtime hands the plugin (CNI spec 1.0/1.1 "Parameters" and "Network
//! configuration"): the `CNI_*` environment and the network configuration on standard input,
//! checked once here so that the commands work on values that are known to be whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{code, CniError};
use crate::result::CniResult;

/// Configuration versions nvo-cni speaks (results are written in the configuration's version).
pub const SUPPORTED_VERSIONS: &[&str] = &["1.0.0", "1.1.0"];

/// Highest VNI (24 bits).
const MAX_VNI: u64 = nvo_wire::VNI_MAX as u64;

/// `CNI_COMMAND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Attach a container.
    Add,
    /// Detach it (idempotent).
    Del,
    /// Verify an attachment.
    Check,
    /// Report the versions spoken.
    Version,
    /// Whether ADD can be served now (spec 1.1).
    Status,
    /// Remove attachments the runtime no longer knows (spec 1.1).
    Gc,
}

impl Command {
    /// Every command with the name the runtime passes for it: the one list both directions use.
    const NAMES: [(Command, &'static str); 6] = [
        (Command::Add, "ADD"),
        (Command::Del, "DEL"),
        (Command::Check, "CHECK"),
        (Command::Version, "VERSION"),
        (Command::Status, "STATUS"),
        (Command::Gc, "GC"),
    ];

    fn parse(s: &str) -> Option<Command> {
        Self::NAMES.iter().find(|(_, n)| *n == s).map(|(c, _)| *c)
    }

    /// The name the runtime passes.
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("", |(_, n)| n)
    }
}

/// The `CNI_*` variables, checked for the command at hand.
#[derive(Debug, Clone)]
pub struct Env {
    /// `CNI_COMMAND`.
    pub command: Command,
    /// `CNI_CONTAINERID` (ADD, DEL, CHECK).
    pub container_id: String,
    /// `CNI_NETNS` (ADD, CHECK; optional for DEL).
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME` (ADD, DEL, CHECK).
    pub ifname: String,
    /// `CNI_PATH`: where delegated plugins are looked for.
    pub path: Vec<PathBuf>,
}

impl Env {
    /// Reads and checks the variables from `vars` (the process environment in `main`).
    pub fn parse(vars: &HashMap<String, String>) -> Result<Env, CniError> {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let invalid = |var: &str, why: String| {
            CniError::new(code::INVALID_ENV, format!("{var}: {why}"))
                .details("set the CNI_* variables as CNI spec 1.0 \"Parameters\" says")
        };
        let raw = get("CNI_COMMAND").ok_or_else(|| invalid("CNI_COMMAND", "missing".into()))?;
        let command = Command::parse(raw).ok_or_else(|| {
            invalid(
                "CNI_COMMAND",
                format!("unknown command {raw:?} (ADD, DEL, CHECK, VERSION, STATUS, GC)"),
            )
        })?;
        let per_attachment = matches!(command, Command::Add | Command::Del | Command::Check);
        let mut env = Env {
            command,
            container_id: String::new(),
            netns: get("CNI_NETNS").map(PathBuf::from),
            ifname: String::new(),
            path: get("CNI_PATH")
                .map(|p| {
                    p.split(':')
                        .filter(|s| !s.is_empty())
                        .map(PathBuf::from)
                        .collect()
                })
                .unwrap_or_default(),
        };
        if per_attachment {
            let id = get("CNI_CONTAINERID")
                .ok_or_else(|| invalid("CNI_CONTAINERID", "missing".into()))?;
            if !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                return Err(invalid(
                    "CNI_CONTAINERID",
                    format!("{id:?} has characters other than letters, digits, _ . -"),
                ));
            }
            env.container_id = id.to_owned();
            let ifname =
                get("CNI_IFNAME").ok_or_else(|| invalid("CNI_IFNAME", "missing".into()))?;
            check_ifname(ifname).map_err(|why| invalid("CNI_IFNAME", why))?;
            env.ifname = ifname.to_owned();
            if command != Command::Del && env.netns.is_none() {
                return Err(invalid("CNI_NETNS", "missing".into()));
            }
        }
        if command != Command::Version && env.path.is_empty() {
            return Err(invalid("CNI_PATH", "missing".into()));
        }
        Ok(env)
    }
}

/// An interface name the kernel takes: 1 to 15 bytes, not `.`/`..`, no `/`, `:` or space.
pub fn check_ifname(name: &str) -> Result<(), String> {
    if name.len() > 15 {
        return Err(format!("{name:?} is longer than 15 bytes"));
    }
    if name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        return Err(format!("{name:?} is not a valid interface name"));
    }
    Ok(())
}

/// One entry of `cni.dev/valid-attachments` (GC, spec 1.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The container.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// Its interface.
    pub ifname: String,
}

/// The network configuration, as read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConf {
    cni_version: Option<String>,
    name: Option<String>,
    vni: Option<Value>,
    ipam: Option<Value>,
    socket: Option<Value>,
    prev_result: Option<Value>,
    #[serde(rename = "cni.dev/valid-attachments")]
    valid_attachments: Option<Vec<Attachment>>,
}

/// The network configuration, checked.
#[derive(Debug, Clone)]
pub struct NetConf {
    /// `cniVersion`, one of [`SUPPORTED_VERSIONS`].
    pub cni_version: String,
    /// `name`.
    pub name: String,
    /// `vni`: the nvod network the containers join.
    pub vni: u32,
    /// `ipam.type`: the IPAM plugin delegated to.
    pub ipam_type: String,
    /// nvod's API socket: `socket`, else `NVO_SOCKET`, else nvod's default.
    pub socket: PathBuf,
    /// `prevResult` (CHECK, chained calls).
    pub prev_result: Option<CniResult>,
    /// `cni.dev/valid-attachments` (GC).
    pub valid_attachments: Vec<Attachment>,
    /// The configuration exactly as received, handed on to the IPAM plugin.
    pub raw: Vec<u8>,
}

/// The `cniVersion` of `bytes` if it is JSON with one (for error answers), else the newest.
pub fn version_of(bytes: &[u8]) -> String {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| v.get("cniVersion")?.as_str().map(str::to_owned))
        .filter(|v| SUPPORTED_VERSIONS.contains(&v.as_str()))
        .unwrap_or_else(|| SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.len() - 1].to_owned())
}

impl NetConf {
    /// Parses the configuration for `command`; `socket_env` is `NVO_SOCKET`.
    pub fn parse(
        bytes: &[u8],
        command: Command,
        socket_env: Option<&str>,
    ) -> Result<NetConf, CniError> {
        let invalid = |msg: String| {
            CniError::new(code::INVALID_CONFIG, msg)
                .details("see docs/cni.md for nvo-cni's network configuration")
        };
        let raw: RawConf = serde_json::from_slice(bytes).map_err(|e| {
            CniError::new(
                code::DECODE,
                format!("network configuration is not a JSON object: {e}"),
            )
        })?;
        let cni_version = raw
            .cni_version
            .ok_or_else(|| invalid("cniVersion missing".into()))?;
        if !SUPPORTED_VERSIONS.contains(&cni_version.as_str()) {
            return Err(CniError::new(
                code::INCOMPATIBLE_VERSION,
                format!("cniVersion {cni_version:?} is not supported"),
            )
            .details(format!("nvo-cni speaks {}", SUPPORTED_VERSIONS.join(", "))));
        }
        let name = raw.name.filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| invalid("name missing".into()))?;
        let vni = match raw.vni {
            None => return Err(invalid("vni missing: the VNI of an nvod network".into())),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_VNI).contains(&n) => n as u32,
                _ => {
                    return Err(invalid(format!(
                        "vni {v} is not a number from 1 to {MAX_VNI}"
                    )))
                }
            },
        };
        let needs_ipam = matches!(command, Command::Add | Command::Del | Command::Check);
        let ipam_type = match raw.ipam.as_ref().map(|i| i.get("type")) {
            Some(Some(Value::String(t))) if !t.is_empty() && !t.contains('/') => t.clone(),
            Some(Some(t)) => return Err(invalid(format!("ipam.type {t} is not a plugin name"))),
            Some(None) => return Err(invalid("ipam.type missing".into())),
            None if needs_ipam => return Err(invalid(
                "ipam missing: nvo-cni delegates addresses to an IPAM plugin such as host-local"
                    .into(),
            )),
            None => String::new(),
        };
        let socket = match raw.socket {
            Some(Value::String(s)) if !s.is_empty() => PathBuf::from(s),
            Some(other) => return Err(invalid(format!("socket {other} is not a path"))),
            None => socket_env
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(nvo_api::DEFAULT_SOCKET).to_owned()),
        };
        let prev_result = match raw.prev_result {
            Some(v) => Some(
                serde_json::from_value::<CniResult>(v)
                    .map_err(|e| invalid(format!("prevResult is not a CNI result: {e}")))?,
            ),
            None => None,
        };
        Ok(NetConf {
            cni_version,
            name,
            vni,
            ipam_type,
            socket,
            prev_result,
            valid_attachments: raw.valid_attachments.unwrap_or_default(),
            raw: bytes.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_name_that_parses_back_to_it() {
        for (c, name) in Command::NAMES {
            assert_eq!(c.as_str(), name);
            assert_eq!(Command::parse(name), Some(c));
        }
        assert_eq!(Command::parse("add"), None);
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const ADD: &[(&str, &str)] = &[
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "abc-1"),
        ("CNI_NETNS", "/var/run/netns/c1"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/usr/lib/cni:/opt/cni/bin"),
    ];

    #[test]
    fn env_for_add_is_read_whole() {
        let e = Env::parse(&env(ADD)).unwrap();
        assert_eq!(e.command, Command::Add);
        assert_eq!(e.container_id, "abc-1");
        assert_eq!(e.ifname, "eth0");
        assert_eq!(
            e.path,
            vec![PathBuf::from("/usr/lib/cni"), PathBuf::from("/opt/cni/bin")]
        );
    }

    #[test]
    fn env_errors_name_the_variable_with_code_4() {
        for (drop, var) in [
            ("CNI_COMMAND", "CNI_COMMAND"),
            ("CNI_CONTAINERID", "CNI_CONTAINERID"),
            ("CNI_NETNS", "CNI_NETNS"),
            ("CNI_IFNAME", "CNI_IFNAME"),
            ("CNI_PATH", "CNI_PATH"),
        ] {
            let mut vars = env(ADD);
            vars.remove(drop);
            let e = Env::parse(&vars).unwrap_err();
            assert_eq!(e.code, code::INVALID_ENV, "{drop}");
            assert!(e.msg.starts_with(var), "{}", e.msg);
        }
        let mut vars = env(ADD);
        vars.insert("CNI_IFNAME".into(), "a-name-far-too-long".into());
        assert_eq!(Env::parse(&vars).unwrap_err().code, code::INVALID_ENV);
        vars.insert("CNI_IFNAME".into(), "eth0".into());
        vars.insert("CNI_CONTAINERID".into(), "a/b".into());
        assert_eq!(Env::parse(&vars).unwrap_err().code, code::INVALID_ENV);
        vars.insert("CNI_COMMAND".into(), "FROB".into());
        assert_eq!(Env::parse(&vars).unwrap_err().code, code::INVALID_ENV);
    }

    #[test]
    fn del_needs_no_netns_and_version_no_path() {
        let vars = env(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", "x"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/usr/lib/cni"),
        ]);
        assert!(Env::parse(&vars).unwrap().netns.is_none());
        assert!(Env::parse(&env(&[("CNI_COMMAND", "VERSION")])).is_ok());
    }

    const GOOD: &str = r#"{"cniVersion": "1.0.0", "name": "red", "type": "nvo-cni", "vni": 100,
        "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"}}"#;

    #[test]
    fn good_config_parses_with_socket_fallbacks() {
        let c = NetConf::parse(GOOD.as_bytes(), Command::Add, None).unwrap();
        assert_eq!(
            (c.vni, c.ipam_type.as_str(), c.name.as_str()),
            (100, "host-local", "red")
        );
        assert_eq!(c.socket, PathBuf::from("/run/nvo/nvod.sock"));
        let c = NetConf::parse(GOOD.as_bytes(), Command::Add, Some("/tmp/x.sock")).unwrap();
        assert_eq!(c.socket, PathBuf::from("/tmp/x.sock"));
        let own = GOOD.replace("\"vni\": 100", "\"vni\": 100, \"socket\": \"/s\"");
        let c = NetConf::parse(own.as_bytes(), Command::Add, Some("/tmp/x.sock")).unwrap();
        assert_eq!(c.socket, PathBuf::from("/s"));
    }

    #[test]
    fn bad_configs_get_the_spec_codes() {
        let cases: &[(&str, u32)] = &[
            ("not json", code::DECODE),
            (
                r#"{"name": "x", "vni": 1, "ipam": {"type": "h"}}"#,
                code::INVALID_CONFIG,
            ),
            (&GOOD.replace("1.0.0", "0.3.1"), code::INCOMPATIBLE_VERSION),
            (&GOOD.replace("\"vni\": 100,", ""), code::INVALID_CONFIG),
            (
                &GOOD.replace("\"vni\": 100", "\"vni\": 0"),
                code::INVALID_CONFIG,
            ),
            (
                &GOOD.replace("\"vni\": 100", "\"vni\": 16777216"),
                code::INVALID_CONFIG,
            ),
            (
                &GOOD.replace("\"vni\": 100", "\"vni\": \"100\""),
                code::INVALID_CONFIG,
            ),
            (
                &GOOD.replace("\"host-local\"", "\"../evil\""),
                code::INVALID_CONFIG,
            ),
            (
                &GOOD.replace("\"name\": \"red\",", ""),
                code::INVALID_CONFIG,
            ),
            (
                &GOOD.replace("\"vni\": 100", "\"vni\": 100, \"socket\": 5"),
                code::INVALID_CONFIG,
            ),
        ];
        for (text, want) in cases {
            let e = NetConf::parse(text.as_bytes(), Command::Add, None).unwrap_err();
            assert_eq!(e.code, *want, "{text}: {e}");
        }
        let no_ipam = r#"{"cniVersion": "1.1.0", "name": "n", "vni": 5}"#;
        assert_eq!(
            NetConf::parse(no_ipam.as_bytes(), Command::Add, None)
                .unwrap_err()
                .code,
            code::INVALID_CONFIG
        );
        assert!(NetConf::parse(no_ipam.as_bytes(), Command::Status, None).is_ok());
    }

    #[test]
    fn valid_attachments_and_prev_result_are_read() {
        let text = r#"{"cniVersion": "1.1.0", "name": "n", "vni": 5,
            "cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}],
            "prevResult": {"cniVersion": "1.1.0", "ips": [{"address": "10.0.0.2/24", "interface": 1}]}}"#;
        let c = NetConf::parse(text.as_bytes(), Command::Gc, None).unwrap();
        assert_eq!(c.valid_attachments[0].container_id, "c1");
        assert_eq!(c.prev_result.unwrap().ips[0].address, "10.0.0.2/24");
        assert_eq!(version_of(text.as_bytes()), "1.1.0");
        assert_eq!(version_of(b"junk"), "1.1.0");
    }
}
