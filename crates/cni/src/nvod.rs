//! The calls nvo-cni makes to the local nvod (its control API on a unix socket), with nvod's
//! answers turned into CNI codes: unreachable is "try again later" (11), a VNI nvod does not
//! have is an invalid network configuration (7), anything else refused is nvo-cni's 100.

use nvo_api::{Client, ClientError};
use nvo_api::{Network, Port, PortKind, PortSpec};

use crate::error::{code, CniError};

/// Turns a failed call into a CNI error; `what` says what was asked.
fn failure(client: &Client, what: &str, e: ClientError) -> CniError {
    match e {
        ClientError::Connect { .. } | ClientError::Io { .. } => {
            CniError::new(code::TRY_AGAIN, format!("{what}: {e}")).details(format!(
                "is nvod running with its API on {}?",
                client.socket().display()
            ))
        }
        other => CniError::new(code::NVOD, format!("{what}: {other}")),
    }
}

/// The network with `vni`, which must exist on nvod.
pub fn network(client: &Client, vni: u32) -> Result<Network, CniError> {
    match client.get::<Network>(&format!("/v1/networks/{vni}")) {
        Ok(n) => Ok(n),
        Err(ClientError::Api { status: 404, .. }) => Err(CniError::new(
            code::INVALID_CONFIG,
            format!("vni {vni}: nvod has no such network"),
        )
        .details(format!(
            "create it first (nvo --socket {} network add {vni}) or fix \"vni\"",
            client.socket().display()
        ))),
        Err(e) => Err(failure(client, &format!("reading network {vni}"), e)),
    }
}

/// Attaches interface `name` to network `vni` as a veth port.
pub fn add_port(client: &Client, name: &str, vni: u32) -> Result<(), CniError> {
    let spec = PortSpec {
        name: name.to_owned(),
        vni,
        kind: PortKind::Veth,
        offloads: None,
        vlan: None,
        shared: None,
    };
    match client.post::<_, Port>("/v1/ports", &spec) {
        Ok(_) => Ok(()),
        Err(ClientError::Api {
            status: 409,
            message,
        }) => Err(CniError::new(
            code::EXISTS,
            format!("nvod already has port {name}: {message}"),
        )
        .details("DEL the attachment first")),
        Err(e) => Err(failure(
            client,
            &format!("attaching port {name} to network {vni}"),
            e,
        )),
    }
}

/// Detaches port `name`; a port nvod does not have is already detached.
pub fn delete_port(client: &Client, name: &str) -> Result<(), CniError> {
    match client.delete(&format!("/v1/ports/{name}")) {
        Ok(()) | Err(ClientError::Api { status: 404, .. }) => Ok(()),
        Err(e) => Err(failure(client, &format!("detaching port {name}"), e)),
    }
}

/// nvod's ports.
pub fn ports(client: &Client) -> Result<Vec<Port>, CniError> {
    client
        .get::<Vec<Port>>("/v1/ports")
        .map_err(|e| failure(client, "listing ports", e))
}
