//! `nvo lab status` and `nvo lab exec`: both read the labs' records. Status checks what each
//! record claims against the machine (does the namespace exist, is nvod still the process that
//! was started); exec finds a node among the labs that are up and runs a command in its
//! namespace.

use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::plan::RUN_ROOT;
use super::record::{self, LabRecord, NodeKind, NodeRecord};
use super::sys;
use super::LabError;
use crate::table::Table;

/// A node as it is now.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    /// What the record says.
    #[serde(flatten)]
    pub node: NodeRecord,
    /// Whether its namespace exists.
    pub namespace_exists: bool,
    /// nvod's pid, for nvo hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvod_pid: Option<u32>,
    /// Whether that nvod is still running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvod_running: Option<bool>,
}

/// A lab as it is now.
#[derive(Debug, Clone, Serialize)]
pub struct LabStatus {
    /// Lab name.
    pub name: String,
    /// Its topology file.
    pub topology: String,
    /// When `up` started (Unix seconds).
    pub created_unix_s: u64,
    /// Whether `up` finished.
    pub complete: bool,
    /// Its nodes.
    pub nodes: Vec<NodeStatus>,
}

/// The status of one recorded lab.
pub fn lab_status(r: &LabRecord) -> LabStatus {
    let nodes = r
        .nodes
        .iter()
        .map(|n| {
            let proc = r.processes.iter().find(|p| p.node == n.name);
            NodeStatus {
                node: n.clone(),
                namespace_exists: sys::netns_exists(&n.namespace),
                nvod_pid: proc.map(|p| p.pid),
                nvod_running: proc.map(|p| sys::alive(p.pid, p.start_time)),
            }
        })
        .collect();
    LabStatus {
        name: r.name.clone(),
        topology: r.topology.display().to_string(),
        created_unix_s: r.created_unix_s,
        complete: r.complete,
        nodes,
    }
}

/// Every lab (or the one named), as it is now.
pub fn status(name: Option<&str>) -> Result<Vec<LabStatus>, LabError> {
    let labs: Vec<LabStatus> = record::all(std::path::Path::new(RUN_ROOT))
        .iter()
        .filter(|r| name.is_none_or(|n| n == r.name))
        .map(lab_status)
        .collect();
    match name {
        Some(n) if labs.is_empty() => Err(LabError::NoLab(n.to_owned())),
        _ => Ok(labs),
    }
}

fn age(created: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let s = now.saturating_sub(created);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The text form: per lab a heading and a table of its nodes.
pub fn render(labs: &[LabStatus]) -> String {
    if labs.is_empty() {
        return "no lab is up\n".to_owned();
    }
    let mut out = String::new();
    for (i, lab) in labs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let state = if lab.complete {
            "up"
        } else {
            "INCOMPLETE (up did not finish)"
        };
        out.push_str(&format!(
            "lab {}: {state}, {} ago, from {}\n",
            lab.name,
            age(lab.created_unix_s),
            lab.topology
        ));
        out.push_str(&node_table(&lab.nodes).to_string());
    }
    out
}

fn node_table(nodes: &[NodeStatus]) -> Table {
    let mut t = Table::new(&[
        "NODE",
        "KIND",
        "HOST",
        "VNI",
        "ADDRESS",
        "MAC",
        "NAMESPACE",
        "NVOD",
        "API",
    ]);
    for n in nodes {
        let r = &n.node;
        let kind = match r.kind {
            NodeKind::Underlay => "underlay",
            NodeKind::Nvo => "nvo",
            NodeKind::Kernel => "kernel",
            NodeKind::Container => "container",
        };
        let ns = if n.namespace_exists {
            r.namespace.clone()
        } else {
            format!("{} (missing)", r.namespace)
        };
        let nvod = match (n.nvod_pid, n.nvod_running) {
            (Some(pid), Some(true)) => format!("{pid} running"),
            (Some(pid), _) => format!("{pid} DEAD"),
            (None, _) if r.kind == NodeKind::Nvo => "not started".to_owned(),
            (None, _) => "-".to_owned(),
        };
        t.row([
            r.name.clone(),
            kind.to_owned(),
            r.host.clone().unwrap_or_else(|| "-".to_owned()),
            r.vni.map_or("-".to_owned(), |v| v.to_string()),
            r.addresses
                .first()
                .cloned()
                .unwrap_or_else(|| "-".to_owned()),
            r.mac.clone().unwrap_or_else(|| "-".to_owned()),
            ns,
            nvod,
            r.api_socket
                .as_ref()
                .map_or("-".to_owned(), |p| p.display().to_string()),
        ]);
    }
    t
}

