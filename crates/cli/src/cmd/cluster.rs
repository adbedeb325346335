//! Cluster mode's commands (issue 19): `nvo --etcd URL[,URL...] network add|del|list|show`
//! and `profile add|del|list|show` write and read the network and profile objects in etcd
//! directly (no nvod involved), and `nvo cluster status` asks the local nvod what it made of
//! them (`GET /v1/cluster`).
//!
//! `network add` and `profile add` build the same body as the local commands (the profile
//! from the same file reader) and run it through [`nvo_cluster::parse_network`] or
//! [`nvo_cluster::parse_profile`], the very check nvod runs on what it reads: an object it
//! refuses is never written. What needs an nvod (the profile exists, the MTU fits its
//! underlay) is checked by each nvod, which skips the object and says why in `nvo cluster
//! status`.

use clap::Subcommand;
use nvo_api::{Bum, Client, ClusterStatus, NetworkSpec, ProfileInfo, ProfileSpec};
use nvo_cluster::{Access, Key, Layout};
use serde::Serialize;
use serde_json::{json, Value};

use super::api::{done, network_spec, show, NetworkCmd};
use super::profile::{read_spec, ProfileCmd};
use super::{print_json, view, CliError, Format};
use crate::table::{list, pairs, Table};

/// `nvo cluster`.
#[derive(Debug, Subcommand)]
pub enum ClusterCmd {
    /// Show what the local nvod made of the cluster: connected to etcd or not, the revision
    /// applied, the registered hosts, the networks it made from the cluster, and the objects it
    /// skips with why (invalid, refused by its checks, or blocked by attached ports).
    #[command(after_help = "Example:\n  nvo cluster status\n  nvo -o json cluster status")]
    Status,
}

/// Where `--etcd` points.
#[derive(Debug, Clone)]
pub struct Etcd {
    /// The endpoints.
    pub endpoints: Vec<String>,
    /// The key prefix.
    pub prefix: String,
}

/// `nvo cluster status`.
pub fn cluster(client: &Client, format: Format, cmd: ClusterCmd) -> Result<(), CliError> {
    match cmd {
        ClusterCmd::Status => show(format, client.get("/v1/cluster")?, |s: &ClusterStatus| {
            status_view(s)
        }),
    }
}

/// The text of `nvo cluster status`.
pub fn status_view(s: &ClusterStatus) -> String {
    if !s.enabled {
        return "cluster mode is off (no [cluster] table in nvod's config)\n".to_owned();
    }
    let mut out = pairs([
        ("endpoints", list(&s.endpoints)),
        ("prefix", s.prefix.clone()),
        ("name", s.name.clone()),
        (
            "connected",
            if s.connected { "yes" } else { "no" }.to_owned(),
        ),
        ("revision", s.revision.to_string()),
        (
            "last_error",
            s.last_error.clone().unwrap_or_else(|| "-".to_owned()),
        ),
        ("networks", list(&s.networks)),
        ("profiles", list(&s.profiles)),
        ("overlay", overlay_cell(s)),
    ])
    .to_string();
    let mut hosts = Table::new(&["HOST", "LOCATOR", "NODE_ID"]).right(2);
    for h in &s.hosts {
        hosts.row([h.name.clone(), h.locator.to_string(), h.node_id.to_string()]);
    }
    out.push('\n');
    out.push_str(&hosts.to_string());
    if s.skipped.is_empty() {
        out.push_str("\nno skipped objects\n");
    } else {
        let mut skipped = Table::new(&["SKIPPED KEY", "REASON"]);
        for k in &s.skipped {
            skipped.row([k.key.clone(), k.error.clone()]);
        }
        out.push('\n');
        out.push_str(&skipped.to_string());
    }
    out
}

impl Etcd {
    /// The key layout and the access of these endpoints.
    pub fn open(&self) -> Result<(Layout, Access), CliError> {
        let layout = Layout::new(&self.prefix).map_err(CliError::Cluster)?;
        let access = Access {
            endpoints: self.endpoints.clone(),
            ..Access::default()
        };
        Ok((layout, access))
    }
}

