//! `nvo overlay ...`: the routed overlay's tables (issue 6, docs/design/overlay.md), the
//! control commands of ovstack's `ip ov` on nvod's API:
//!
//! | command                                   | API call(s)                                         |
//! |-------------------------------------------|-----------------------------------------------------|
//! | `overlay show`                            | `GET /v1/overlay`, `GET /v1/overlay/nodes/{own}`     |
//! | `overlay id set ID`                       | `PUT /v1/overlay`                                   |
//! | `overlay locator add/del/weight`          | `GET /v1/overlay`, then as `node` on the own ID      |
//! | `overlay node list` / `show ID`           | `GET /v1/overlay/nodes[/{id}]`                      |
//! | `overlay node set ID ADDR[@W]...`         | `PUT /v1/overlay/nodes/{id}`                        |
//! | `overlay node weight ID ADDR W`           | `GET` then `PUT /v1/overlay/nodes/{id}`             |
//! | `overlay node del ID`                     | `DELETE /v1/overlay/nodes/{id}`                     |
//! | `overlay route list [APP]`                | `GET /v1/overlay/routes/{app}` (each app if none)   |
//! | `overlay route set APP DST NEXTHOP...`    | `PUT /v1/overlay/routes/{app}/{dst}`                |
//! | `overlay route del APP DST`               | `DELETE /v1/overlay/routes/{app}/{dst}`             |
//! | `overlay apps`                            | none: the applications are fixed                    |
//!
//! The API sets a node's locators as a whole, so adding, deleting or re-weighting one locator
//! reads the node's list, changes it here and writes it back (a concurrent change by another
//! client between the two calls is overwritten). A change that contradicts what nvod has (a
//! locator added twice, one removed that is not there) fails here, before anything is written.
//!
//! On the command line a locator is `ADDR[@WEIGHT]` (`@` because IPv6 addresses hold colons),
//! and is shown the same way; node IDs are decimal or 0x-prefixed hex.

use std::net::IpAddr;

use clap::Subcommand;
use nvo_api::{
    Client, ClientError, LocatorSpec, NodeLocators, OverlayApp, OverlayInfo, OverlayNode,
    OverlayRoute, RouteNextHops, DEFAULT_LOCATOR_WEIGHT,
};
use serde::Serialize;
use serde_json::Value;

use super::api::{done, show};
use super::{print_json, CliError, Format};
use crate::table::{list, pairs, Table};

/// Largest locator weight nvod takes (0 drains a locator).
pub const WEIGHT_MAX: i64 = 1000;

fn weight_parser() -> clap::builder::RangedI64ValueParser<u16> {
    clap::value_parser!(u16).range(0..=WEIGHT_MAX)
}

/// Why an overlay argument or locator change is refused before anything is sent; the
/// message quotes the value and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlayError {
    /// Node ID 0.
    #[error("node id 0 is not a node; ids are 1 to 4294967295")]
    NodeIdZero,
    /// Not a node ID.
    #[error("{0:?} is not a node id (decimal or 0x hex, 1 to 4294967295)")]
    NodeId(String),
    /// A locator whose address is not an IP address.
    #[error("{text:?}: {addr:?} is not an IP address (ADDR[@WEIGHT])")]
    LocatorAddress {
        /// The locator as typed.
        text: String,
        /// Its address part.
        addr: String,
    },
    /// A locator whose weight is not 0 to [`WEIGHT_MAX`].
    #[error("{text:?}: weight {weight:?} is not 0 to {WEIGHT_MAX}")]
    LocatorWeight {
        /// The locator as typed.
        text: String,
        /// Its weight part.
        weight: String,
    },
    /// Not an overlay application.
    #[error("{0:?} is not an overlay application: ethernet (7), ipv4 (4) or ipv6 (6)")]
    App(String),
    /// `locator add` of an address the node has.
    #[error(
        "node {node} already has locator {}; change its weight with `weight`",
        locator(.existing)
    )]
    LocatorExists {
        /// The node.
        node: u32,
        /// The locator it has, with its weight.
        existing: LocatorSpec,
    },
    /// `locator del/weight` of an address the node does not have.
    #[error("node {node} has no locator {addr}; its locators: {}", locator_list(.locators))]
    NoLocator {
        /// The node.
        node: u32,
        /// The address given.
        addr: IpAddr,
        /// The locators it has.
        locators: Vec<LocatorSpec>,
    },
}

