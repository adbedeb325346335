//! `nvo lab`: a whole overlay on one machine. Hosts, containers and the underlay are network
//! namespaces; each nvo host runs its own nvod, configured through its API like a real host.
//!
//! ```text
//!  nvo-<lab>-ul        nvo-<lab>-h1                      nvo-<lab>-red1
//!   br0 ─┬─ u-h1 ══ eth0   nvod ── c-red1 ═══════════════ eth0 10.0.0.1
//!        ├─ u-h2 ══ eth0   nvod ── c-red2 ══ ...          (nvo-<lab>-h2, -red2)
//!        └─ u-k1 ══ eth0   vx100 ─ br100 ─ c-red3 ══ ...  (a kernel host)
//!  ══ is a veth pair; the host end of each container's pair is a port of its VTEP
//! ```
//!
//! `topology` parses and checks the YAML (`encap` its profiles), `plan` computes every name and address, `up` builds
//! the lab while `record` writes down each thing as it is made (lab.json), `down` removes what
//! the record lists, `status` reads the records; `sys` runs `ip`, `bridge` and `ethtool`.

pub mod down;
pub mod ila;
pub mod plan;
pub mod record;
pub mod status;
pub mod sys;
pub use nvo_cli::lab::topology;
pub mod up;

use std::path::PathBuf;

pub use topology::TopologyError;

/// Why a lab command failed. Each message is one line with the value at fault.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The topology file is wrong.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A topology that passed its checks still cannot be planned.
    #[error("{file}: {source}")]
    Plan {
        /// The topology file.
        file: String,
        /// Why.
        source: plan::PlanError,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file or directory could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A program could not be started.
    #[error("cannot run {program}: {source} (scripts/setup.sh installs what the lab needs)")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command ran and failed.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line.
        command: String,
        /// Its error output, on one line.
        message: String,
    },
    /// Not root.
    #[error("nvo lab needs root (it creates network namespaces): run it as root")]
    NotRoot,
    /// No nvod binary.
    #[error("nvod not found next to {beside} nor on PATH: build it (cargo build --bins) or pass --nvod PATH")]
    NvodMissing {
        /// The directory of the running nvo.
        beside: PathBuf,
    },
    /// The lab is up already.
    #[error("lab {0} is already up: take it down first (nvo lab down {0})")]
    AlreadyUp(String),
    /// A namespace the lab needs exists.
    #[error("namespace {0} exists already: remove it (ip netns del {0}) or rename the lab")]
    NamespaceExists(String),
    /// nvod did not come up.
    #[error("nvod on {host} {reason} (log: {log})")]
    NvodStart {
        /// The host.
        host: String,
        /// What happened.
        reason: String,
        /// Its log file.
        log: PathBuf,
    },
    /// An API call to a host's nvod failed.
    #[error("nvod on {host}: {source}")]
    Api {
        /// The host.
        host: String,
        /// The client's error.
        source: nvo_api::ClientError,
    },
    /// nvod refused a profile of the topology.
    #[error("nvod on {host} refused profile {profile}: {source}")]
    Profile {
        /// The host.
        host: String,
        /// The profile's name.
        profile: String,
        /// The client's error.
        source: nvo_api::ClientError,
    },
    /// nvod refused a network of the topology.
    #[error("nvod on {host} refused network {vni} (encap {encap}): {source}")]
    Network {
        /// The host.
        host: String,
        /// The network.
        vni: u32,
        /// Its profile.
        encap: String,
        /// The client's error.
        source: nvo_api::ClientError,
    },
    /// No such lab.
    #[error("no lab {0} is up (nothing in {dir}; nvo lab status lists the labs)", dir = plan::RUN_ROOT)]
    NoLab(String),
    /// lab.json is not readable.
    #[error("{path} is not a lab record: {source}")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// No running lab has this node.
    #[error("no lab that is up has a node {0} (nvo lab status lists them)")]
    NoNode(String),
    /// Several labs have this node.
    #[error("node {node} is in labs {labs}: pass --lab NAME")]
    AmbiguousNode {
        /// The node.
        node: String,
        /// The labs, comma-separated.
        labs: String,
    },
    /// Teardown left something behind.
    #[error("lab {lab} is only partly down: {problems}")]
    Teardown {
        /// The lab.
        lab: String,
        /// What could not be removed.
        problems: String,
    },
    /// `up` failed and, as asked, left the lab as it was.
    #[error("{error} (lab {lab} was kept as it is: nvo lab down {lab} removes it)")]
    UpKept {
        /// The lab.
        lab: String,
        /// The first failure.
        error: Box<LabError>,
    },
    /// `up` failed and took the lab down again.
    #[error("{error} (lab {lab} was taken down again; --keep-on-failure keeps it for a look)")]
    UpFailed {
        /// The lab.
        lab: String,
        /// The first failure.
        error: Box<LabError>,
    },
}
