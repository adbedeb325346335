//! What a capture taps (`GET /v1/capture`): the interfaces behind a port, a network or the
//! underlay, resolved from the desired state and the profiles; nvo-capture does the rest.

use std::net::IpAddr;

use nvo_capture::inner::Decapsulator;
use nvo_capture::Target;
use nvo_encap::profile::Transport;

use nvo_datapath::Command;
use nvo_pipeline::PortId;

use super::{Control, Failure, Kind};
use crate::state::PortKindState;

/// VXLAN's IANA port (RFC 7348), the built-in profiles' transport.
const VXLAN_PORT: u16 = 4789;

/// What was asked to be captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A port by interface name.
    Port(String),
    /// A network by VNI.
    Network(u32),
    /// The underlay.
    Underlay,
}

impl Control {
    /// The ports a capture of `scope` must see both directions of (to pass to
    /// [`Control::tap`]): a port capture's. A network capture keeps only the frames from its
    /// ports' tenants, which every tap sees.
    pub fn capture_ports(&self, scope: &Scope) -> Vec<PortId> {
        match scope {
            Scope::Port(name) => self.port_ids.get(name).copied().into_iter().collect(),
            Scope::Network(_) | Scope::Underlay => Vec::new(),
        }
    }

    /// Tells the datapath that a capture starts (`on`) or ends on `ports`: the kernel datapath
    /// then delivers to them through their host ends, where the capture's taps see the frames
    /// (`Command::TapPort`).
    pub async fn tap(&self, ports: &[PortId], on: bool) -> Result<(), Failure> {
        for &id in ports {
            self.datapath.call(Command::TapPort(id, on)).await?;
        }
        Ok(())
    }

    /// The interfaces and decapsulation a capture of `scope` needs.
    pub fn capture_target(&self, scope: &Scope) -> Result<Target, Failure> {
        match scope {
            Scope::Port(name) => {
                if !self.state.ports.contains_key(name) {
                    return Err(Failure::new(
                        Kind::NotFound,
                        format!("no port {name:?}; `nvo port list` shows the ports"),
                    ));
                }
                Ok(Target::Port(name.clone()))
            }
            Scope::Underlay => Ok(Target::Underlay {
                interfaces: self.underlay_interfaces()?,
                transports: self
                    .profiles
                    .profiles()
                    .map(|(_, p)| self.wire(p.transport))
                    .collect(),
            }),
            Scope::Network(vni) => {
                let Some(net) = self.state.networks.get(vni) else {
                    return Err(Failure::new(
                        Kind::NotFound,
                        format!("no network {vni}; `nvo network list` shows the networks"),
                    ));
                };
                let profile = self
                    .profiles
                    .id(&net.encap)
                    .and_then(|id| self.profiles.profile(id))
                    .ok_or_else(|| {
                        Failure::new(
                            Kind::Internal,
                            format!("network {vni}'s profile {:?} is not loaded", net.encap),
                        )
                    })?;
                let params: Vec<(String, u64)> =
                    net.params.iter().map(|(k, &v)| (k.clone(), v)).collect();
                let decap = Decapsulator::new(profile, *vni, &params, self.wire(profile.transport))
                    .map_err(|e| Failure::bad(e.to_string()))?;
                let ports = self
                    .state
                    .ports
                    .iter()
                    .filter(|(_, p)| p.vni == *vni)
                    .map(|(name, p)| (name.clone(), p.kind == PortKindState::Tap))
                    .collect();
                Ok(Target::Network {
                    vni: *vni,
                    ports,
                    underlay: self.underlay_interfaces()?,
                    decap: Box::new(decap),
                })
            }
        }
    }

    /// How a profile's packets travel here: VXLAN's UDP port is nvod's `vxlan_port` (the
    /// datapaths bind that one for the profiles on 4789).
    fn wire(&self, transport: Transport) -> Transport {
        match transport {
            Transport::Udp(VXLAN_PORT) => Transport::Udp(self.config.vxlan_port),
            other => other,
        }
    }

    /// The interfaces holding the locator (the config's; an overlay node's own locators are
    /// the same addresses or on the same links).
    fn underlay_interfaces(&self) -> Result<Vec<String>, Failure> {
        interfaces_holding(self.config.locator)
    }
}

/// Every interface of nvod's namespace with `addr` among its addresses.
fn interfaces_holding(addr: IpAddr) -> Result<Vec<String>, Failure> {
    // /proc/self/net is the calling thread's namespace's view.
    let list = std::fs::read_to_string("/proc/self/net/dev").map_err(|e| {
        Failure::new(
            Kind::Internal,
            format!("cannot list interfaces (/proc/self/net/dev): {e}"),
        )
    })?;
    let found: Vec<String> = list
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next())
        .map(|name| name.trim().to_owned())
        .filter(|name| nvo_io::iface::addresses(name).is_ok_and(|a| a.contains(&addr)))
        .collect();
    if found.is_empty() {
        return Err(Failure::new(
            Kind::Conflict,
            format!("no interface holds the locator {addr}: nothing to capture on the underlay"),
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locator_s_interface_is_found_by_address() {
        assert_eq!(
            interfaces_holding(IpAddr::from([127, 0, 0, 1])).unwrap(),
            vec!["lo".to_owned()]
        );
        let e = interfaces_holding(IpAddr::from([192, 0, 2, 254])).unwrap_err();
        assert_eq!(e.kind, Kind::Conflict);
        assert!(e
            .message
            .contains("no interface holds the locator 192.0.2.254"));
    }
}
