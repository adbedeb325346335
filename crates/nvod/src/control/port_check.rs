//! Which interfaces may become ports: only those meant for tenants. A port is bridged into a
//! tenant network and nvod reads and writes every frame on it, so attaching the host's
//! loopback or its underlay NIC would hand the host's own traffic to a tenant.
//!
//! An interface may be a port when
//! - it is not a loopback (`IFF_LOOPBACK` in `/sys/class/net/NAME/flags`),
//! - it holds none of nvod's underlay addresses (the locator, this node's overlay locators):
//!   that is the underlay interface, whatever its kind (in labs it is often a veth),
//! - its kind is in the config's `port_kinds` (default veth and tap): "tap" or "tun" when
//!   `/sys/class/net/NAME/tun_flags` exists (`IFF_TAP` 0x0002 tells them apart), else the
//!   driver's name as `ethtool -i` shows it (veth, macvlan, dummy, virtio_net...).
//!
//! A TAP port nvod creates itself (one whose name does not exist yet) needs "tap" allowed; a
//! veth port whose interface does not exist yet is left to the datapath, which refuses it
//! (API) or retries it (restored at start).
//!
//! sysfs is read as the datapath reads it: `ip netns exec` mounts the namespace's own.

use std::net::IpAddr;
use std::path::Path;

use crate::state::PortKindState;

/// `IFF_LOOPBACK` (include/uapi/linux/if.h).
const IFF_LOOPBACK: u32 = 0x8;
/// `IFF_TAP` in `tun_flags` (include/uapi/linux/if_tun.h).
const IFF_TAP: u32 = 0x2;

/// Why an interface may not be a port: one line for the user.
pub fn refusal(
    name: &str,
    kind: PortKindState,
    allowed: &[String],
    underlay: &[IpAddr],
) -> Option<String> {
    let sys = Path::new("/sys/class/net").join(name);
    let only = || {
        format!(
            "only {} may be ports (config port_kinds)",
            if allowed.is_empty() {
                "no kind".to_owned()
            } else {
                allowed.join(", ")
            }
        )
    };
    if !sys.exists() {
        let creates_tap = kind == PortKindState::Tap;
        return (creates_tap && !allowed.iter().any(|k| k == "tap"))
            .then(|| format!("port {name} would be a new TAP device; {}", only()));
    }
    let flags = read_hex(&sys.join("flags")).unwrap_or(0);
    if flags & IFF_LOOPBACK != 0 {
        return Some(format!("interface {name} is a loopback; {}", only()));
    }
    let held = nvo_io::iface::addresses(name).unwrap_or_default();
    if let Some(addr) = held.iter().find(|a| underlay.contains(a)) {
        return Some(format!(
            "interface {name} holds nvod's underlay address {addr} (the underlay interface); \
             it can never be a port"
        ));
    }
    let actual = match read_hex(&sys.join("tun_flags")) {
        Some(tun) if tun & IFF_TAP != 0 => "tap".to_owned(),
        Some(_) => "tun".to_owned(),
        None => match nvo_io::ethtool::driver(name) {
            Ok(driver) if !driver.is_empty() => driver,
            _ => "unknown".to_owned(),
        },
    };
    if kind == PortKindState::Tap && actual != "tap" {
        return Some(format!(
            "interface {name} exists and is a {actual} interface, not a TAP; give \"kind\": \
             \"veth\" to attach an existing interface, or another name"
        ));
    }
    if !allowed.contains(&actual) {
        return Some(format!(
            "interface {name} is a {actual} interface; {}",
            only()
        ));
    }
    None
}

/// A sysfs attribute written as hex (`0x1003`).
fn read_hex(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    u32::from_str_radix(text.trim_start_matches("0x"), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> Vec<String> {
        vec!["veth".into(), "tap".into()]
    }

    #[test]
    fn loopback_is_refused_whatever_the_kinds() {
        let mut all = kinds();
        all.push("unknown".into());
        let why = refusal("lo", PortKindState::Veth, &all, &[]).unwrap();
        assert!(why.contains("lo is a loopback"), "{why}");
        assert!(why.contains("port_kinds"), "{why}");
    }

    #[test]
    fn a_missing_interface_is_left_to_the_datapath_unless_a_tap_is_not_allowed() {
        assert_eq!(
            refusal("nosuchif0", PortKindState::Veth, &kinds(), &[]),
            None
        );
        assert_eq!(
            refusal("nosuchif0", PortKindState::Tap, &kinds(), &[]),
            None
        );
        let why = refusal("nosuchif0", PortKindState::Tap, &["veth".into()], &[]).unwrap();
        assert!(why.contains("TAP") && why.contains("only veth"), "{why}");
    }
}
