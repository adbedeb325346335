//! `/v1/profiles`: the encapsulation profiles, built-in and user-defined.
//!
//! A user-defined profile is checked here (by converting its spec and adding it to the control
//! thread's own catalog), persisted in state.json, then added to the datapath's engine. Both
//! engines see the same additions in the same order, so their names agree; the datapath
//! resolves names itself, so ids never cross between them. A profile a network uses cannot be
//! removed.

use nvo_api as api;
use nvo_encap::spec::ProfileSpec;

use nvo_encap::engine::Target;

use super::{Control, Failure, Kind};
use crate::convert;
use crate::state::KeyTarget;
use nvo_datapath::{Command, DatapathError, Reply};

impl Control {
    /// Adds a profile to the catalog and the datapath (at start, and for `POST`); a refusal
    /// of either leaves both as they were.
    pub(super) async fn install_profile(&mut self, spec: &ProfileSpec) -> Result<(), Failure> {
        let profile = spec.to_profile().map_err(|e| Failure::bad(e.to_string()))?;
        self.profiles
            .add_profile(profile.clone())
            .map_err(|e| Failure::from(DatapathError::Engine(e)))?;
        if let Err(e) = self
            .datapath
            .call(Command::AddProfile(Box::new(profile)))
            .await
        {
            let _ = self.profiles.remove_profile(&spec.name);
            return Err(e.into());
        }
        Ok(())
    }

    /// `GET /v1/profiles`.
    pub fn profiles(&self) -> Vec<api::ProfileInfo> {
        self.profiles
            .profiles()
            .map(|(_, p)| api::ProfileInfo {
                builtin: nvo_encap::builtin::is_builtin(&p.name),
                spec: ProfileSpec::from(p),
            })
            .collect()
    }

    /// `GET /v1/profiles/{name}`.
    pub fn profile(&self, name: &str) -> Result<api::ProfileInfo, Failure> {
        self.profiles()
            .into_iter()
            .find(|p| p.spec.name == name)
            .ok_or_else(|| no_profile(name))
    }

    /// `POST /v1/profiles`.
    pub async fn add_profile(&mut self, spec: ProfileSpec) -> Result<api::ProfileInfo, Failure> {
        self.add_profile_owned(spec, false).await
    }

    /// Adds a profile; `cluster`: made by cluster mode (marked so in the state).
    pub(super) async fn add_profile_owned(
        &mut self,
        spec: ProfileSpec,
        cluster: bool,
    ) -> Result<api::ProfileInfo, Failure> {
        if self.profiles.id(&spec.name).is_some() {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "a profile named {:?} exists; delete it first (DELETE /v1/profiles/{}) or \
                     choose another name",
                    spec.name, spec.name
                ),
            ));
        }
        // Checked before anything is written: a spec that does not convert writes nothing.
        spec.to_profile().map_err(|e| Failure::bad(e.to_string()))?;
        let mut new = self.state.clone();
        new.profiles.insert(spec.name.clone(), spec.clone());
        if cluster {
            new.cluster_profiles.insert(spec.name.clone());
        }
        self.store.record(&self.state, &new)?;
        if let Err(e) = self.install_profile(&spec).await {
            self.undo_record(&e.message);
            return Err(e);
        }
        self.state = new;
        log::info!(
            "profile {} added{}",
            spec.name,
            if cluster { " from the cluster" } else { "" }
        );
        self.profile(&spec.name)
    }

    /// `DELETE /v1/profiles/{name}`.
    pub async fn delete_profile(&mut self, name: &str) -> Result<(), Failure> {
        if !self.state.profiles.contains_key(name) {
            return Err(if self.profiles.id(name).is_some() {
                Failure::bad(format!(
                    "profile {name:?} is built in or comes from nvod's config file; it cannot be \
                     deleted through the API"
                ))
            } else {
                no_profile(name)
            });
        }
        if let Some((vni, _)) = self.state.networks.iter().find(|(_, n)| n.encap == name) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "profile {name:?} is used by network {vni}; delete the network first \
                     (DELETE /v1/networks/{vni})"
                ),
            ));
        }
        let mut new = self.state.clone();
        new.profiles.remove(name);
        new.cluster_profiles.remove(name);
        match self
            .commit(new, Command::RemoveProfile(name.to_owned()))
            .await?
        {
            Reply::Done => {}
            other => return Err(super::unexpected(other)),
        }
        let _ = self.profiles.remove_profile(name);
        log::info!("profile {name} deleted");
        Ok(())
    }
}