/// The owned overlay entries in one cell: `nodes 5,6; routes ipv4 9`, "-" when none.
fn overlay_cell(s: &ClusterStatus) -> String {
    let mut parts = Vec::new();
    if !s.overlay_nodes.is_empty() {
        parts.push(format!("nodes {}", list(&s.overlay_nodes)));
    }
    if !s.overlay_routes.is_empty() {
        parts.push(format!("routes {}", list(&s.overlay_routes)));
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("; ")
    }
}

/// `nvo --etcd ... network ...`.
pub fn network(etcd: &Etcd, format: Format, cmd: NetworkCmd) -> Result<(), CliError> {
    let (layout, access) = etcd.open()?;
    match cmd {
        NetworkCmd::Add(args) => {
            let spec = network_spec(args);
            let (key, body) = object(&layout, &spec)?;
            nvo_cluster::store::put(&access, &key, body)?;
            done(
                format,
                serde_json::to_value(&spec)?,
                format!("wrote network {} to {key}", spec.vni),
            )
        }
        NetworkCmd::Del { vni } => {
            let key = layout.network(vni);
            if !nvo_cluster::store::delete(&access, &key)? {
                return Err(CliError::Cluster(format!(
                    "no network {vni} in the cluster (nothing at {key})"
                )));
            }
            done(format, Value::Null, format!("deleted {key}"))
        }
        NetworkCmd::List => {
            let objects = nvo_cluster::store::list(&access, &layout.networks())?;
            let rows = rows(&layout, &objects);
            match format {
                Format::Json => print_json(&rows_json(&rows, "network")),
                Format::Text => {
                    print!("{}", list_view(&rows));
                    Ok(())
                }
            }
        }
        NetworkCmd::Show { vni } => {
            let key = layout.network(vni);
            let objects = nvo_cluster::store::list(&access, &key)?;
            let Some((_, bytes)) = objects.iter().find(|(k, _)| *k == key) else {
                return Err(CliError::Cluster(format!(
                    "no network {vni} in the cluster (nothing at {key})"
                )));
            };
            let row = rows(&layout, &[(key.clone(), bytes.clone())]);
            match format {
                Format::Json => print_json(&rows_json(&row, "network")[0]),
                Format::Text => {
                    print!("{}", list_view(&row));
                    Ok(())
                }
            }
        }
    }
}

/// The key and body of a network object, checked as nvod checks what it reads.
pub fn object(layout: &Layout, spec: &NetworkSpec) -> Result<(String, Vec<u8>), CliError> {
    let body = serde_json::to_vec(spec)?;
    nvo_cluster::parse_network(spec.vni, &body).map_err(|e| {
        CliError::Cluster(format!(
            "network {} refused, nothing written: {e}",
            spec.vni
        ))
    })?;
    Ok((layout.network(spec.vni), body))
}

/// `nvo --etcd ... profile ...`: the profile objects; key bindings stay per nvod.
pub fn profile(etcd: &Etcd, format: Format, cmd: ProfileCmd) -> Result<(), CliError> {
    let (layout, access) = etcd.open()?;
    match cmd {
        ProfileCmd::Add { file } => {
            let spec = read_spec(&file)?;
            let (key, body) = profile_object(&layout, &spec)?;
            nvo_cluster::store::put(&access, &key, body)?;
            done(
                format,
                serde_json::to_value(&spec)?,
                format!("wrote profile {} to {key}", spec.name),
            )
        }
        ProfileCmd::Del { name } => {
            let key = layout.profile(&name);
            if !nvo_cluster::store::delete(&access, &key)? {
                return Err(CliError::Cluster(format!(
                    "no profile {name:?} in the cluster (nothing at {key})"
                )));
            }
            done(format, Value::Null, format!("deleted {key}"))
        }
        ProfileCmd::List => {
            let objects = nvo_cluster::store::list(&access, &layout.profiles())?;
            let rows = profile_rows(&layout, &objects);
            match format {
                Format::Json => print_json(&rows_json(&rows, "profile")),
                Format::Text => {
                    print!("{}", profile_list_view(&rows));
                    Ok(())
                }
            }
        }
        ProfileCmd::Show { name } => {
            let key = layout.profile(&name);
            let objects = nvo_cluster::store::list(&access, &key)?;
            let Some((_, bytes)) = objects.iter().find(|(k, _)| *k == key) else {
                return Err(CliError::Cluster(format!(
                    "no profile {name:?} in the cluster (nothing at {key})"
                )));
            };
            let row = profile_rows(&layout, &[(key.clone(), bytes.clone())]);
            match format {
                Format::Json => print_json(&rows_json(&row, "profile")[0]),
                Format::Text => {
                    print!("{}", profile_list_view(&row));
                    if let Some((_, Ok(spec))) = row.first() {
                        print!("\n{}", view::profile(&user(spec)));
                    }
                    Ok(())
                }
            }
        }
        ProfileCmd::Keys { .. } | ProfileCmd::Bind { .. } | ProfileCmd::Unbind { .. } => {
            Err(CliError::Cluster(
                "key bindings are not cluster objects: bind keys on each host's nvod (nvo \
                 profile keys|bind|unbind without --etcd)"
                    .to_owned(),
            ))
        }
    }
}

