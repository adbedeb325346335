//! Interfaces: the veth pair of an attachment, its addresses and routes, and what CHECK reads
//! back.
//!
//! Changes go through iproute2 (`ip`, `ip -batch`) rather than netlink code of our own: nvo has
//! no netlink library yet (nvo-io reads interfaces with ioctls), `nvo lab` already builds its
//! containers' veths with the same commands, and the kernel's answers come back as `ip`'s
//! one-line errors, which are what a user should see. Inside a container the commands run in
//! a thread moved into its namespace with `setns` (nvo-io's netns helpers); a child process
//! inherits that thread's namespace.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use nvo_wire::Mac;
use serde_json::Value;

use crate::error::{code, CniError};

/// Prefix of the host end of every veth nvo-cni makes (GC recognises its own by it).
pub const HOST_PREFIX: &str = "nvc";

/// The host end's name for a container's interface: `nvc` and 12 hex digits of a hash of
/// (container ID, interface name) — 15 bytes, the kernel's limit, and the same on every call.
pub fn host_name(container_id: &str, ifname: &str) -> String {
    // FNV-1a, 64 bits: stable across releases (unlike std's hasher) and plenty for names.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in container_id.bytes().chain([0u8]).chain(ifname.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{HOST_PREFIX}{:012x}", h & 0xffff_ffff_ffff)
}

/// Runs `ip ARGS` (in `netns` if given), returning its standard output.
pub fn ip(args: &[&str], netns: Option<&Path>) -> Result<String, CniError> {
    ip_with_input(args, None, netns)
}

/// Runs `ip -batch -` with `lines` on its standard input (in `netns` if given): one process
/// for a container's whole configuration.
pub fn ip_batch(lines: &[String], netns: Option<&Path>) -> Result<(), CniError> {
    let input = lines.join("\n") + "\n";
    ip_with_input(&["-batch", "-"], Some(input.as_bytes()), netns).map(|_| ())
}

fn ip_with_input(
    args: &[&str],
    input: Option<&[u8]>,
    netns: Option<&Path>,
) -> Result<String, CniError> {
    let what = format!("ip {}", args.join(" "));
    let run = || -> Result<std::process::Output, std::io::Error> {
        let mut child = Command::new("ip")
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(bytes)?;
        }
        child.wait_with_output()
    };
    let out = match netns {
        None => run(),
        Some(path) => in_netns(path, run)?,
    }
    .map_err(|e| {
        CniError::new(code::LINK, format!("{what}: {e}")).details("is iproute2 installed?")
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let text = String::from_utf8_lossy(&out.stderr);
        let input_text = input.map(String::from_utf8_lossy).unwrap_or_default();
        Err(
            CniError::new(code::LINK, format!("{what} failed: {}", text.trim()))
                .details(input_text.trim().replace('\n', "; ")),
        )
    }
}

/// Runs `f` on a thread moved into the namespace at `path`.
pub fn in_netns<T: Send>(path: &Path, f: impl FnOnce() -> T + Send) -> Result<T, CniError> {
    let entered = std::thread::scope(|s| {
        s.spawn(|| {
            let _guard = nvo_io::netns::enter_path(path)?;
            Ok::<T, std::io::Error>(f())
        })
        .join()
    });
    match entered {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CniError::new(
            code::UNKNOWN_CONTAINER,
            format!("entering network namespace {}: {e}", path.display()),
        )),
        Err(_) => Err(CniError::new(
            code::LINK,
            format!("a thread in namespace {} failed", path.display()),
        )),
    }
}

/// Whether interface `name` exists (in `netns` if given): one ioctl, no process.
pub fn exists(name: &str, netns: Option<&Path>) -> Result<bool, CniError> {
    Ok(mac(name, netns)?.is_some())
}