/// Parses a node ID: decimal or 0x-prefixed hex, 1 to 4294967295 (0 is not a node).
pub fn parse_node_id(text: &str) -> Result<u32, OverlayError> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => t.parse(),
    };
    match parsed {
        Ok(0) => Err(OverlayError::NodeIdZero),
        Ok(id) => Ok(id),
        Err(_) => Err(OverlayError::NodeId(text.to_owned())),
    }
}

/// Parses a locator, `ADDR[@WEIGHT]` (weight 0 to 1000, default 1).
pub fn parse_locator(text: &str) -> Result<LocatorSpec, OverlayError> {
    let (addr, weight) = match text.split_once('@') {
        Some((a, w)) => (a, Some(w)),
        None => (text, None),
    };
    let addr: IpAddr = addr
        .trim()
        .parse()
        .map_err(|_| OverlayError::LocatorAddress {
            text: text.to_owned(),
            addr: addr.to_owned(),
        })?;
    let weight = match weight {
        None => DEFAULT_LOCATOR_WEIGHT,
        Some(w) => w
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|w| i64::from(*w) <= WEIGHT_MAX)
            .ok_or_else(|| OverlayError::LocatorWeight {
                text: text.to_owned(),
                weight: w.to_owned(),
            })?,
    };
    Ok(LocatorSpec { addr, weight })
}

/// Parses an application by name or number: ethernet (7), ipv4 (4), ipv6 (6).
pub fn parse_app(text: &str) -> Result<OverlayApp, OverlayError> {
    OverlayApp::parse(text).ok_or_else(|| OverlayError::App(text.to_owned()))
}

/// `nvo overlay ...`
#[derive(Debug, Subcommand)]
pub enum OverlayCmd {
    /// Show this node's overlay ID, its own locators and the overlay counters.
    #[command(after_help = "Example:\n  nvo overlay show\n  nvo -o json overlay show")]
    Show,
    /// Set this node's overlay ID.
    #[command(subcommand)]
    Id(IdCmd),
    /// Add, delete and re-weight this node's own locators (where other nodes reach it).
    #[command(subcommand)]
    Locator(LocatorCmd),
    /// List, show, set and delete the nodes of the locator table (node ID -> locators).
    #[command(subcommand)]
    Node(NodeCmd),
    /// List, set and delete the routes of an application (destination ID -> next hops).
    #[command(subcommand)]
    Route(OverlayRouteCmd),
    /// List the overlay applications, each with its own routes, and their header numbers.
    #[command(after_help = "Example:\n  nvo overlay apps")]
    Apps,
}

/// `nvo overlay id ...`
#[derive(Debug, Subcommand)]
pub enum IdCmd {
    /// Set this node's 32-bit overlay ID: the source ID of the packets it sends and the
    /// destination ID it takes packets for.
    #[command(after_help = "Example:\n  nvo overlay id set 1\n  nvo overlay id set 0x0a000001")]
    Set {
        /// The ID, decimal or 0x hex (not 0).
        #[arg(value_parser = parse_node_id)]
        id: u32,
    },
}

/// `nvo overlay locator ...`
#[derive(Debug, Subcommand)]
pub enum LocatorCmd {
    /// Add a locator to this node: an underlay address other nodes send its packets to.
    ///
    /// Flows to the node are spread over its locators by weight, each flow always on the same
    /// locator.
    #[command(after_help = "Example:\n  nvo overlay locator add 192.0.2.1\n  \
                      nvo overlay locator add 198.51.100.1 --weight 3")]
    Add {
        /// The underlay address.
        addr: IpAddr,
        /// Its share of flows, 0 to 1000 (0: drained).
        #[arg(long, value_parser = weight_parser(), default_value_t = DEFAULT_LOCATOR_WEIGHT)]
        weight: u16,
    },
    /// Delete one of this node's locators.
    #[command(after_help = "Example:\n  nvo overlay locator del 198.51.100.1")]
    Del {
        /// The underlay address.
        addr: IpAddr,
    },
    /// Change the weight of one of this node's locators (0 drains it).
    #[command(after_help = "Example:\n  nvo overlay locator weight 198.51.100.1 0")]
    Weight {
        /// The underlay address.
        addr: IpAddr,
        /// The new weight, 0 to 1000.
        #[arg(value_parser = weight_parser())]
        weight: u16,
    },
}