/// The key and body of a profile object, checked as nvod checks what it reads.
pub fn profile_object(layout: &Layout, spec: &ProfileSpec) -> Result<(String, Vec<u8>), CliError> {
    let refused = |e: String| {
        CliError::Cluster(format!(
            "profile {:?} refused, nothing written: {e}",
            spec.name
        ))
    };
    if spec.name.is_empty() || spec.name.contains('/') {
        return Err(refused(format!("{:?} cannot be a key segment", spec.name)));
    }
    let body = serde_json::to_vec(spec)?;
    nvo_cluster::parse_profile(&spec.name, &body).map_err(|e| refused(e.to_string()))?;
    Ok((layout.profile(&spec.name), body))
}

fn user(spec: &ProfileSpec) -> ProfileInfo {
    ProfileInfo {
        builtin: false,
        spec: spec.clone(),
    }
}

/// One object of a list: its key, and the object or why it is invalid.
type Row<T> = (String, Result<T, String>);

/// The objects `parse` recognises among `objects` (by their key), parsed or with why not.
fn object_rows<T>(
    layout: &Layout,
    objects: &[(String, Vec<u8>)],
    parse: impl Fn(Key, &[u8]) -> Option<Result<T, String>>,
) -> Vec<Row<T>> {
    objects
        .iter()
        .filter_map(|(key, bytes)| Some((key.clone(), parse(layout.classify(key), bytes)?)))
        .collect()
}

/// `-o json` of a list: `{"key", FIELD: object}` or `{"key", "error"}` per object.
fn rows_json<T: Serialize>(rows: &[Row<T>], field: &str) -> Vec<Value> {
    rows.iter()
        .map(|(key, parsed)| match parsed {
            Ok(object) => json!({"key": key, field: object}),
            Err(e) => json!({"key": key, "error": e}),
        })
        .collect()
}

/// The table of invalid objects with why, after a blank line; empty when all are valid.
fn invalid_view<T>(rows: &[Row<T>]) -> String {
    let mut invalid = Table::new(&["INVALID KEY", "REASON"]);
    for (key, parsed) in rows {
        if let Err(e) = parsed {
            invalid.row([key.clone(), e.clone()]);
        }
    }
    if rows.iter().any(|(_, p)| p.is_err()) {
        format!("\n{invalid}")
    } else {
        String::new()
    }
}

/// One object of `profile list`.
type ProfileRow = Row<ProfileSpec>;

fn profile_rows(layout: &Layout, objects: &[(String, Vec<u8>)]) -> Vec<ProfileRow> {
    object_rows(layout, objects, |key, bytes| match key {
        Key::Profile(name) => {
            Some(nvo_cluster::parse_profile(&name, bytes).map_err(|e| e.to_string()))
        }
        Key::BadProfile(s) => Some(Err(nvo_cluster::ObjectError::BadProfileKey(s).to_string())),
        _ => None,
    })
}

