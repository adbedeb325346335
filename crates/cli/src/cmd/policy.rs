//! `nvo policy apply|show|del|trace` and `nvo endpoint label|list`: identity policy (issue 18)
//! on nvod's API (`/v1/networks/{vni}/policy`, `/v1/ports/{name}/labels`,
//! `/v1/networks/{vni}/labels/{ip}`, `/v1/labels`).
//!
//! A policy file holds one network per YAML document (JSON is YAML too); several documents,
//! separated by `---`, apply several networks in order, each on its own: the first refusal
//! stops, naming the document.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Subcommand;
use nvo_api::{Client, LabelMap, LabelsView, PolicyDoc, PolicyView, TraceAnswer, TraceRequest};
use serde::Deserialize;
use serde_json::Value;

use super::api::{done, segment, show, vni_parser};
use super::{print_json, CliError, Format};

/// `nvo policy ...`
#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Apply the policies of a YAML or JSON file (one network per document).
    ///
    /// Each document: `network: VNI`, `groups:` (name, id 1-65535 — the VXLAN-GBP group ID —
    /// and `match: {label: value}` or `selector: "app in (web,api),!legacy"`), `rules:` (from
    /// and to: a group name, a list of them or `any`; `proto`: tcp, udp, sctp, icmp, icmpv6,
    /// a number or any; `ports`: numbers or "N-M" ranges; `action`: allow or deny; `name`).
    /// Deny rules win over allow rules; traffic to a group a rule names as destination is
    /// denied unless a rule allows it; replies of allowed flows pass. A network's policy is
    /// replaced whole; established allowed connections survive the change.
    #[command(after_help = "Example file:\n  network: 100\n  groups:\n  \
                      - {name: web, id: 10, match: {app: web}}\n  \
                      - {name: db, id: 20, match: {app: db}}\n  rules:\n  \
                      - {from: web, to: db, proto: tcp, ports: [5432], action: allow}\n\n\
                      Example:\n  nvo policy apply tenants.yaml")]
    Apply {
        /// The file (YAML or JSON).
        file: PathBuf,
    },
    /// Show a network's policy (every network's without VNI) with per-rule and per-verdict
    /// packet counts.
    #[command(after_help = "Example:\n  nvo policy show\n  nvo -o json policy show 100")]
    Show {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: Option<u32>,
    },
    /// Delete a network's policy: its traffic is no longer filtered.
    #[command(after_help = "Example:\n  nvo policy del 100")]
    Del {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
    },
    /// Say what a network's policy does to a packet, and which rule decides.
    ///
    /// Identities come from labelled addresses, the ports where addresses were seen (ARP/ND),
    /// and group IDs learned from VXLAN-GBP headers; an address nvod knows none of is
    /// `unknown` (decided as in no group).
    #[command(
        after_help = "Example:\n  nvo policy trace 100 --from 10.0.0.1 --to 10.0.0.2 --proto tcp --dport 5432"
    )]
    Trace {
        /// The network's VNI.
        #[arg(value_parser = vni_parser())]
        vni: u32,
        /// Source address.
        #[arg(long, value_name = "IP")]
        from: IpAddr,
        /// Destination address.
        #[arg(long, value_name = "IP")]
        to: IpAddr,
        /// Protocol: tcp, udp, sctp, icmp, icmpv6, a number or any.
        #[arg(long, default_value = "any")]
        proto: String,
        /// Destination port.
        #[arg(long, default_value_t = 0)]
        dport: u16,
    },
}

/// `nvo endpoint ...`
#[derive(Debug, Subcommand)]
pub enum EndpointCmd {
    /// Set the labels of a port, or of an address of a network (`--vni`); "" removes them.
    ///
    /// A port's labels make its group (its identity) in its network's policy; an address's
    /// labels give the identity of whatever endpoint has that address in the network — a
    /// static MAC/IP entry's host, a remote container — as a controller would tell every nvod.
    #[command(
        after_help = "Example:\n  nvo endpoint label veth-web app=web,tier=front\n  \
                      nvo endpoint label 10.0.0.2 --vni 100 app=db\n  \
                      nvo endpoint label veth-web \"\""
    )]
    Label {
        /// A port name, or an IP address (with --vni).
        target: String,
        /// Labels: KEY=VALUE[,KEY=VALUE...]; "" for none.
        labels: String,
        /// The network of an address.
        #[arg(long, value_parser = vni_parser())]
        vni: Option<u32>,
    },
    /// List the labelled ports and addresses.
    #[command(after_help = "Example:\n  nvo endpoint list")]
    List,
}