/// Runs `command` in `node`'s namespace with the terminal's stdio; returns its exit status. On
/// an nvo host, `NVO_SOCKET` points at that host's nvod, so `nvo` commands there just work.
pub fn exec(lab: Option<&str>, node: &str, command: &[String]) -> Result<ExitCode, LabError> {
    let labs = record::all(std::path::Path::new(RUN_ROOT));
    if let Some(l) = lab {
        if !labs.iter().any(|r| r.name == l) {
            return Err(LabError::NoLab(l.to_owned()));
        }
    }
    let hits: Vec<(&LabRecord, &NodeRecord)> = labs
        .iter()
        .filter(|r| lab.is_none_or(|l| l == r.name))
        .filter_map(|r| r.node(node).map(|n| (r, n)))
        .filter(|(_, n)| sys::netns_exists(&n.namespace))
        .collect();
    let target = match hits.as_slice() {
        [] => return Err(LabError::NoNode(node.to_owned())),
        [(_, n)] => *n,
        many => {
            let labs: Vec<&str> = many.iter().map(|(r, _)| r.name.as_str()).collect();
            return Err(LabError::AmbiguousNode {
                node: node.to_owned(),
                labs: labs.join(", "),
            });
        }
    };
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &target.namespace]).args(command);
    if let Some(socket) = &target.api_socket {
        cmd.env("NVO_SOCKET", socket);
    }
    let status = cmd.status().map_err(|source| LabError::Spawn {
        program: "ip netns exec".to_owned(),
        source,
    })?;
    Ok(exit_code(status))
}

/// The exit status a shell would report: the code, or 128 + the signal that killed it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_marks_dead_daemons_and_missing_namespaces() {
        let node = |name: &str, kind| NodeRecord {
            name: name.to_owned(),
            kind,
            namespace: format!("nvo-nvo-cli-test-{name}"),
            host: None,
            vni: None,
            addresses: vec!["10.100.0.1".into()],
            mac: None,
            api_socket: Some("/run/nvo/lab/t/h1.sock".into()),
        };
        let lab = LabStatus {
            name: "t".into(),
            topology: "/x/t.yaml".into(),
            created_unix_s: 0,
            complete: false,
            nodes: vec![NodeStatus {
                node: node("h1", NodeKind::Nvo),
                namespace_exists: false,
                nvod_pid: Some(42),
                nvod_running: Some(false),
            }],
        };
        let text = render(&[lab]);
        assert!(
            text.starts_with("lab t: INCOMPLETE (up did not finish), "),
            "{text}"
        );
        assert!(
            text.contains("nvo-nvo-cli-test-h1 (missing)  42 DEAD  /run/nvo/lab/t/h1.sock"),
            "{text}"
        );
        assert_eq!(render(&[]), "no lab is up\n");
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        let st = |s: &str| Command::new("sh").args(["-c", s]).status().unwrap();
        assert_eq!(exit_code(st("exit 3")), ExitCode::from(3));
        assert_eq!(exit_code(st("kill -9 $$")), ExitCode::from(137));
        assert_eq!(age(u64::MAX), "0s");
    }

    #[test]
    fn exec_on_an_unknown_node_says_so() {
        let err = exec(None, "nvo-cli-test-no-such-node", &["true".into()]).unwrap_err();
        assert!(
            err.to_string().contains("nvo-cli-test-no-such-node"),
            "{err}"
        );
    }
}
