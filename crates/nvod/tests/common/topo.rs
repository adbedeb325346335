//! Namespaces for nvod's traffic tests: bare hosts, commands inside them, and containers
//! attached to a host by a veth.

use std::process::Command;

use nvo_io::netns::{unique_name, NamedNetns};

/// A new namespace (its name made unique from `tag`) with `lo` up.
pub fn ns(tag: &str) -> NamedNetns {
    let ns = NamedNetns::create(&unique_name(tag)).unwrap();
    ip(&ns, "link set lo up");
    ns
}

/// `ip -n NS ARGS`, the arguments split at spaces.
pub fn ip(ns: &NamedNetns, args: &str) {
    let args: Vec<&str> = args.split(' ').collect();
    ns.ip(&args).unwrap();
}

/// Runs a command inside a namespace; returns (success, stdout + stderr).
pub fn exec(ns: &NamedNetns, args: &[&str]) -> (bool, String) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns.name()])
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A container namespace attached to `host` by a veth: `port` on the host, `eth0` inside,
/// with IPv6 off in the container (its MLD and DAD frames would be traffic no test asked for).
pub fn attach(
    host: &NamedNetns,
    container: &NamedNetns,
    port: &str,
    mac: &str,
    address: &str,
    mtu: u16,
) {
    for key in ["all", "default"] {
        let (ok, out) = exec(
            container,
            &[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
            ],
        );
        assert!(ok, "{out}");
    }
    ip(
        host,
        &format!(
            "link add {port} type veth peer name eth0 netns {}",
            container.name()
        ),
    );
    ip(host, &format!("link set {port} up"));
    ip(container, &format!("link set eth0 address {mac} mtu {mtu}"));
    ip(container, &format!("addr add {address} dev eth0"));
    ip(container, "link set eth0 up");
}
