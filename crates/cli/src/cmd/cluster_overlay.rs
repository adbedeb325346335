//! `nvo --etcd URL overlay node set|del|list|show` and `overlay route set|del|list`: the
//! overlay's nodes and routes as cluster objects in etcd (issue 19), each the body of the
//! local command's PUT, checked with [`nvo_cluster::overlay`]'s parsers — the ones nvod runs
//! on what it reads — before anything is written.

use nvo_api::{NodeLocators, OverlayApp, RouteNextHops};
use nvo_cluster::overlay::{parse_node, parse_route};
use nvo_cluster::{Key, Layout};
use serde_json::{json, Value};

use super::api::done;
use super::cluster::Etcd;
use super::overlay::{NodeCmd, OverlayCmd, OverlayRouteCmd};
use super::{print_json, CliError, Format};
use crate::table::{list, Table};

/// `nvo --etcd ... overlay ...`.
pub fn overlay(etcd: &Etcd, format: Format, cmd: OverlayCmd) -> Result<(), CliError> {
    let (layout, access) = etcd.open()?;
    let not_cluster = || {
        CliError::Cluster(
            "only `overlay node set|del|list|show` and `overlay route set|del|list` are \
             cluster objects; this node's ID and own locators are set on each host's nvod \
             (without --etcd)"
                .to_owned(),
        )
    };
    match cmd {
        OverlayCmd::Node(NodeCmd::Set { id, locators }) => {
            let body = serde_json::to_vec(&NodeLocators { locators })?;
            parse_node(id, &body).map_err(|e| refused(&e))?;
            let key = layout.overlay_node(id);
            nvo_cluster::store::put(&access, &key, body)?;
            done(
                format,
                json!({"key": key}),
                format!("wrote node {id} to {key}"),
            )
        }
        OverlayCmd::Node(NodeCmd::Del { id }) => delete(&access, format, layout.overlay_node(id)),
        OverlayCmd::Node(NodeCmd::List) => listing(&access, format, &layout, None),
        OverlayCmd::Node(NodeCmd::Show { id }) => {
            let key = layout.overlay_node(id);
            let objects = nvo_cluster::store::list(&access, &key)?;
            let exact: Vec<_> = objects.into_iter().filter(|(k, _)| *k == key).collect();
            if exact.is_empty() {
                return Err(CliError::Cluster(format!(
                    "no overlay node {id} in the cluster (nothing at {key})"
                )));
            }
            show(format, &rows(&layout, &exact))
        }
        OverlayCmd::Route(OverlayRouteCmd::Set {
            app,
            dst,
            next_hops,
        }) => {
            let body = serde_json::to_vec(&RouteNextHops { next_hops })?;
            parse_route(app.name(), dst, &body).map_err(|e| refused(&e))?;
            let key = layout.overlay_route(app.name(), dst);
            nvo_cluster::store::put(&access, &key, body)?;
            done(
                format,
                json!({"key": key}),
                format!("wrote {app} route to {dst} to {key}"),
            )
        }
        OverlayCmd::Route(OverlayRouteCmd::Del { app, dst }) => {
            delete(&access, format, layout.overlay_route(app.name(), dst))
        }
        OverlayCmd::Route(OverlayRouteCmd::List { app }) => {
            let only = app.map(|a: OverlayApp| format!("{}routes/{}/", layout.overlay(), a.name()));
            listing(&access, format, &layout, only)
        }
        _ => Err(not_cluster()),
    }
}

fn refused(e: &nvo_cluster::ObjectError) -> CliError {
    CliError::Cluster(format!("refused, nothing written: {e}"))
}

fn delete(access: &nvo_cluster::Access, format: Format, key: String) -> Result<(), CliError> {
    if !nvo_cluster::store::delete(access, &key)? {
        return Err(CliError::Cluster(format!(
            "nothing at {key} in the cluster"
        )));
    }
    done(format, Value::Null, format!("deleted {key}"))
}

