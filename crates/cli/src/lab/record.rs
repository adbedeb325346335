//! lab.json: what a lab is and what it created. `up` writes each namespace, process and file
//! down *before* creating it (and saves at once, write + rename), so that whatever happens —
//! a failed step, a crash, a kill — `nvo lab down` finds everything to remove; removing
//! something that was recorded but never made is harmless.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::{Plan, RUN_ROOT};
use super::topology::HostKind;
use super::LabError;

/// The record's file name inside the lab's run directory.
pub const RECORD_FILE: &str = "lab.json";

/// What a node of the lab is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The underlay bridge's namespace.
    Underlay,
    /// A host running nvod.
    Nvo,
    /// A host using the kernel's VXLAN device.
    Kernel,
    /// A tenant container.
    Container,
}

/// One node: what `status` shows and `exec` looks up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// Node name.
    pub name: String,
    /// Kind.
    pub kind: NodeKind,
    /// Namespace.
    pub namespace: String,
    /// A container's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// A container's network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vni: Option<u32>,
    /// eth0's addresses (a host's locator first).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// A container's MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// An nvo host's API socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_socket: Option<PathBuf>,
}

/// A process the lab started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// The node it runs on.
    pub node: String,
    /// Its pid.
    pub pid: u32,
    /// Its start time in clock ticks after boot, so a reused pid is never signalled.
    pub start_time: Option<u64>,
    /// The program.
    pub program: String,
}

/// The whole record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabRecord {
    /// Lab name.
    pub name: String,
    /// The topology file it was built from.
    pub topology: PathBuf,
    /// When `up` started (seconds since the Unix epoch).
    pub created_unix_s: u64,
    /// Whether `up` finished.
    pub complete: bool,
    /// Its nodes.
    pub nodes: Vec<NodeRecord>,
    /// Namespaces created (or about to be), in creation order.
    pub namespaces: Vec<String>,
    /// Processes started.
    pub processes: Vec<ProcessRecord>,
    /// Files written outside the run directory (none today; the run directory goes whole).
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

impl LabRecord {
    /// A fresh record for a plan: its nodes, nothing created yet.
    pub fn new(plan: &Plan, topology: &Path, now_unix_s: u64) -> Self {
        let mut nodes = vec![NodeRecord {
            name: super::topology::UNDERLAY_NODE.to_owned(),
            kind: NodeKind::Underlay,
            namespace: plan.underlay_ns.clone(),
            host: None,
            vni: None,
            addresses: Vec::new(),
            mac: None,
            api_socket: None,
        }];
        for h in &plan.hosts {
            let nvo = h.kind == HostKind::Nvo;
            nodes.push(NodeRecord {
                name: h.name.clone(),
                kind: if nvo { NodeKind::Nvo } else { NodeKind::Kernel },
                namespace: h.ns.clone(),
                host: None,
                vni: None,
                addresses: vec![h.locator.to_string(), other_family(h)],
                mac: None,
                api_socket: nvo.then(|| h.socket.clone()),
            });
        }
        for c in &plan.containers {
            let mut addresses = vec![c.ip.to_string()];
            addresses.extend(c.ipv6.map(|a| a.to_string()));
            nodes.push(NodeRecord {
                name: c.name.clone(),
                kind: NodeKind::Container,
                namespace: c.ns.clone(),
                host: Some(c.host.clone()),
                vni: Some(c.vni),
                addresses,
                mac: Some(c.mac.to_string()),
                api_socket: None,
            });
        }
        LabRecord {
            name: plan.name.clone(),
            topology: topology.to_owned(),
            created_unix_s: now_unix_s,
            complete: false,
            nodes,
            namespaces: Vec::new(),
            processes: Vec::new(),
            files: Vec::new(),
        }
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeRecord> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// A host's address in the family tunnels do not use (eth0 has both).
fn other_family(h: &super::plan::HostPlan) -> String {
    if h.locator == h.ipv4.addr {
        h.ipv6.addr.to_string()
    } else {
        h.ipv4.addr.to_string()
    }
}

/// The run directory of lab `name`.
pub fn run_dir(name: &str) -> PathBuf {
    Path::new(RUN_ROOT).join(name)
}

/// A record kept on disk as it grows.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    /// What has been recorded so far.
    pub record: LabRecord,
}

impl Recorder {
    /// Creates `dir` and saves the fresh record in it.
    pub fn create(dir: &Path, record: LabRecord) -> Result<Recorder, LabError> {
        std::fs::create_dir_all(dir).map_err(|source| LabError::Write {
            path: dir.to_owned(),
            source,
        })?;
        let rec = Recorder {
            path: dir.join(RECORD_FILE),
            record,
        };
        rec.save()?;
        Ok(rec)
    }

