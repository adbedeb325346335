//! nvo-cni: a CNI plugin (spec 1.0.0 and 1.1.0) that attaches containers to the networks of the
//! local nvod through its API. The runtime runs it with `CNI_*` variables and the network
//! configuration on standard input; it prints a result or an error object (docs/cni.md).
//!
//! ```text
//!  runtime ──env + stdin──▶ run() ──▶ add / del / check / status / gc / version
//!                                       │  link: ip, ip -batch (in the netns via setns)
//!                                       │  nvod: GET network, POST/DELETE port
//!                                       └  ipam: exec CNI_PATH/TYPE (host-local, …)
//! ```

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod error;
pub mod ipam;
pub mod link;
pub mod nvod;
pub mod result;

use std::collections::HashMap;

use serde_json::{json, Value};

use config::{Command, Env, NetConf, SUPPORTED_VERSIONS};
use error::CniError;

/// Runs one plugin call: `vars` is the environment, `stdin` the network configuration.
/// Returns what to print on success (nothing for DEL, CHECK, STATUS, GC).
pub fn run(vars: &HashMap<String, String>, stdin: &[u8]) -> Result<Option<Value>, CniError> {
    let env = Env::parse(vars)?;
    if env.command == Command::Version {
        return Ok(Some(json!({
            "cniVersion": config::version_of(stdin),
            "supportedVersions": SUPPORTED_VERSIONS,
        })));
    }
    let socket_env = vars.get("NVO_SOCKET").map(String::as_str);
    let conf = NetConf::parse(stdin, env.command, socket_env)?;
    match env.command {
        Command::Add => {
            let result = add::add(&env, &conf)?;
            // A result nobody sees would leave the runtime with an attachment it cannot use.
            let value = serde_json::to_value(result).map_err(|e| {
                CniError::new(
                    error::code::IO_FAILURE,
                    format!("cannot write the result: {e}"),
                )
            })?;
            Ok(Some(value))
        }
        Command::Del => del::del(&env, &conf).map(|()| None),
        Command::Check => check::check(&env, &conf).map(|()| None),
        Command::Status => check::status(&env, &conf).map(|()| None),
        Command::Gc => del::gc(&env, &conf).map(|_| None),
        Command::Version => Ok(None),
    }
}