impl Control {
    /// `GET /v1/profiles/{name}/keys`.
    pub fn keys(&self, profile: &str) -> Result<Vec<api::KeyBinding>, Failure> {
        self.profiles
            .id(profile)
            .ok_or_else(|| no_profile(profile))?;
        Ok(self
            .state
            .keys
            .get(profile)
            .into_iter()
            .flatten()
            .map(|(hex, target)| binding_of(hex, *target))
            .collect())
    }

    /// `POST /v1/profiles/{name}/keys`.
    pub async fn bind_key(
        &mut self,
        profile: &str,
        binding: api::KeyBinding,
    ) -> Result<api::KeyBinding, Failure> {
        self.profiles
            .id(profile)
            .ok_or_else(|| no_profile(profile))?;
        let target = match (binding.local, binding.forward) {
            (Some(vni), None) => {
                let vni = convert::check_vni(vni)?;
                self.network_exists(vni)?;
                KeyTarget::Local(vni.0)
            }
            (None, Some(remote)) => KeyTarget::Forward(super::remote(remote, &self.config)?),
            _ => {
                return Err(Failure::bad(
                    "give exactly one of local (a vni to deliver to) and forward (a remote to \
                     relay to)",
                ))
            }
        };
        let key = unhex(&binding.key)?;
        let hex = hex(&key);
        let command = bind_command(profile, &hex, target)?;
        let mut new = self.state.clone();
        new.keys
            .entry(profile.to_owned())
            .or_default()
            .insert(hex.clone(), target);
        self.commit(new, command).await?;
        log::info!("profile {profile}: key {hex} bound to {target:?}");
        Ok(binding_of(&hex, target))
    }

    /// `DELETE /v1/profiles/{name}/keys/{key}`.
    pub async fn unbind_key(&mut self, profile: &str, key: &str) -> Result<(), Failure> {
        let hex = hex(&unhex(key)?);
        if !self
            .state
            .keys
            .get(profile)
            .is_some_and(|k| k.contains_key(&hex))
        {
            return Err(Failure::new(
                Kind::NotFound,
                format!("profile {profile:?} has no key {hex} bound"),
            ));
        }
        let mut new = self.state.clone();
        if let Some(keys) = new.keys.get_mut(profile) {
            keys.remove(&hex);
            if keys.is_empty() {
                new.keys.remove(profile);
            }
        }
        let command = Command::UnbindKey {
            profile: profile.to_owned(),
            key: unhex(&hex)?,
        };
        self.commit(new, command).await?;
        log::info!("profile {profile}: key {hex} unbound");
        Ok(())
    }
}

/// The datapath command binding a stored key.
pub(super) fn bind_command(
    profile: &str,
    hex: &str,
    target: KeyTarget,
) -> Result<Command, Failure> {
    Ok(Command::BindKey {
        profile: profile.to_owned(),
        key: unhex(hex)?,
        target: match target {
            KeyTarget::Local(vni) => Target::Local { vni },
            KeyTarget::Forward(remote) => Target::Forward { remote },
        },
    })
}

fn binding_of(hex: &str, target: KeyTarget) -> api::KeyBinding {
    let (local, forward) = match target {
        KeyTarget::Local(vni) => (Some(vni), None),
        KeyTarget::Forward(remote) => (None, Some(remote)),
    };
    api::KeyBinding {
        key: hex.to_owned(),
        local,
        forward,
    }
}

/// Key bytes from hex (spaces and colons allowed), 1 to 8 bytes.
fn unhex(text: &str) -> Result<Vec<u8>, Failure> {
    let digits: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    let bad = || {
        Failure::bad(format!(
            "key {text:?} is not 1 to 8 bytes of hex (e.g. \"00000aff\": SPI 10, SI 255)"
        ))
    };
    if digits.is_empty() || !digits.len().is_multiple_of(2) || digits.len() > 16 {
        return Err(bad());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

fn hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn no_profile(name: &str) -> Failure {
    Failure::new(
        Kind::NotFound,
        format!("no profile named {name:?}; GET /v1/profiles lists them"),
    )
}
