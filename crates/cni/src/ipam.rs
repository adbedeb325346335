//! Delegation to an IPAM plugin (CNI spec 1.0 "Delegated plugins"): found on `CNI_PATH`, run
//! with the same environment but its own `CNI_COMMAND`, given the whole network configuration
//! on standard input. Its error answers are passed on with their codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};

use serde_json::Value;

use crate::config::{Command, Env, NetConf};
use crate::error::{code, CniError};

/// Runs the IPAM plugin of `conf` for `command`; returns what it printed (ADD's result), or
/// `None` for an empty answer.
///
/// A 1.1.0 configuration is handed to a plugin that answers "incompatible version" (code 1) a
/// second time as 1.0.0: the IPAM part of both versions is the same, and the plugins in Debian
/// 12 (containernetworking-plugins 1.1.1) speak only up to 1.0.0.
pub fn exec(conf: &NetConf, env: &Env, command: Command) -> Result<Option<Value>, CniError> {
    match exec_with(conf, env, command, &conf.raw) {
        Err(e) if e.code == code::INCOMPATIBLE_VERSION && conf.cni_version == "1.1.0" => {
            let mut older: Value = serde_json::from_slice(&conf.raw).map_err(|_| e.clone())?;
            older["cniVersion"] = Value::from("1.0.0");
            let bytes = serde_json::to_vec(&older).map_err(|_| e.clone())?;
            exec_with(conf, env, command, &bytes)
        }
        other => other,
    }
}

fn exec_with(
    conf: &NetConf,
    env: &Env,
    command: Command,
    stdin_bytes: &[u8],
) -> Result<Option<Value>, CniError> {
    let plugin = find(conf, env)?;
    let context = |msg: String| format!("ipam plugin {}: {msg}", conf.ipam_type);
    let mut child = Process::new(&plugin)
        .env("CNI_COMMAND", command.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CniError::new(
                code::IPAM,
                context(format!("cannot run {}: {e}", plugin.display())),
            )
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A plugin that exits without reading is judged by its answer below.
        let _ = stdin.write_all(stdin_bytes);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CniError::new(code::IPAM, context(format!("waiting for it: {e}"))))?;
    let answer: Option<Value> = serde_json::from_slice(&out.stdout).ok();
    if out.status.success() {
        return Ok(answer);
    }
    if let Some(Value::Object(e)) = &answer {
        if let Some(c) = e.get("code").and_then(Value::as_u64) {
            let msg = e.get("msg").and_then(Value::as_str).unwrap_or("failed");
            let details = e.get("details").and_then(Value::as_str).unwrap_or("");
            return Err(CniError::new(
                u32::try_from(c).unwrap_or(code::IPAM),
                context(msg.to_owned()),
            )
            .details(details));
        }
    }
    Err(CniError::new(
        code::IPAM,
        context(format!(
            "{} failed ({}): {}",
            command.as_str(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    ))
}

/// Whether the IPAM plugin says it speaks spec version `version` (asked with VERSION).
pub fn speaks(conf: &NetConf, env: &Env, version: &str) -> bool {
    exec(conf, env, Command::Version)
        .ok()
        .flatten()
        .and_then(|v| {
            let list = v.get("supportedVersions")?.as_array()?.clone();
            Some(list.iter().any(|s| s.as_str() == Some(version)))
        })
        .unwrap_or(false)
}

fn find(conf: &NetConf, env: &Env) -> Result<PathBuf, CniError> {
    env.path
        .iter()
        .map(|dir| dir.join(&conf.ipam_type))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            CniError::new(
                code::INVALID_CONFIG,
                format!("ipam plugin {:?} is not in CNI_PATH", conf.ipam_type),
            )
            .details(format!(
                "looked in {}; install it (Debian: containernetworking-plugins, in /usr/lib/cni)",
                env.path
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}
