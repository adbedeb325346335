//! The overlay tables as the relay map: for each (application, destination node) whose packets
//! go on to exactly one other node, that node's locators and weights (bpf/relay.h).
//!
//! ```text
//!  route of app to dst = [hop], hop ≠ this node, hop in the LIB   → relays[(dst, app)] = hop's
//!  no route, dst in the LIB, dst ≠ this node (reached directly)      locators, if all IPv4 and
//!                                                                     at most RELAY_LOCS
//!  anything else (trees, local copies, unknown hops, IPv6 locators)  → no entry: nvod relays
//! ```
//!
//! The packet-time parts of `OverlayTables::receive` — split horizon, TTL, picking a locator by
//! flow — are the program's; what it cannot decide it leaves to nvod, which counts it.

use std::collections::HashMap;
use std::net::IpAddr;

use nvo_pipeline::overlay::{App, Locator, NodeId, OverlayTables};

use super::Mirror;
use crate::layout::{self, Relay, RelayKey, RelayLoc};

/// The entry for a next hop's locators, if the kernel can carry it.
fn relay_of(locs: &[Locator]) -> Option<Relay> {
    if locs.is_empty() || locs.len() > layout::RELAY_LOCS {
        return None;
    }
    let mut relay = Relay::default();
    for (slot, l) in relay.locs.iter_mut().zip(locs) {
        let IpAddr::V4(v4) = l.addr else {
            return None;
        };
        *slot = RelayLoc {
            addr: v4.octets(),
            weight: u32::from(l.weight),
        };
        relay.total += u32::from(l.weight);
    }
    relay.count = locs.len() as u32;
    Some(relay)
}

/// Every entry the relay map should hold for `tables`.
pub fn relay_entries(tables: &OverlayTables) -> HashMap<RelayKey, Relay> {
    let own = tables.own();
    let nodes = tables.nodes();
    let mut out = HashMap::new();
    // The own node is a local copy, not a relay: no entry.
    let entry = |hop: NodeId| {
        (hop != own)
            .then(|| tables.locators(hop))
            .flatten()
            .and_then(relay_of)
    };
    for app in App::ALL {
        let key = |dst: NodeId| RelayKey {
            dst: dst.0,
            app: app.number(),
            pad: [0; 3],
        };
        for (dst, hops) in tables.routes(app) {
            if let [hop] = hops[..] {
                if let Some(relay) = entry(hop) {
                    out.insert(key(dst), relay);
                }
            }
        }
        for (node, _) in &nodes {
            if tables.route(app, *node).is_none() {
                if let Some(relay) = entry(*node) {
                    out.insert(key(*node), relay);
                }
            }
        }
    }
    out
}

impl Mirror {
    /// Tells the programs how nvod's overlay socket sends — its UDP port and source ports
    /// (indexed by a relayed packet's flow hash modulo their number) — so that a packet the
    /// kernel relays leaves as that socket would send it. Until then the kernel relays
    /// nothing. Does nothing when they are the ones already written.
    pub fn set_overlay_socket(&mut self, port: u16, source_ports: &[u16]) -> std::io::Result<()> {
        let sports = source_ports.len().min(layout::MAX_ENTROPY);
        if self
            .relay_socket
            .as_ref()
            .is_some_and(|(p, s)| *p == port && s[..] == source_ports[..sports])
        {
            return Ok(());
        }
        let maps = &mut self.kernel.maps;
        for (i, &p) in source_ports.iter().take(sports).enumerate() {
            maps.relay_ports
                .set(i as u32, p.to_be(), 0)
                .map_err(std::io::Error::other)?;
        }
        let config = layout::RelayConfig {
            port: if sports > 0 { port } else { 0 },
            sports: sports as u16,
            pad: 0,
        };
        maps.relay_config
            .set(0, config, 0)
            .map_err(std::io::Error::other)?;
        self.relay_socket = Some((port, source_ports[..sports].to_vec()));
        Ok(())
    }

    /// Brings the relay map up to date with the overlay tables (nothing to do while their
    /// generation is the one last written). Locators it names get their next hops resolved
    /// like any other remote's.
    pub fn sync_relay(&mut self, tables: &OverlayTables) {
        if self.relay_generation == Some(tables.generation()) {
            return;
        }
        self.relay_generation = Some(tables.generation());
        let want = relay_entries(tables);
        let gone: Vec<RelayKey> = self
            .relays
            .keys()
            .filter(|k| !want.contains_key(k))
            .copied()
            .collect();
        for k in gone {
            let _ = self.kernel.maps.relays.remove(&k);
            self.relays.remove(&k);
        }
        for (k, v) in want {
            for l in &v.locs[..v.count as usize] {
                self.remotes
                    .entry(std::net::Ipv4Addr::from(l.addr))
                    .or_insert(None);
            }
            if self.relays.get(&k) == Some(&v) {
                continue;
            }
            if self.kernel.maps.relays.insert(k, v, 0).is_err() {
                self.stats.write_errors += 1;
                // Tried again at the next sync.
                self.relay_generation = None;
                continue;
            }
            self.relays.insert(k, v);
        }
        self.resolve_new_remotes();
    }

    /// Entries in the relay map.
    pub fn relay_entries(&self) -> usize {
        self.relays.len()
    }
}
