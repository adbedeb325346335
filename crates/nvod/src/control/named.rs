//! What the named profile kinds (ACL profiles, QoS profiles) share: their name rule, their
//! "not found" answer, deletion (which a profile still attached somewhere refuses), and where
//! one is attached.
//!
//! ```text
//!  attachment point        path                                   name (port_ids, counters)
//!  a port                  /v1/ports/{port}/{kind}                eth1
//!  a virtual port (VM-VP)  /v1/ports/{port}/vports/{mac}/{kind}   hv0/02:00:00:00:01:01
//!  a VLAN circuit (AC-VP)  /v1/ports/{port}/vlans/{vid}/{kind}    trunk0.10
//! ```
//!
//! A shared port or a trunk takes no profile itself (its frames belong to its virtual ports or
//! circuits); an access port is its one circuit, so it takes one as a port.

use super::vlan::circuit_name;
use super::vport::vport_name;
use super::{Control, Failure, Kind};
use crate::convert;
use crate::state::State;

/// Where on a port a profile is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Within<'a> {
    /// The port itself.
    Port,
    /// A shared port's virtual port of this MAC.
    Vport(&'a str),
    /// A trunk's circuit of this VLAN ID.
    Vlan(u16),
}

/// An attachment point resolved against the stored port ([`Control::attach_target`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// Its name, its key in `port_ids`: `eth1`, `hv0/02:00:00:00:01:01`, `trunk0.10`.
    pub name: String,
    /// Where on the port it is.
    pub at: At,
}

/// Where on a port a resolved attachment point is: [`Within`], checked to exist, with a
/// virtual port's MAC in the form the state keys it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum At {
    Port,
    Vport(String),
    Vlan(u16),
}

/// A kind of named profile, as its messages name it.
pub(super) struct ProfileKind {
    /// What a profile is called in messages: `acl`, `qos profile`.
    pub what: &'static str,
    /// Where the profiles are listed: `/v1/acls`.
    pub list: &'static str,
    /// The CLI command that detaches one: `nvo acl detach`.
    pub detach: &'static str,
}

impl ProfileKind {
    /// A profile name: 1 to 32 letters, digits, `-`, `_` or `.` (it goes into URL paths).
    pub fn check_name(&self, name: &str) -> Result<(), Failure> {
        let ok = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if ok {
            Ok(())
        } else {
            Err(Failure::bad(format!(
                "{} name {name:?} is not allowed; use 1 to 32 letters, digits, '-', '_' or '.'",
                self.what
            )))
        }
    }

    /// The answer for a profile that does not exist.
    pub fn not_found(&self, name: &str) -> Failure {
        Failure::new(
            Kind::NotFound,
            format!("no {} {name:?}; GET {} lists them", self.what, self.list),
        )
    }
}

impl Control {
    /// Attachment point `within` of port `port`, resolved (checked against the stored port,
    /// its name made) once for the whole attach; `what` names the profile kind in errors
    /// (`an acl`).
    pub(super) fn attach_target(
        &self,
        port: &str,
        within: Within<'_>,
        what: &str,
    ) -> Result<Target, Failure> {
        let Some(stored) = self.state.ports.get(port) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no port {port:?}; GET /v1/ports lists them"),
            ));
        };
        let trunk = stored.vlan.as_ref().filter(|v| !v.access);
        match within {
            Within::Port if stored.shared.is_some() || trunk.is_some() => {
                Err(Failure::bad(format!(
                    "port {port} is a shared port or a trunk; attach {what} to its virtual \
                     ports (PORT MAC) or its vlans (PORT VID)"
                )))
            }
            Within::Port => Ok(Target {
                name: port.to_owned(),
                at: At::Port,
            }),
            Within::Vport(mac) => {
                let key = convert::parse_mac(mac)?.to_string();
                if stored
                    .shared
                    .as_ref()
                    .is_some_and(|s| s.vports.contains_key(&key))
                {
                    return Ok(Target {
                        name: vport_name(port, &key),
                        at: At::Vport(key),
                    });
                }
                Err(Failure::new(
                    Kind::NotFound,
                    format!("port {port} has no virtual port for {key}; GET /v1/ports/{port}/vports lists them"),
                ))
            }
            Within::Vlan(vid) => match trunk {
                Some(v) if v.vlans.contains_key(&vid) => Ok(Target {
                    name: circuit_name(port, vid),
                    at: At::Vlan(vid),
                }),
                Some(v) => Err(Failure::new(
                    Kind::NotFound,
                    format!(
                        "trunk {port} does not map vlan {vid}; its vlans: {}",
                        v.vlans
                            .keys()
                            .map(u16::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                None => Err(Failure::bad(format!(
                    "port {port} is not a trunk; attach {what} to the port itself"
                ))),
            },
        }
    }

    /// Deletes profile `name` of `kind`: refused when it does not exist (`exists` false) or is
    /// attached to any of `users`; else `remove` takes it out of a copy of the state, which is
    /// recorded and becomes the state.
    pub(super) fn delete_named(
        &mut self,
        kind: &ProfileKind,
        name: &str,
        exists: bool,
        users: &[String],
        remove: impl FnOnce(&mut State),
    ) -> Result<(), Failure> {
        if !exists {
            return Err(kind.not_found(name));
        }
        if !users.is_empty() {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "{} {name} is attached to {}; detach it first ({})",
                    kind.what,
                    users.join(", "),
                    kind.detach
                ),
            ));
        }
        let mut new = self.state.clone();
        remove(&mut new);
        self.store.record(&self.state, &new)?;
        self.state = new;
        log::info!("{} {name} deleted", kind.what);
        Ok(())
    }
}
