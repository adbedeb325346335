//! `nvo lab down NAME|FILE`: removes everything a lab made, whatever state it is in — complete,
//! half-built by a failed `up`, or with daemons that already died.
//!
//! What goes: every process the record lists (if it is still the same process) and every
//! process still inside one of the lab's namespaces (a daemon someone started with
//! `nvo lab exec`), SIGTERM then SIGKILL after 2 s; then the namespaces, which takes their
//! interfaces with them; then the run directory. Given the topology FILE, the namespaces its
//! plan names are removed too, even without a record.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::plan::load;
use super::record::{self, run_dir, LabRecord};
use super::sys;
use super::topology::{check_name, ValidationError};
use super::LabError;

/// What `down` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// The lab.
    pub lab: String,
    /// Processes that were running and were stopped.
    pub processes: usize,
    /// Namespaces removed.
    pub namespaces: usize,
}

/// Takes the lab named by `target` (a lab name or its topology file) down.
pub fn down(target: &str) -> Result<DownReport, LabError> {
    let (name, planned) = resolve(target)?;
    let dir = run_dir(&name);
    let record = record::load(&dir)?;
    let live = planned.iter().any(|ns| sys::netns_exists(ns));
    let record = match record {
        Some(r) => r,
        None if live || dir.exists() => LabRecord {
            name: name.clone(),
            topology: Path::new(target).to_owned(),
            created_unix_s: 0,
            complete: false,
            nodes: Vec::new(),
            namespaces: Vec::new(),
            processes: Vec::new(),
            files: Vec::new(),
        },
        None => return Err(LabError::NoLab(name)),
    };
    teardown(&record, &planned)
}

/// The lab name and, for a topology file, the namespaces its plan names.
fn resolve(target: &str) -> Result<(String, Vec<String>), LabError> {
    let path = Path::new(target);
    if path.is_file() {
        if let Ok((_, plan)) = load(path) {
            return Ok((plan.name.clone(), plan.namespaces()));
        }
        // A file that no longer validates still names its lab.
        #[derive(Deserialize)]
        struct NameOnly {
            name: String,
        }
        let text = std::fs::read_to_string(path).map_err(|source| LabError::Read {
            path: path.to_owned(),
            source,
        })?;
        let parsed: NameOnly =
            serde_norway::from_str(&text).map_err(|source| super::TopologyError::Syntax {
                file: target.to_owned(),
                source,
            })?;
        return Ok((parsed.name, Vec::new()));
    }
    check_name("lab", target).map_err(|name| super::TopologyError::Invalid {
        file: target.to_owned(),
        error: Box::new(ValidationError::NameNoFile(name)),
    })?;
    Ok((target.to_owned(), Vec::new()))
}

/// Removes what `record` lists plus the namespaces in `extra`.
pub fn teardown(record: &LabRecord, extra: &[String]) -> Result<DownReport, LabError> {
    let mut seen = BTreeSet::new();
    let namespaces: Vec<&String> = record
        .namespaces
        .iter()
        .chain(extra)
        .filter(|ns| seen.insert(ns.as_str()))
        .collect();

    // Never stop ourselves or our parent (`nvo lab exec h1 -- nvo lab down demo` runs inside a
    // lab namespace).
    let me = [std::process::id(), std::os::unix::process::parent_id()];
    let mut procs: Vec<(u32, Option<u64>)> = record
        .processes
        .iter()
        .map(|p| (p.pid, p.start_time))
        .collect();
    for ns in namespaces.iter().filter(|ns| sys::netns_exists(ns)) {
        procs.extend(
            sys::netns_pids(ns)
                .into_iter()
                .map(|pid| (pid, sys::start_time(pid))),
        );
    }
    let mut pids = BTreeSet::new();
    procs.retain(|(pid, _)| !me.contains(pid) && pids.insert(*pid));
    let stopped = sys::terminate(&procs);

    let mut problems = Vec::new();
    let mut removed = 0;
    for ns in namespaces.iter().rev().filter(|ns| sys::netns_exists(ns)) {
        match sys::run("ip", &["netns", "del", ns.as_str()]) {
            Ok(()) => removed += 1,
            Err(e) => problems.push(e.to_string()),
        }
    }
    for file in &record.files {
        remove(file, &mut problems, |p| std::fs::remove_file(p));
    }
    remove(&run_dir(&record.name), &mut problems, |p| {
        std::fs::remove_dir_all(p)
    });
    if !problems.is_empty() {
        return Err(LabError::Teardown {
            lab: record.name.clone(),
            problems: problems.join("; "),
        });
    }
    Ok(DownReport {
        lab: record.name.clone(),
        processes: stopped,
        namespaces: removed,
    })
}

fn remove(path: &Path, problems: &mut Vec<String>, how: fn(&Path) -> std::io::Result<()>) {
    match how(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => problems.push(format!("cannot remove {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_is_neither_a_lab_nor_a_file_is_refused_clearly() {
        let err = resolve("../etc").unwrap_err().to_string();
        assert!(
            err.contains("\"../etc\"") && err.contains("no such topology file"),
            "{err}"
        );
        assert_eq!(resolve("demo").unwrap(), ("demo".to_owned(), vec![]));
    }

    #[test]
    fn a_topology_file_names_its_lab_and_namespaces() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/kernel.yaml");
        let (name, ns) = resolve(file.to_str().unwrap()).unwrap();
        assert_eq!(name, "kernel");
        assert_eq!(
            ns,
            [
                "nvo-kernel-ul",
                "nvo-kernel-h1",
                "nvo-kernel-k1",
                "nvo-kernel-red1",
                "nvo-kernel-red2"
            ]
        );
    }

    #[test]
    fn downing_an_unknown_lab_says_so() {
        let err = down("nvo-no-such-lab-here").unwrap_err().to_string();
        assert!(
            err.starts_with("no lab nvo-no-such-lab-here is up"),
            "{err}"
        );
    }
}