/// `nvo overlay node ...`
#[derive(Debug, Subcommand)]
pub enum NodeCmd {
    /// List the nodes with their locators (this node marked own).
    #[command(after_help = "Example:\n  nvo overlay node list")]
    List,
    /// Show one node's locators.
    #[command(after_help = "Example:\n  nvo overlay node show 2")]
    Show {
        /// The node ID.
        #[arg(value_parser = parse_node_id)]
        id: u32,
    },
    /// Set a node's locators, replacing the ones it had: ADDR or ADDR@WEIGHT, one or more.
    #[command(after_help = "Example:\n  nvo overlay node set 2 192.0.2.2\n  \
                      nvo overlay node set 3 192.0.2.3@3 fd00::3@1")]
    Set {
        /// The node ID.
        #[arg(value_parser = parse_node_id)]
        id: u32,
        /// Its locators, ADDR[@WEIGHT] (weight 0 to 1000, default 1).
        #[arg(required = true, num_args = 1.., value_parser = parse_locator, value_name = "ADDR[@WEIGHT]")]
        locators: Vec<LocatorSpec>,
    },
    /// Change the weight of one of a node's locators (0 drains it).
    #[command(after_help = "Example:\n  nvo overlay node weight 3 fd00::3 2")]
    Weight {
        /// The node ID.
        #[arg(value_parser = parse_node_id)]
        id: u32,
        /// The locator's address.
        addr: IpAddr,
        /// The new weight, 0 to 1000.
        #[arg(value_parser = weight_parser())]
        weight: u16,
    },
    /// Delete a node and its locators.
    #[command(after_help = "Example:\n  nvo overlay node del 3")]
    Del {
        /// The node ID.
        #[arg(value_parser = parse_node_id)]
        id: u32,
    },
}

/// `nvo overlay route ...`
#[derive(Debug, Subcommand)]
pub enum OverlayRouteCmd {
    /// List the routes of one application, or of all three.
    #[command(
        after_help = "Example:\n  nvo overlay route list\n  nvo overlay route list ethernet"
    )]
    List {
        /// ethernet, ipv4 or ipv6 (or 7, 4, 6); default all.
        #[arg(value_parser = parse_app)]
        app: Option<OverlayApp>,
    },
    /// Route a destination node through next-hop nodes, replacing its route.
    ///
    /// Without a route a destination is its own next hop. Several next hops replicate each
    /// packet (a multicast tree); this node's own ID among them delivers a copy here.
    #[command(after_help = "Example:\n  nvo overlay route set ethernet 3 2\n  \
                      nvo overlay route set ethernet 0xff000001 1 2 4")]
    Set {
        /// ethernet, ipv4 or ipv6 (or 7, 4, 6).
        #[arg(value_parser = parse_app)]
        app: OverlayApp,
        /// The destination node ID.
        #[arg(value_parser = parse_node_id)]
        dst: u32,
        /// The next-hop node IDs, one or more.
        #[arg(required = true, num_args = 1.., value_parser = parse_node_id, value_name = "NEXTHOP")]
        next_hops: Vec<u32>,
    },
    /// Delete a destination's route (it becomes its own next hop again).
    #[command(after_help = "Example:\n  nvo overlay route del ethernet 3")]
    Del {
        /// ethernet, ipv4 or ipv6 (or 7, 4, 6).
        #[arg(value_parser = parse_app)]
        app: OverlayApp,
        /// The destination node ID.
        #[arg(value_parser = parse_node_id)]
        dst: u32,
    },
}

/// A change to one locator of a node's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocatorEdit {
    /// Append a locator that is not there yet.
    Add(LocatorSpec),
    /// Remove the locator with this address.
    Del(IpAddr),
    /// Give the locator with this address a new weight.
    Weight(IpAddr, u16),
}