    /// Writes the record: to a temporary file, then renamed over the old one, so a reader
    /// never sees half a record.
    pub fn save(&self) -> Result<(), LabError> {
        let write = |source| LabError::Write {
            path: self.path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(&self.record)
            .map_err(|e| write(std::io::Error::other(e)))?;
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(write)?;
        std::fs::rename(&tmp, &self.path).map_err(write)
    }

    /// Records a namespace about to be created.
    pub fn namespace(&mut self, ns: &str) -> Result<(), LabError> {
        self.record.namespaces.push(ns.to_owned());
        self.save()
    }

    /// Records a process just started.
    pub fn process(&mut self, p: ProcessRecord) -> Result<(), LabError> {
        self.record.processes.push(p);
        self.save()
    }

    /// Marks the lab complete.
    pub fn complete(&mut self) -> Result<(), LabError> {
        self.record.complete = true;
        self.save()
    }
}

/// Reads the record in `dir`, or `None` if there is none.
pub fn load(dir: &Path) -> Result<Option<LabRecord>, LabError> {
    let path = dir.join(RECORD_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(LabError::Read { path, source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| LabError::BadRecord { path, source })
}

/// Every lab with a record under `root`, sorted by name; unreadable records are skipped.
pub fn all(root: &Path) -> Vec<LabRecord> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut labs: Vec<LabRecord> = entries
        .flatten()
        .filter_map(|e| load(&e.path()).ok().flatten())
        .collect();
    labs.sort_by(|a, b| a.name.cmp(&b.name));
    labs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::topology::Topology;

    #[test]
    fn a_record_lists_every_node_and_survives_a_round_trip() {
        let yaml = "name: r\nhosts: [{name: h1}, {name: k1, kind: kernel}]\nnetworks: [{vni: 5}]\n\
                    containers: [{name: c1, host: k1, vni: 5, ip: 10.0.0.1/24}]\n";
        let topo = Topology::parse("r.yaml", yaml).unwrap();
        let root = std::env::temp_dir().join(format!("nvo-record-{}", std::process::id()));
        let plan = Plan::new(&topo, &root).unwrap();
        let record = LabRecord::new(&plan, Path::new("/x/r.yaml"), 7);
        let kinds: Vec<_> = record
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("ul", NodeKind::Underlay),
                ("h1", NodeKind::Nvo),
                ("k1", NodeKind::Kernel),
                ("c1", NodeKind::Container)
            ]
        );
        assert_eq!(
            record.node("h1").unwrap().addresses,
            ["10.100.0.1", "fd00:100::1"]
        );
        assert!(record.node("k1").unwrap().api_socket.is_none());
        assert_eq!(
            record.node("c1").unwrap().mac.as_deref(),
            Some("02:00:00:05:00:01")
        );

        let mut rec = Recorder::create(&plan.run_dir, record).unwrap();
        rec.namespace("nvo-r-ul").unwrap();
        rec.process(ProcessRecord {
            node: "h1".into(),
            pid: 1,
            start_time: Some(2),
            program: "nvod".into(),
        })
        .unwrap();
        let back = load(&plan.run_dir).unwrap().unwrap();
        assert_eq!(back, rec.record);
        assert_eq!(all(&root).len(), 1);
        assert!(load(&root.join("none")).unwrap().is_none());
        std::fs::write(plan.run_dir.join(RECORD_FILE), "{").unwrap();
        assert!(load(&plan.run_dir)
            .unwrap_err()
            .to_string()
            .contains("not a lab record"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
