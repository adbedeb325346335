//! A lab topology file (`nvo lab up FILE`: YAML, parsed and checked by
//! [`Topology::parse`](nvo_cli::lab::topology::Topology::parse) before anything is created):
//! never panics, and a refusal is one line, as the module promises — it is what the user reads.
//! An accepted topology answers the questions `nvo lab up` asks of it without panicking.

use nvo_cli::lab::topology::{container_mac, Topology};

/// Runs the check on one input; panics when the topology code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = match Topology::parse("fuzz.yaml", text) {
        Ok(topo) => topo,
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n'), "a refusal of two lines: {line:?}");
            return;
        }
    };
    let _ = topo.default_tenant_mtu();
    for n in &topo.networks {
        let _ = (topo.vxlan_tenant_mtu(n), n.encap());
        let members = topo.member_hosts(n);
        for h in topo.flood_hosts(n) {
            assert!(
                topo.hosts.iter().any(|x| x.name == h),
                "network {} floods to unknown host {h}",
                n.vni
            );
        }
        assert!(members.len() <= topo.hosts.len());
    }
    for (i, c) in topo.containers.iter().enumerate() {
        assert!(container_mac(c, i).is_unicast(), "container {}", c.name);
    }
}