/// Applies `edit` to `node`'s locators; the error, one line, says why it does not fit.
pub fn edit_locators(
    node: u32,
    locators: &mut Vec<LocatorSpec>,
    edit: LocatorEdit,
) -> Result<(), OverlayError> {
    let addr = match edit {
        LocatorEdit::Add(l) => l.addr,
        LocatorEdit::Del(a) | LocatorEdit::Weight(a, _) => a,
    };
    let at = locators.iter().position(|l| l.addr == addr);
    match (edit, at) {
        (LocatorEdit::Add(_), Some(i)) => Err(OverlayError::LocatorExists {
            node,
            existing: locators[i],
        }),
        (LocatorEdit::Add(l), None) => {
            locators.push(l);
            Ok(())
        }
        (LocatorEdit::Del(_), Some(i)) => {
            locators.remove(i);
            Ok(())
        }
        (LocatorEdit::Weight(_, w), Some(i)) => {
            locators[i].weight = w;
            Ok(())
        }
        (LocatorEdit::Del(_) | LocatorEdit::Weight(..), None) => Err(OverlayError::NoLocator {
            node,
            addr,
            locators: locators.clone(),
        }),
    }
}

/// A locator as typed and shown, `ADDR@WEIGHT`.
pub fn locator(l: &LocatorSpec) -> String {
    format!("{}@{}", l.addr, l.weight)
}

fn locator_list(locators: &[LocatorSpec]) -> String {
    let items: Vec<String> = locators.iter().map(locator).collect();
    list(&items)
}

/// Runs `nvo overlay ...`.
pub fn overlay(client: &Client, format: Format, cmd: OverlayCmd) -> Result<(), CliError> {
    match cmd {
        OverlayCmd::Show => show_own(client, format),
        OverlayCmd::Id(IdCmd::Set { id }) => {
            let body = OverlayInfo {
                node_id: id,
                ..Default::default()
            };
            let answer = client.put::<_, Value>("/v1/overlay", &body)?;
            done(format, answer, format!("overlay node id set to {id}"))
        }
        OverlayCmd::Locator(c) => {
            let own = own_id(client)?;
            let edit = match c {
                LocatorCmd::Add { addr, weight } => LocatorEdit::Add(LocatorSpec { addr, weight }),
                LocatorCmd::Del { addr } => LocatorEdit::Del(addr),
                LocatorCmd::Weight { addr, weight } => LocatorEdit::Weight(addr, weight),
            };
            change_locators(client, format, own, edit)
        }
        OverlayCmd::Node(c) => node(client, format, c),
        OverlayCmd::Route(c) => route(client, format, c),
        OverlayCmd::Apps => apps(format),
    }
}

fn node(client: &Client, format: Format, cmd: NodeCmd) -> Result<(), CliError> {
    match cmd {
        NodeCmd::List => show(
            format,
            client.get("/v1/overlay/nodes")?,
            |n: &Vec<OverlayNode>| nodes_view(n).to_string(),
        ),
        NodeCmd::Show { id } => show(
            format,
            client.get(&format!("/v1/overlay/nodes/{id}"))?,
            |n: &OverlayNode| nodes_view(std::slice::from_ref(n)).to_string(),
        ),
        NodeCmd::Set { id, locators } => {
            let message = format!("node {id}: locators {}", locator_list(&locators));
            let answer = client.put::<_, Value>(
                &format!("/v1/overlay/nodes/{id}"),
                &NodeLocators { locators },
            )?;
            done(format, answer, message)
        }
        NodeCmd::Weight { id, addr, weight } => {
            change_locators(client, format, id, LocatorEdit::Weight(addr, weight))
        }
        NodeCmd::Del { id } => {
            client.delete(&format!("/v1/overlay/nodes/{id}"))?;
            done(format, Value::Null, format!("node {id} deleted"))
        }
    }
}

fn route(client: &Client, format: Format, cmd: OverlayRouteCmd) -> Result<(), CliError> {
    match cmd {
        OverlayRouteCmd::List { app } => {
            let apps = app.map_or(OverlayApp::ALL.to_vec(), |a| vec![a]);
            let mut all = Vec::new();
            for a in apps {
                let answer: Vec<Value> = client.get(&format!("/v1/overlay/routes/{a}"))?;
                all.extend(answer);
            }
            show(format, Value::Array(all), |r: &Vec<OverlayRoute>| {
                routes_view(r).to_string()
            })
        }
        OverlayRouteCmd::Set {
            app,
            dst,
            next_hops,
        } => {
            let message = format!("{app} route to {dst} via {}", list(&next_hops));
            let answer = client.put::<_, Value>(
                &format!("/v1/overlay/routes/{app}/{dst}"),
                &RouteNextHops { next_hops },
            )?;
            done(format, answer, message)
        }
        OverlayRouteCmd::Del { app, dst } => {
            client.delete(&format!("/v1/overlay/routes/{app}/{dst}"))?;
            done(format, Value::Null, format!("{app} route to {dst} deleted"))
        }
    }
}