/// The text of `nvo --etcd ... profile list`: the table of `nvo profile list`, invalid
/// objects with why.
pub fn profile_list_view(rows: &[ProfileRow]) -> String {
    let valid: Vec<ProfileInfo> = rows
        .iter()
        .filter_map(|(_, p)| p.as_ref().ok().map(user))
        .collect();
    format!("{}{}", view::profiles(&valid), invalid_view(rows))
}

/// One object of `network list`.
type NetworkRow = Row<NetworkSpec>;

fn rows(layout: &Layout, objects: &[(String, Vec<u8>)]) -> Vec<NetworkRow> {
    object_rows(layout, objects, |key, bytes| match key {
        Key::Network(vni) => {
            Some(nvo_cluster::parse_network(vni, bytes).map_err(|e| e.to_string()))
        }
        Key::BadNetwork(s) => Some(Err(nvo_cluster::ObjectError::BadKey(s).to_string())),
        _ => None,
    })
}

/// The text of `nvo --etcd ... network list`: VNI, encap, BUM, flood; invalid objects with why.
pub fn list_view(rows: &[NetworkRow]) -> String {
    let mut t = Table::new(&["VNI", "ENCAP", "MTU", "BUM", "FLOOD"]).right(0);
    for (_, parsed) in rows {
        if let Ok(n) = parsed {
            t.row([
                n.vni.to_string(),
                n.encap.clone().unwrap_or_else(|| "vxlan".to_owned()),
                n.mtu
                    .map_or_else(|| "default".to_owned(), |m| m.to_string()),
                match n.bum.unwrap_or_default() {
                    Bum::HeadEnd => "head-end".to_owned(),
                    Bum::Multicast { group } => format!("multicast {group}"),
                    Bum::Overlay { node } => format!("overlay tree {node}"),
                },
                list(n.flood.as_deref().unwrap_or_default()),
            ]);
        }
    }
    format!("{t}{}", invalid_view(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::api::NetworkAddArgs;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Add {
        #[command(flatten)]
        args: NetworkAddArgs,
    }

    fn spec(args: &[&str]) -> NetworkSpec {
        let mut argv = vec!["add"];
        argv.extend_from_slice(args);
        network_spec(Add::try_parse_from(argv).unwrap().args)
    }

    fn layout() -> Layout {
        Layout::new("/nvo/").unwrap()
    }

    #[test]
    fn add_writes_the_body_of_post_networks_at_its_key() {
        let s = spec(&["100", "--flood", "192.0.2.2", "--mtu", "1400"]);
        let (key, body) = object(&layout(), &s).unwrap();
        assert_eq!(key, "/nvo/networks/100");
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"vni": 100, "mtu": 1400, "flood": ["192.0.2.2"]})
        );
    }

    #[test]
    fn add_refuses_what_nvod_would_skip() {
        for args in [
            &["100", "--mtu", "100"][..],
            &["100", "--mtu", "65500"],
            &["100", "--multicast", "10.0.0.1"],
            &["100", "--flood", "192.0.2.2", "--flood", "192.0.2.2"],
            &["100", "--max-learned", "10", "--max-learned-per-port", "11"],
            &["100", "--no-learning", "--tunnel-learning"],
        ] {
            let parsed = Add::try_parse_from(std::iter::once("add").chain(args.iter().copied()));
            let Ok(parsed) = parsed else { continue };
            let e = object(&layout(), &network_spec(parsed.args)).unwrap_err();
            assert!(
                e.to_string().contains("refused, nothing written"),
                "{args:?}: {e}"
            );
        }
    }

    #[test]
    fn list_shows_valid_and_invalid_objects() {
        let objects = vec![
            (
                "/nvo/networks/100".to_owned(),
                br#"{"vni": 100, "flood": ["192.0.2.2"]}"#.to_vec(),
            ),
            ("/nvo/networks/7".to_owned(), b"garbage".to_vec()),
            ("/nvo/hosts/h1".to_owned(), b"{}".to_vec()),
        ];
        let rows = rows(&layout(), &objects);
        assert_eq!(rows.len(), 2);
        let text = list_view(&rows);
        assert!(
            text.contains("100  vxlan  default  head-end  192.0.2.2"),
            "{text}"
        );
        assert!(
            text.contains("/nvo/networks/7  not a network object"),
            "{text}"
        );
        let json = rows_json(&rows, "network");
        assert_eq!(json[0]["network"]["vni"], 100);
        assert!(json[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("not a network object"));
    }

    fn mytun() -> ProfileSpec {
        serde_json::from_value(json!({
            "name": "mytun", "udp_port": 7777, "template": "0800 0000 0000 0000",
            "vni": {"offset": 4, "len": 3}
        }))
        .unwrap()
    }

    #[test]
    fn profile_add_writes_the_body_of_post_profiles_at_its_key() {
        let (key, body) = profile_object(&layout(), &mytun()).unwrap();
        assert_eq!(key, "/nvo/profiles/mytun");
        let back: ProfileSpec = serde_json::from_slice(&body).unwrap();
        assert_eq!(back, mytun());
    }

    #[test]
    fn profile_add_refuses_what_nvod_would_skip() {
        for (change, words) in [
            (json!({"name": "vxlan"}), "vxlan"),
            (json!({"udp_port": null, "ip_protocol": 17}), "17"),
            (json!({"template": "zz"}), "not hex"),
            (json!({"name": "a/b"}), "key segment"),
            (json!({"name": ""}), "key segment"),
        ] {
            let mut value = serde_json::to_value(mytun()).unwrap();
            for (k, v) in change.as_object().unwrap() {
                value[k] = v.clone();
            }
            let spec: ProfileSpec = serde_json::from_value(value).unwrap();
            let e = profile_object(&layout(), &spec).unwrap_err().to_string();
            assert!(e.contains("refused, nothing written"), "{change}: {e}");
            assert!(e.contains(words), "{change}: {e}");
        }
    }

    #[test]
    fn profile_list_shows_valid_and_invalid_objects() {
        let body = serde_json::to_vec(&mytun()).unwrap();
        let objects = vec![
            ("/nvo/profiles/mytun".to_owned(), body),
            ("/nvo/profiles/bad".to_owned(), b"garbage".to_vec()),
            ("/nvo/networks/100".to_owned(), br#"{"vni": 100}"#.to_vec()),
        ];
        let rows = profile_rows(&layout(), &objects);
        assert_eq!(rows.len(), 2);
        let text = profile_list_view(&rows);
        assert!(
            text.contains("mytun") && text.contains("udp 7777"),
            "{text}"
        );
        assert!(
            text.contains("/nvo/profiles/bad  not a profile object"),
            "{text}"
        );
        let json = rows_json(&rows, "profile");
        assert_eq!(json[0]["profile"]["name"], "mytun");
        assert!(json[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("not a profile object"));
    }

    #[test]
    fn status_lists_skipped_objects_with_reasons() {
        let s: ClusterStatus = serde_json::from_value(json!({
            "enabled": true, "endpoints": ["http://10.1.0.1:2379"], "prefix": "/nvo/",
            "name": "h1", "connected": false, "revision": 42, "last_error": "etcd gone",
            "networks": [100, 200], "profiles": ["mytun"], "overlay_nodes": [5],
            "overlay_routes": ["ipv4 9"],
            "hosts": [{"name": "h1", "locator": "10.100.0.1", "node_id": 1}],
            "skipped": [{"key": "/nvo/networks/7", "error": "not a network object: x"}]
        }))
        .unwrap();
        let text = status_view(&s);
        for want in [
            "connected   no\n",
            "revision    42\n",
            "last_error  etcd gone\n",
            "networks    100,200\n",
            "profiles    mytun\n",
            "overlay     nodes 5; routes ipv4 9\n",
            "h1    10.100.0.1        1\n",
            "/nvo/networks/7  not a network object: x\n",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        let off = status_view(&ClusterStatus::default());
        assert!(off.contains("cluster mode is off"), "{off}");
    }
}