/// Parses `app=web,tier=db` ("" for none).
pub fn parse_labels(text: &str) -> Result<LabelMap, CliError> {
    let mut map = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(CliError::Policy(format!(
                "label {pair:?} is not KEY=VALUE; write app=web,tier=db"
            )));
        };
        if map
            .insert(k.trim().to_owned(), v.trim().to_owned())
            .is_some()
        {
            return Err(CliError::Policy(format!("label {k:?} is given twice")));
        }
    }
    Ok(map)
}

/// The documents of a policy file.
pub fn parse_file(path: &std::path::Path, text: &str) -> Result<Vec<PolicyDoc>, CliError> {
    let mut docs = Vec::new();
    for (i, de) in serde_norway::Deserializer::from_str(text).enumerate() {
        let doc = PolicyDoc::deserialize(de).map_err(|e| {
            CliError::Policy(format!("{}: document {}: {e}", path.display(), i + 1))
        })?;
        if doc.network.is_none() {
            return Err(CliError::Policy(format!(
                "{}: document {} has no network; add `network: VNI`",
                path.display(),
                i + 1
            )));
        }
        docs.push(doc);
    }
    if docs.is_empty() {
        return Err(CliError::Policy(format!(
            "{}: no policy in it; write network, groups and rules",
            path.display()
        )));
    }
    Ok(docs)
}

fn render(p: &PolicyView) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "network {}", p.network);
    for g in &p.groups {
        let _ = writeln!(s, "  group {:<12} id {:<5} {}", g.name, g.id, g.selector);
    }
    for (i, r) in p.rules.iter().enumerate() {
        let ports = if r.ports.is_empty() {
            String::new()
        } else {
            format!(" ports {}", r.ports.join(","))
        };
        let _ = writeln!(
            s,
            "  rule {i} {:<12} {} {} -> {} {}{ports}  packets {}",
            r.name,
            r.action,
            r.from.join(","),
            r.to.join(","),
            r.proto,
            r.packets
        );
    }
    let v = &p.verdicts;
    let _ = writeln!(
        s,
        "  verdicts: allowed {} denied {} default_denied {} default_allowed {} tracked {} \
         sender_applied {} unknown_destination {} exempt {} conntrack_full {}",
        v.allowed,
        v.denied,
        v.default_denied,
        v.default_allowed,
        v.tracked,
        v.sender_applied,
        v.unknown_destination,
        v.exempt,
        v.conntrack_full
    );
    if !p.datapath.is_empty() {
        let _ = writeln!(s, "  enforced by: {}", p.datapath);
    }
    if p.datapath == "kernel" {
        let k = &p.kernel_lookups;
        let _ = writeln!(
            s,
            "  nvod's misses asked of the kernel's flows: {} (skipped, answered \"not tracked\" \
             within 1 s: {})",
            k.asked, k.skipped
        );
    }
    s
}

/// Runs `nvo policy ...`.
pub fn policy(client: &Client, format: Format, cmd: PolicyCmd) -> Result<(), CliError> {
    match cmd {
        PolicyCmd::Apply { file } => {
            let text = std::fs::read_to_string(&file).map_err(|source| CliError::Read {
                path: file.clone(),
                source,
            })?;
            let mut applied = Vec::new();
            for (i, doc) in parse_file(&file, &text)?.into_iter().enumerate() {
                let vni = doc.network.unwrap_or_default();
                let view: PolicyView = client
                    .put(&format!("/v1/networks/{vni}/policy"), &doc)
                    .map_err(|e| {
                        CliError::Policy(format!(
                            "{}: document {} (network {vni}): {e}",
                            file.display(),
                            i + 1
                        ))
                    })?;
                if format == Format::Text {
                    println!(
                        "network {vni}: policy applied ({} groups, {} rules)",
                        view.groups.len(),
                        view.rules.len()
                    );
                }
                applied.push(view);
            }
            if format == Format::Json {
                print_json(&applied)?;
            }
            Ok(())
        }
        PolicyCmd::Show { vni: Some(vni) } => {
            let answer = client.get(&format!("/v1/networks/{vni}/policy"))?;
            show(format, answer, render)
        }
        PolicyCmd::Show { vni: None } => {
            let answer = client.get("/v1/policies")?;
            show(format, answer, |all: &Vec<PolicyView>| {
                all.iter().map(render).collect()
            })
        }
        PolicyCmd::Del { vni } => {
            client.delete(&format!("/v1/networks/{vni}/policy"))?;
            done(
                format,
                Value::Null,
                format!("network {vni}: policy deleted"),
            )
        }
        PolicyCmd::Trace {
            vni,
            from,
            to,
            proto,
            dport,
        } => {
            let req = TraceRequest {
                from,
                to,
                proto: Some(proto),
                dport,
            };
            let answer = client.post(&format!("/v1/networks/{vni}/policy/trace"), &req)?;
            show(format, answer, |t: &TraceAnswer| {
                let index = t
                    .rule_index
                    .map(|i| format!(" (rule {i})"))
                    .unwrap_or_default();
                format!(
                    "{} by {}{index}: {} ({}) -> {} ({})\n",
                    t.verdict, t.rule, from, t.from_group, to, t.to_group
                )
            })
        }
    }
}

