//! The `[limits]` table: the bound of every table the API fills, with the values compiled in
//! before they were configurable as defaults.
//!
//! Each key's upper bound is what the rest of nvod can hold: the kernel path's programs are
//! built for at most [`nvo_ebpf::layout::MAX_FLOOD`] flood-list entries per network,
//! [`nvo_ebpf::layout::MAX_PROFILES`] profiles and [`nvo_ebpf::layout::RELAY_LOCS`] locators
//! per node, and the routes of an L3 network are bounded by the pipeline's
//! [`nvo_pipeline::l3::MAX_ROUTES`]; the other bounds keep the kernel maps (sized from these
//! limits at start) within reasonable memory. A larger value is refused at start with the key
//! named, never silently truncated.

use serde::Deserialize;

use super::{bad, ConfigError};

/// `[limits]` as written: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    networks: Option<usize>,
    ports: Option<usize>,
    flood_per_network: Option<usize>,
    static_fdb_per_network: Option<usize>,
    learned_fdb_per_network: Option<u32>,
    evpn_fdb_per_network: Option<usize>,
    neighbors_per_network: Option<usize>,
    routes_per_network: Option<usize>,
    profiles: Option<usize>,
    keys: Option<usize>,
    overlay_nodes: Option<usize>,
    locators_per_node: Option<usize>,
    overlay_routes: Option<usize>,
    next_hops_per_route: Option<usize>,
}

/// The resolved limits, in the form each table takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The pipeline's tables.
    pub pipeline: nvo_pipeline::Limits,
    /// The overlay's tables.
    pub overlay: nvo_pipeline::overlay::OverlayLimits,
    /// The encapsulation engine's tables.
    pub engine: nvo_encap::engine::Limits,
    /// Routes of one L3 network (enforced by nvod; the pipeline's own bound is
    /// `nvo_pipeline::l3::MAX_ROUTES`).
    pub routes_per_network: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            pipeline: nvo_pipeline::Limits::default(),
            overlay: Default::default(),
            engine: Default::default(),
            routes_per_network: nvo_pipeline::l3::MAX_ROUTES,
        }
    }
}

/// One key: its value within 1..=max, else an error naming it.
pub(super) fn key<T: Copy + Into<u64> + std::fmt::Display>(
    name: &'static str,
    value: Option<T>,
    default: T,
    max: u64,
    reason: &'static str,
) -> Result<T, ConfigError> {
    let v = value.unwrap_or(default);
    if v.into() == 0 || v.into() > max {
        return Err(bad(name, v, reason));
    }
    Ok(v)
}

pub(super) fn size(
    name: &'static str,
    value: Option<usize>,
    default: usize,
    max: usize,
    reason: &'static str,
) -> Result<usize, ConfigError> {
    let v = value.unwrap_or(default);
    if v == 0 || v > max {
        return Err(bad(name, v, reason));
    }
    Ok(v)
}

