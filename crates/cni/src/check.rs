//! CHECK and STATUS. CHECK compares an attachment with the result ADD gave (`prevResult`) and
//! with nvod: the host interface and the container interface exist, are up and have the
//! network's MTU, nvod has the port in the network, and every address is on the container
//! interface. STATUS (spec 1.1) says whether ADD could work now.

use nvo_api::Client;

use crate::config::{Command, Env, NetConf};
use crate::error::{code, CniError};
use crate::{ipam, link, nvod};

fn broken(msg: String) -> CniError {
    CniError::new(code::CHECK_FAILED, msg).details("DEL and ADD the container again to repair it")
}

/// Runs CHECK.
pub fn check(env: &Env, conf: &NetConf) -> Result<(), CniError> {
    let prev = conf.prev_result.as_ref().ok_or_else(|| {
        CniError::new(
            code::INVALID_CONFIG,
            "CHECK needs prevResult (the result of ADD)",
        )
    })?;
    let netns = env
        .netns
        .as_deref()
        .ok_or_else(|| CniError::new(code::INVALID_ENV, "CNI_NETNS: missing"))?;
    let client = Client::new(&conf.socket);
    let network = nvod::network(&client, conf.vni)?;
    let mtu = u32::from(network.mtu);
    let host = link::host_name(&env.container_id, &env.ifname);
    let outer = link::state(&host, None)?
        .ok_or_else(|| broken(format!("host interface {host} is gone")))?;
    if !outer.up || outer.mtu != mtu {
        return Err(broken(format!(
            "host interface {host}: up {} mtu {}, want up and mtu {mtu} (network {})",
            outer.up, outer.mtu, conf.vni
        )));
    }
    let ports = nvod::ports(&client)?;
    if !ports.iter().any(|p| p.name == host && p.vni == conf.vni) {
        return Err(broken(format!(
            "nvod at {} has no port {host} in network {}",
            conf.socket.display(),
            conf.vni
        )));
    }
    if !netns.exists() {
        return Err(broken(format!(
            "network namespace {} is gone",
            netns.display()
        )));
    }
    let ifname = env.ifname.as_str();
    let inner = link::state(ifname, Some(netns))?
        .ok_or_else(|| broken(format!("{ifname} is gone from {}", netns.display())))?;
    if !inner.up || inner.mtu != mtu {
        return Err(broken(format!(
            "{ifname} in the container: up {} mtu {}, want up and mtu {mtu}",
            inner.up, inner.mtu
        )));
    }
    let index = prev
        .interfaces
        .iter()
        .position(|i| i.name == ifname && !i.sandbox.is_empty());
    if let Some(i) = index.map(|i| &prev.interfaces[i]) {
        if !i.mac.is_empty() && !i.mac.eq_ignore_ascii_case(&inner.mac) {
            return Err(broken(format!(
                "{ifname} has MAC {}, the attachment had {}",
                inner.mac, i.mac
            )));
        }
    }
    for ip in prev
        .ips
        .iter()
        .filter(|ip| index.is_none() || ip.interface == index)
    {
        if !inner.addresses.contains(&ip.address) {
            return Err(broken(format!("{ifname} lacks address {}", ip.address)));
        }
    }
    ipam::exec(conf, env, Command::Check).map(|_| ())
}

/// Runs STATUS: nvod answers and has the network; then the IPAM plugin's STATUS if it speaks
/// spec 1.1.
pub fn status(env: &Env, conf: &NetConf) -> Result<(), CniError> {
    let client = Client::new(&conf.socket);
    nvod::network(&client, conf.vni).map_err(|e| {
        CniError::new(
            code::NOT_AVAILABLE,
            format!("cannot attach containers: {}", e.msg),
        )
        .details(e.details)
    })?;
    if !conf.ipam_type.is_empty() && ipam::speaks(conf, env, "1.1.0") {
        ipam::exec(conf, env, Command::Status)?;
    }
    Ok(())
}