/// `nvo overlay show`: the own ID and counters, with the own node's locators added; `-o json`
/// prints `/v1/overlay`'s answer with a `locators` member.
fn show_own(client: &Client, format: Format) -> Result<(), CliError> {
    let mut answer: Value = client.get("/v1/overlay")?;
    let info: OverlayInfo = serde_json::from_value(answer.clone())
        .map_err(|e| ClientError::Protocol(format!("GET /v1/overlay: {e}")))?;
    let locators = node_locators(client, info.node_id)?;
    match format {
        Format::Json => {
            if let Value::Object(map) = &mut answer {
                map.insert("locators".to_owned(), serde_json::to_value(&locators)?);
            }
            print_json(&answer)
        }
        Format::Text => {
            print!("{}", own_view(&info, &locators));
            Ok(())
        }
    }
}

/// `nvo overlay apps`: fixed, so it needs no nvod.
fn apps(format: Format) -> Result<(), CliError> {
    #[derive(Serialize)]
    struct App {
        name: &'static str,
        number: u8,
    }
    let apps: Vec<App> = OverlayApp::ALL
        .iter()
        .map(|a| App {
            name: a.name(),
            number: a.number(),
        })
        .collect();
    match format {
        Format::Json => print_json(&apps),
        Format::Text => {
            let mut t = Table::new(&["APP", "NUMBER", "PAYLOAD"]).right(1);
            for (a, what) in apps
                .iter()
                .zip(["Ethernet frames", "IPv4 packets", "IPv6 packets"])
            {
                t.row([a.name.to_owned(), a.number.to_string(), what.to_owned()]);
            }
            print!("{t}");
            Ok(())
        }
    }
}

fn own_id(client: &Client) -> Result<u32, CliError> {
    let info: OverlayInfo = client.get("/v1/overlay")?;
    Ok(info.node_id)
}