/// Fills in the defaults and checks the bounds.
pub fn resolve(file: LimitsFile) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    let (p, o, e) = (d.pipeline, d.overlay, d.engine);
    let pipeline = nvo_pipeline::Limits {
        max_networks: size(
            "limits.networks",
            file.networks,
            p.max_networks,
            1 << 16,
            "must be 1 to 65536",
        )?,
        max_ports: size(
            "limits.ports",
            file.ports,
            p.max_ports,
            1 << 16,
            "must be 1 to 65536",
        )?,
        max_flood: size(
            "limits.flood_per_network",
            file.flood_per_network,
            p.max_flood,
            nvo_ebpf::layout::MAX_FLOOD,
            "must be 1 to 256 (the kernel path replicates to at most 256 remotes)",
        )?,
        max_static_fdb: size(
            "limits.static_fdb_per_network",
            file.static_fdb_per_network,
            p.max_static_fdb,
            1 << 20,
            "must be 1 to 1048576",
        )?,
        max_learned_fdb: key(
            "limits.learned_fdb_per_network",
            file.learned_fdb_per_network,
            p.max_learned_fdb,
            1 << 20,
            "must be 1 to 1048576",
        )?,
        max_evpn_fdb: size(
            "limits.evpn_fdb_per_network",
            file.evpn_fdb_per_network,
            p.max_evpn_fdb,
            1 << 22,
            "must be 1 to 4194304",
        )?,
        max_neighbors: size(
            "limits.neighbors_per_network",
            file.neighbors_per_network,
            p.max_neighbors,
            1 << 22,
            "must be 1 to 4194304",
        )?,
    };
    let overlay = nvo_pipeline::overlay::OverlayLimits {
        max_nodes: size(
            "limits.overlay_nodes",
            file.overlay_nodes,
            o.max_nodes,
            1 << 16,
            "must be 1 to 65536",
        )?,
        max_locators: size(
            "limits.locators_per_node",
            file.locators_per_node,
            o.max_locators,
            nvo_ebpf::layout::RELAY_LOCS,
            "must be 1 to 8 (the kernel path relays to at most 8 locators)",
        )?,
        max_routes: size(
            "limits.overlay_routes",
            file.overlay_routes,
            o.max_routes,
            1 << 20,
            "must be 1 to 1048576",
        )?,
        max_next_hops: size(
            "limits.next_hops_per_route",
            file.next_hops_per_route,
            o.max_next_hops,
            64,
            "must be 1 to 64",
        )?,
    };
    // The built-in profiles count: fewer than they are would leave no room at all.
    let builtins = nvo_encap::engine::Engine::new(e).profiles().count();
    let max_profiles = size(
        "limits.profiles",
        file.profiles,
        e.max_profiles,
        nvo_ebpf::layout::MAX_PROFILES,
        "must be the number of built-in profiles to 64 (the kernel path's profile table)",
    )?;
    if max_profiles < builtins {
        return Err(bad(
            "limits.profiles",
            max_profiles,
            "must be the number of built-in profiles to 64 (the kernel path's profile table)",
        ));
    }
    let keys = size(
        "limits.keys",
        file.keys,
        e.max_keys,
        1 << 20,
        "must be 1 to 1048576",
    )?;
    let engine = nvo_encap::engine::Limits {
        max_profiles,
        max_keys: keys,
        max_templates: e.max_templates.max(keys),
    };
    let routes_per_network = size(
        "limits.routes_per_network",
        file.routes_per_network,
        d.routes_per_network,
        nvo_pipeline::l3::MAX_ROUTES,
        "must be 1 to 1024 (the pipeline's route table)",
    )?;
    Ok(Limits {
        pipeline,
        overlay,
        engine,
        routes_per_network,
    })
}

/// The config key of the table a `TableFull` refusal names (`table` as the pipeline, the
/// overlay tables or the engine name it; `overlay` for the overlay's).
pub fn key_of(table: &str, overlay: bool) -> &'static str {
    match (table, overlay) {
        ("node", true) => "overlay_nodes",
        ("route", true) => "overlay_routes",
        ("networks", _) => "networks",
        ("ports", _) => "ports",
        ("flood list", _) => "flood_per_network",
        ("static fdb", _) => "static_fdb_per_network",
        ("evpn fdb", _) => "evpn_fdb_per_network",
        ("neighbor", _) => "neighbors_per_network",
        ("route", false) => "routes_per_network",
        ("profile", _) => "profiles",
        _ => "keys",
    }
}

/// The API's answer beyond a limit: its key and value, then the table's own words.
pub fn reached(key: &str, limit: usize, detail: impl std::fmt::Display) -> String {
    format!(
        "limit {key} ({limit}) reached: {detail}; remove entries, or raise [limits] {key} in \
         nvod's config"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Limits, ConfigError> {
        #[derive(Deserialize)]
        struct F {
            limits: LimitsFile,
        }
        resolve(toml::from_str::<F>(text).unwrap().limits)
    }

    #[test]
    fn defaults_are_the_compiled_in_values() {
        let l = parse("[limits]\n").unwrap();
        assert_eq!(l, Limits::default());
        assert_eq!(l.pipeline.max_networks, 4096);
        assert_eq!(l.pipeline.max_static_fdb, 16384);
    }

    #[test]
    fn values_are_read_and_bounded() {
        let l =
            parse("[limits]\nnetworks = 3\nstatic_fdb_per_network = 2\nroutes_per_network = 1\n")
                .unwrap();
        assert_eq!(l.pipeline.max_networks, 3);
        assert_eq!(l.pipeline.max_static_fdb, 2);
        assert_eq!(l.routes_per_network, 1);
        for text in [
            "networks = 0",
            "networks = 65537",
            "flood_per_network = 257",
            "profiles = 65",
            "profiles = 1",
            "locators_per_node = 9",
            "routes_per_network = 1025",
        ] {
            let e = parse(&format!("[limits]\n{text}\n"))
                .unwrap_err()
                .to_string();
            let name = text.split(' ').next().unwrap();
            assert!(e.contains(&format!("limits.{name}")), "{e}");
        }
    }
}