/// Lists the overlay objects under `under` (default: all of them).
fn listing(
    access: &nvo_cluster::Access,
    format: Format,
    layout: &Layout,
    under: Option<String>,
) -> Result<(), CliError> {
    let under = under.unwrap_or_else(|| layout.overlay());
    let objects = nvo_cluster::store::list(access, &under)?;
    show(format, &rows(layout, &objects))
}

fn show(format: Format, rows: &[Value]) -> Result<(), CliError> {
    match format {
        Format::Json => print_json(&rows),
        Format::Text => {
            print!("{}", view(rows));
            Ok(())
        }
    }
}

/// Each overlay object: `{"key", "node"|"route"|"error"}`.
fn rows(layout: &Layout, objects: &[(String, Vec<u8>)]) -> Vec<Value> {
    objects
        .iter()
        .filter_map(|(key, bytes)| match layout.classify(key) {
            Key::OverlayNode(id) => Some(match parse_node(id, bytes) {
                Ok(n) => json!({"key": key, "node": id, "locators": n.locators}),
                Err(e) => json!({"key": key, "error": e.to_string()}),
            }),
            Key::OverlayRoute(app, dst) => Some(match parse_route(&app, dst, bytes) {
                Ok(r) => json!({"key": key, "app": app, "dst": dst, "next_hops": r.next_hops}),
                Err(e) => json!({"key": key, "error": e.to_string()}),
            }),
            Key::BadOverlay(_) => Some(json!({"key": key, "error": "not an overlay key"})),
            _ => None,
        })
        .collect()
}

/// The text of the listings: one table of objects, one of invalid ones with why.
fn view(rows: &[Value]) -> String {
    let mut t = Table::new(&["KEY", "WHAT"]);
    let mut invalid = Table::new(&["INVALID KEY", "REASON"]);
    for r in rows {
        let key = r["key"].as_str().unwrap_or_default().to_owned();
        if let Some(e) = r["error"].as_str() {
            invalid.row([key, e.to_owned()]);
        } else if let Some(locs) = r["locators"].as_array() {
            let locs: Vec<String> = locs
                .iter()
                .map(|l| format!("{}@{}", l["addr"].as_str().unwrap_or("?"), l["weight"]))
                .collect();
            t.row([key, format!("node {} at {}", r["node"], list(&locs))]);
        } else {
            let hops: Vec<String> = r["next_hops"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Value::to_string)
                .collect();
            let app = r["app"].as_str().unwrap_or_default();
            t.row([
                key,
                format!("{app} route to {} via {}", r["dst"], list(&hops)),
            ]);
        }
    }
    let mut out = t.to_string();
    if rows.iter().any(|r| r.get("error").is_some()) {
        out.push('\n');
        out.push_str(&invalid.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_nodes_routes_and_invalid_objects() {
        let layout = Layout::new("/nvo/").unwrap();
        let objects = vec![
            (
                "/nvo/overlay/nodes/5".to_owned(),
                br#"{"locators": [{"addr": "10.0.0.5", "weight": 2}]}"#.to_vec(),
            ),
            (
                "/nvo/overlay/routes/ipv4/9".to_owned(),
                br#"{"next_hops": [5, 6]}"#.to_vec(),
            ),
            ("/nvo/overlay/nodes/7".to_owned(), b"garbage".to_vec()),
            ("/nvo/overlay/nodes/x".to_owned(), b"{}".to_vec()),
            ("/nvo/networks/1".to_owned(), b"{}".to_vec()),
        ];
        let rows = rows(&layout, &objects);
        assert_eq!(rows.len(), 4);
        let text = view(&rows);
        for want in [
            "/nvo/overlay/nodes/5        node 5 at 10.0.0.5@2",
            "/nvo/overlay/routes/ipv4/9  ipv4 route to 9 via 5,6",
            "/nvo/overlay/nodes/7  overlay node 7: ",
            "/nvo/overlay/nodes/x  not an overlay key",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
    }
}