/// Runs `nvo endpoint ...`.
pub fn endpoint(client: &Client, format: Format, cmd: EndpointCmd) -> Result<(), CliError> {
    match cmd {
        EndpointCmd::Label {
            target,
            labels,
            vni,
        } => {
            let map = parse_labels(&labels)?;
            let (path, what) = match (target.parse::<IpAddr>(), vni) {
                (Ok(ip), Some(vni)) => (
                    format!("/v1/networks/{vni}/labels/{ip}"),
                    format!("address {ip} of network {vni}"),
                ),
                (Ok(ip), None) => {
                    return Err(CliError::Policy(format!(
                        "{ip} is an address: say which network's with --vni N \
                         (tenants may share addresses)"
                    )))
                }
                (Err(_), Some(_)) => {
                    return Err(CliError::Policy(format!(
                        "{target:?} is a port name; --vni is for addresses only"
                    )))
                }
                (Err(_), None) => (
                    format!("/v1/ports/{}/labels", segment(&target)),
                    format!("port {target}"),
                ),
            };
            let answer: Value = client.put(&path, &map)?;
            let shown = if map.is_empty() {
                "no labels".to_owned()
            } else {
                labels.clone()
            };
            done(format, answer, format!("{what}: {shown}"))
        }
        EndpointCmd::List => show(format, client.get("/v1/labels")?, |l: &LabelsView| {
            let mut s = String::new();
            let text = |m: &LabelMap| {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            for (name, m) in &l.ports {
                let _ = writeln!(s, "port {name:<16} {}", text(m));
            }
            for (vni, addrs) in &l.addresses {
                for (ip, m) in addrs {
                    let _ = writeln!(s, "network {vni} address {ip:<16} {}", text(m));
                }
            }
            s
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issues_file_format_parses_with_several_documents() {
        let text = "network: 100\ngroups: [{name: web, id: 10, match: {app: web}}, \
                    {name: db, id: 20, match: {app: db}}]\n\
                    rules: [{from: web, to: db, proto: tcp, ports: [5432], action: allow}]\n\
                    ---\n{\"network\": 200, \"groups\": [{\"name\": \"web\", \"id\": 10, \
                    \"selector\": \"app=web\"}], \"rules\": []}\n";
        let docs = parse_file(std::path::Path::new("t.yaml"), text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].network, Some(100));
        assert_eq!(docs[0].rules[0].ports, [nvo_api::PortDoc::Number(5432)]);
        assert_eq!(docs[1].groups[0].selector.as_deref(), Some("app=web"));
        let e = parse_file(std::path::Path::new("t.yaml"), "groups: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no network"), "{e}");
        let e = parse_file(std::path::Path::new("t.yaml"), "network: 1\nrule: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("document 1") && e.contains("rule"), "{e}");
    }

    #[test]
    fn labels_parse_and_bad_ones_are_named() {
        let m = parse_labels("app=web, tier=db").unwrap();
        assert_eq!(m.get("tier").map(String::as_str), Some("db"));
        assert!(parse_labels("").unwrap().is_empty());
        let e = parse_labels("app").unwrap_err().to_string();
        assert!(e.contains("\"app\""), "{e}");
    }
}