/// A node's locators; a node nvod does not know has none yet.
fn node_locators(client: &Client, id: u32) -> Result<Vec<LocatorSpec>, CliError> {
    match client.get::<OverlayNode>(&format!("/v1/overlay/nodes/{id}")) {
        Ok(n) => Ok(n.locators),
        Err(ClientError::Api { status: 404, .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Reads a node's locators, applies `edit` and writes them back.
fn change_locators(
    client: &Client,
    format: Format,
    id: u32,
    edit: LocatorEdit,
) -> Result<(), CliError> {
    let mut locators = node_locators(client, id)?;
    edit_locators(id, &mut locators, edit)?;
    let message = format!("node {id}: locators {}", locator_list(&locators));
    let answer = client.put::<_, Value>(
        &format!("/v1/overlay/nodes/{id}"),
        &NodeLocators { locators },
    )?;
    done(format, answer, message)
}

/// `PUT path` with a JSON body (the client has no `put` of its own).
/// `nvo overlay show` as text.
pub fn own_view(info: &OverlayInfo, locators: &[LocatorSpec]) -> Table {
    let mut t = pairs([
        ("node_id", info.node_id.to_string()),
        ("locators", locator_list(locators)),
    ]);
    for (name, value) in &info.counters {
        t.row([name.clone(), value.to_string()]);
    }
    t
}

/// `nvo overlay node list` and `show`.
pub fn nodes_view(nodes: &[OverlayNode]) -> Table {
    let mut t = Table::new(&["NODE", "OWN", "LOCATORS"]).right(0);
    for n in nodes {
        let own = if n.own { "own" } else { "-" };
        t.row([
            n.node_id.to_string(),
            own.to_owned(),
            locator_list(&n.locators),
        ]);
    }
    t
}

/// `nvo overlay route list`.
pub fn routes_view(routes: &[OverlayRoute]) -> Table {
    let mut t = Table::new(&["APP", "DST", "NEXT_HOPS"]).right(1);
    for r in routes {
        t.row([r.app.clone(), r.dst.to_string(), list(&r.next_hops)]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(addr: &str, weight: u16) -> LocatorSpec {
        LocatorSpec {
            addr: addr.parse().unwrap(),
            weight,
        }
    }

    #[test]
    fn node_ids_are_decimal_or_hex_and_never_zero() {
        assert_eq!(parse_node_id("7"), Ok(7));
        assert_eq!(parse_node_id("0xff000001"), Ok(0xff00_0001));
        assert_eq!(parse_node_id("4294967295"), Ok(u32::MAX));
        for (bad, want) in [
            ("0", "0 is not a node"),
            ("0x0", "0 is not a node"),
            ("4294967296", "not a node id"),
            ("-1", "not a node id"),
            ("1.2.3.4", "not a node id"),
        ] {
            let e = parse_node_id(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn locators_are_addr_at_weight() {
        assert_eq!(parse_locator("192.0.2.2"), Ok(loc("192.0.2.2", 1)));
        assert_eq!(parse_locator("fd00::2@3"), Ok(loc("fd00::2", 3)));
        assert_eq!(parse_locator("192.0.2.2@0"), Ok(loc("192.0.2.2", 0)));
        for (bad, want) in [
            ("192.0.2.2@1001", "weight \"1001\" is not 0 to 1000"),
            ("192.0.2.2@x", "weight \"x\""),
            ("192.0.2.2:3", "ADDR[@WEIGHT]"),
            ("host@2", "\"host\" is not an IP address"),
        ] {
            let e = parse_locator(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
        assert_eq!(locator(&loc("fd00::2", 3)), "fd00::2@3");
    }

    #[test]
    fn applications_by_name_or_number() {
        assert_eq!(parse_app("ethernet"), Ok(OverlayApp::Ethernet));
        assert_eq!(parse_app("6"), Ok(OverlayApp::Ipv6));
        assert!(parse_app("mpls")
            .unwrap_err()
            .to_string()
            .contains("ethernet (7)"));
    }

    #[test]
    fn locator_edits_refuse_what_does_not_fit() {
        let mut l = vec![loc("192.0.2.1", 1)];
        edit_locators(1, &mut l, LocatorEdit::Add(loc("fd00::1", 3))).unwrap();
        assert_eq!(l, [loc("192.0.2.1", 1), loc("fd00::1", 3)]);
        let e = edit_locators(1, &mut l, LocatorEdit::Add(loc("fd00::1", 2)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "node 1 already has locator fd00::1@3; change its weight with `weight`"
        );
        edit_locators(
            1,
            &mut l,
            LocatorEdit::Weight("fd00::1".parse().unwrap(), 0),
        )
        .unwrap();
        assert_eq!(l[1].weight, 0);
        edit_locators(1, &mut l, LocatorEdit::Del("192.0.2.1".parse().unwrap())).unwrap();
        assert_eq!(l, [loc("fd00::1", 0)]);
        let e = edit_locators(1, &mut l, LocatorEdit::Del("192.0.2.9".parse().unwrap()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "node 1 has no locator 192.0.2.9; its locators: fd00::1@0"
        );
        let mut none = Vec::new();
        let e = edit_locators(
            2,
            &mut none,
            LocatorEdit::Weight("192.0.2.9".parse().unwrap(), 1),
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("its locators: -"), "{e}");
    }

    #[test]
    fn views() {
        let info = OverlayInfo {
            node_id: 1,
            counters: [("relayed".to_owned(), 5)].into_iter().collect(),
        };
        assert_eq!(
            own_view(&info, &[loc("192.0.2.1", 3), loc("fd00::1", 1)]).to_string(),
            "node_id   1\nlocators  192.0.2.1@3,fd00::1@1\nrelayed   5\n"
        );
        let nodes = [
            OverlayNode {
                node_id: 1,
                locators: vec![loc("192.0.2.1", 1)],
                own: true,
            },
            OverlayNode {
                node_id: 12,
                locators: vec![],
                own: false,
            },
        ];
        assert_eq!(
            nodes_view(&nodes).to_string(),
            "NODE  OWN  LOCATORS\n   1  own  192.0.2.1@1\n  12  -    -\n"
        );
        let routes = [OverlayRoute {
            app: "ethernet".into(),
            dst: 3,
            next_hops: vec![2, 4],
        }];
        assert_eq!(
            routes_view(&routes).to_string(),
            "APP       DST  NEXT_HOPS\nethernet    3  2,4\n"
        );
    }
}
