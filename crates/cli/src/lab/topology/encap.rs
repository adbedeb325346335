//! The encapsulation side of a topology: its user-defined profiles (`profiles:`, in the form of
//! `POST /v1/profiles`) and each network's `encap:` and `params:`. Checked here with the
//! engine's own rules (`nvo_encap`), so a topology nvod would refuse fails before anything is
//! made, with one line naming the network, profile or parameter.

use std::collections::BTreeSet;

use nvo_api::ProfileSpec;
use nvo_encap::builtin;
use nvo_encap::profile::Profile;

use super::error::EncapError;
use super::{HostKind, NetworkDef, Topology};

/// The profile of a network that names none (nvod's default too).
pub const DEFAULT: &str = builtin::names::VXLAN;

/// Whether a profile travels on the host's VXLAN UDP port (`vxlan_port`), so the hosts of a
/// network must agree on that port, and a kernel host's VXLAN device can speak it.
pub fn on_vxlan_port(encap: &str) -> bool {
    encap == builtin::names::VXLAN
}

/// Checks `profiles:`: each makes a valid profile, names are unique and none is a built-in's.
pub fn validate_profiles(profiles: &[ProfileSpec]) -> Result<(), EncapError> {
    let mut names = BTreeSet::new();
    for spec in profiles {
        if builtin::is_builtin(&spec.name) {
            return Err(EncapError::BuiltinName(spec.name.clone()));
        }
        if !names.insert(spec.name.as_str()) {
            return Err(EncapError::ProfileTwice(spec.name.clone()));
        }
        spec.to_profile()?;
    }
    Ok(())
}

/// The profile named `name`: a built-in, or one of the topology's (already validated).
fn find(topo: &Topology, name: &str) -> Option<Profile> {
    if name == builtin::names::ILA {
        return Some(builtin::ila_profile());
    }
    if let Some(p) = builtin::all().into_iter().find(|p| p.name == name) {
        return Some(p);
    }
    topo.profiles
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.to_profile().ok())
}

/// Checks a network's profile and parameters, and that no kernel host takes part in a network
/// whose profile the kernel's VXLAN device does not speak.
pub fn validate_network(topo: &Topology, n: &NetworkDef) -> Result<(), EncapError> {
    let name = n.encap();
    let Some(profile) = find(topo, name) else {
        let mut known: Vec<String> = builtin::all().into_iter().map(|p| p.name).collect();
        known.extend(topo.profiles.iter().map(|s| s.name.clone()));
        return Err(EncapError::UnknownEncap {
            vni: n.vni,
            encap: name.to_owned(),
            known,
        });
    };
    for (key, value) in &n.params {
        let Some(param) = profile.params.iter().find(|p| &p.name == key) else {
            return Err(EncapError::UnknownParam {
                vni: n.vni,
                encap: name.to_owned(),
                key: key.clone(),
                params: profile.params.iter().map(|p| p.name.clone()).collect(),
            });
        };
        let bits = u32::from(param.field.len) * 8;
        let max = u64::MAX
            .checked_shr(64u32.saturating_sub(bits))
            .unwrap_or(0);
        if *value > max {
            return Err(EncapError::ParamTooLarge {
                vni: n.vni,
                key: key.clone(),
                value: *value,
                bytes: param.field.len,
                max,
            });
        }
    }
    if !on_vxlan_port(name) {
        if let Some(k) = topo
            .member_hosts(n)
            .into_iter()
            .find(|h| h.kind == HostKind::Kernel)
        {
            return Err(EncapError::KernelHost {
                vni: n.vni,
                host: k.name.clone(),
                encap: name.to_owned(),
            });
        }
    }
    Ok(())
}
