//! DEL and GC: detaching. DEL is idempotent — a port, interface or namespace that is already
//! gone is success; GC (spec 1.1) removes nvo-cni's attachments of the network that the
//! runtime's list of valid attachments no longer names.

use std::collections::HashSet;

use nvo_api::Client;

use crate::config::{Command, Env, NetConf};
use crate::error::CniError;
use crate::{ipam, link, nvod};

/// Runs DEL: the nvod port, then the veth pair (its container end goes with the host end),
/// then the IPAM plugin's DEL.
pub fn del(env: &Env, conf: &NetConf) -> Result<(), CniError> {
    let client = Client::new(&conf.socket);
    let host = link::host_name(&env.container_id, &env.ifname);
    nvod::delete_port(&client, &host)?;
    link::remove(&host)?;
    ipam::exec(conf, env, Command::Del).map(|_| ())
}

/// Runs GC: every port of the network whose name is one nvo-cni makes but which belongs to no
/// valid attachment is detached and its veth removed; then the IPAM plugin's GC, if it speaks
/// spec 1.1.
pub fn gc(env: &Env, conf: &NetConf) -> Result<Vec<String>, CniError> {
    let client = Client::new(&conf.socket);
    let valid: HashSet<String> = conf
        .valid_attachments
        .iter()
        .map(|a| link::host_name(&a.container_id, &a.ifname))
        .collect();
    let mut removed = Vec::new();
    for port in nvod::ports(&client)? {
        let ours = port.name.len() == 15 && port.name.starts_with(link::HOST_PREFIX);
        if port.vni == conf.vni && ours && !valid.contains(&port.name) {
            nvod::delete_port(&client, &port.name)?;
            link::remove(&port.name)?;
            removed.push(port.name);
        }
    }
    if !conf.ipam_type.is_empty() && ipam::speaks(conf, env, "1.1.0") {
        ipam::exec(conf, env, Command::Gc)?;
    }
    Ok(removed)
}