/// The MAC address of interface `name` (in `netns` if given), `None` if there is no such
/// interface: asked of the kernel with an ioctl (nvo-io), no process.
pub fn mac(name: &str, netns: Option<&Path>) -> Result<Option<String>, CniError> {
    let ask = || nvo_io::iface::interface(name);
    let answer = match netns {
        None => ask(),
        Some(path) => in_netns(path, ask)?,
    };
    match answer {
        Ok(i) => Ok(Some(Mac(i.mac).to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CniError::new(
            code::LINK,
            format!("reading interface {name}: {e}"),
        )),
    }
}

/// What `ip -j addr show` says about one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    /// Interface index.
    pub ifindex: u32,
    /// MAC address.
    pub mac: String,
    /// MTU.
    pub mtu: u32,
    /// Administratively up.
    pub up: bool,
    /// Addresses in CIDR notation.
    pub addresses: Vec<String>,
}

/// The interface `name` (in `netns` if given), or `None` when there is none: read from the
/// list of every interface, so that "not there" is an answer, not an error text of `ip`.
pub fn state(name: &str, netns: Option<&Path>) -> Result<Option<LinkState>, CniError> {
    let text = ip(&["-j", "addr", "show"], netns)?;
    parse_state(&text, name).ok_or_else(|| {
        CniError::new(
            code::LINK,
            format!("cannot read `ip -j addr show` (looking for {name})"),
        )
    })
}

/// Removes the host interface `name` (a veth's container end goes with it); one that is
/// already gone is success, told by its absence from /sys/class/net, not by `ip`'s message.
pub fn remove(name: &str) -> Result<(), CniError> {
    match ip(&["link", "del", name], None) {
        Err(_) if !Path::new("/sys/class/net").join(name).exists() => Ok(()),
        other => other.map(|_| ()),
    }
}

/// The entry of interface `name` in `ip -j addr show`'s list: `Some(None)` when the list has
/// no such interface, `None` when the text is not such a list.
fn parse_state(text: &str, name: &str) -> Option<Option<LinkState>> {
    let v: Value = serde_json::from_str(text).ok()?;
    let Some(link) = v
        .as_array()?
        .iter()
        .find(|l| l.get("ifname").and_then(Value::as_str) == Some(name))
    else {
        return Some(None);
    };
    let flags = link.get("flags")?.as_array()?;
    Some(Some(LinkState {
        ifindex: u32::try_from(link.get("ifindex")?.as_u64()?).ok()?,
        mac: link.get("address")?.as_str()?.to_owned(),
        mtu: u32::try_from(link.get("mtu")?.as_u64()?).ok()?,
        up: flags.iter().any(|f| f == "UP"),
        addresses: link
            .get("addr_info")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|a| {
                        Some(format!(
                            "{}/{}",
                            a.get("local")?.as_str()?,
                            a.get("prefixlen")?.as_u64()?
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_stable_short_and_distinct() {
        let a = host_name("cnitool-0123456789abcdef", "eth0");
        assert_eq!(a, host_name("cnitool-0123456789abcdef", "eth0"));
        assert_eq!(a.len(), 15);
        assert!(a.starts_with(HOST_PREFIX));
        assert_ne!(a, host_name("cnitool-0123456789abcdef", "eth1"));
        assert_ne!(a, host_name("cnitool-0123456789abcdeg", "eth0"));
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(host_name("ab", "c"), host_name("a", "bc"));
    }

    #[test]
    fn ip_json_is_read() {
        // `ip -j addr show` of iproute2 6.1 (one interface).
        let text = r#"[{"ifindex":2,"link_index":5,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],
            "mtu":1450,"qdisc":"noqueue","operstate":"UP","group":"default","link_type":"ether",
            "address":"02:11:22:33:44:55","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,
            "addr_info":[{"family":"inet","local":"10.0.0.2","prefixlen":24,"scope":"global","label":"eth0"}]}]"#;
        let s = parse_state(text, "eth0").unwrap().unwrap();
        assert_eq!(
            s,
            LinkState {
                ifindex: 2,
                mac: "02:11:22:33:44:55".into(),
                mtu: 1450,
                up: true,
                addresses: vec!["10.0.0.2/24".into()],
            }
        );
        assert_eq!(parse_state(text, "eth1"), Some(None));
        assert_eq!(parse_state("[]", "eth0"), Some(None));
        assert_eq!(parse_state("not json", "eth0"), None);
    }
}
