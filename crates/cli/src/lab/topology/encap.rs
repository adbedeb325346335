//! The encapsulation side of a topology: its user-defined profiles (`profiles:`, in the form of
//! `POST /v1/profiles`) and each network's `encap:` and `params:`. Checked here with the
//! engine's own rules (`nvo_encap`), so a topology nvod would refuse fails before anything is
//! made, with one line naming the network, profile or parameter.

use std::collections::BTreeSet;

use nvo_api::ProfileSpec;
use nvo_encap::builtin;
use nvo_encap::profile::Profile;

use super::{HostKind, NetworkDef, Topology};

/// The profile of a network that names none (nvod's default too).
pub const DEFAULT: &str = builtin::names::VXLAN;

/// Whether a profile travels on the host's VXLAN UDP port (`vxlan_port`), so the hosts of a
/// network must agree on that port, and a kernel host's VXLAN device can speak it.
pub fn on_vxlan_port(encap: &str) -> bool {
    encap == builtin::names::VXLAN
}

/// Checks `profiles:`: each makes a valid profile, names are unique and none is a built-in's.
pub fn validate_profiles(profiles: &[ProfileSpec]) -> Result<(), String> {
    let mut names = BTreeSet::new();
    for spec in profiles {
        if builtin::is_builtin(&spec.name) {
            return Err(format!(
                "profiles: {:?} is the name of a built-in profile; give yours another",
                spec.name
            ));
        }
        if !names.insert(spec.name.as_str()) {
            return Err(format!("profiles: {:?} is defined twice", spec.name));
        }
        spec.to_profile()
            .map_err(|e| format!("profiles: {}", e.to_string().replace('\n', " ")))?;
    }
    Ok(())
}

/// The profile named `name`: a built-in, or one of the topology's (already validated).
fn find(topo: &Topology, name: &str) -> Option<Profile> {
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
pub fn validate_network(topo: &Topology, n: &NetworkDef) -> Result<(), String> {
    let name = n.encap();
    let Some(profile) = find(topo, name) else {
        let mut known: Vec<String> = builtin::all().into_iter().map(|p| p.name).collect();
        known.extend(topo.profiles.iter().map(|s| s.name.clone()));
        return Err(format!(
            "network {}: encap {name:?} is neither a built-in profile nor in profiles (known: {})",
            n.vni,
            known.join(", ")
        ));
    };
    for (key, value) in &n.params {
        let Some(param) = profile.params.iter().find(|p| &p.name == key) else {
            let has: Vec<&str> = profile.params.iter().map(|p| p.name.as_str()).collect();
            let has = if has.is_empty() {
                "none".to_owned()
            } else {
                has.join(", ")
            };
            return Err(format!(
                "network {}: encap {name} has no parameter {key:?} (its parameters: {has})",
                n.vni
            ));
        };
        let bits = u32::from(param.field.len) * 8;
        let max = u64::MAX
            .checked_shr(64u32.saturating_sub(bits))
            .unwrap_or(0);
        if *value > max {
            return Err(format!(
                "network {}: parameter {key} = {value} does not fit its {} bytes (at most {max})",
                n.vni, param.field.len
            ));
        }
    }
    if !on_vxlan_port(name) {
        if let Some(k) = topo
            .member_hosts(n)
            .into_iter()
            .find(|h| h.kind == HostKind::Kernel)
        {
            return Err(format!(
                "network {}: host {} is kind: kernel, whose VXLAN device speaks encap vxlan only, not {name}",
                n.vni, k.name
            ));
        }
    }
    Ok(())
}
