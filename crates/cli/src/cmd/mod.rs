//! The subcommands of `nvo`, each in its own module: the argument types clap parses and the
//! function that runs them. What every subcommand shares is here: the output format and the
//! error a failed command ends with.

pub mod acl;
pub mod api;
pub mod bgp;
pub mod capture;
pub mod cluster;
pub mod cluster_overlay;
pub mod decode;
pub mod events;
pub mod flow;
pub mod lab;
pub mod meter;
pub mod monitor;
pub mod overlay;
pub mod policy;
pub mod prober;
pub mod profile;
pub mod qos;
pub mod route;
pub mod sse;
pub mod ui;
mod view;
pub mod vport;

use std::path::PathBuf;

use clap::ValueEnum;
use serde::Serialize;

use crate::lab::LabError;

/// How a command prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable lines and aligned tables.
    Text,
    /// One JSON document (for the API commands: nvod's own answer, pretty-printed).
    Json,
}

/// Why a command failed; `main` prints it as one line, `nvo: <message>`, and exits with 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The API call failed (nvod unreachable, or it refused the request).
    #[error(transparent)]
    Api(#[from] nvo_api::ClientError),
    /// A lab could not be built, found or removed.
    #[error(transparent)]
    Lab(#[from] LabError),
    /// A file named on the command line could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file named on the command line is not what the command takes.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: profile::SpecFileError,
    },
    /// An answer could not be printed as JSON.
    #[error("cannot write json: {0}")]
    Json(#[from] serde_json::Error),
    /// A BGP setting or neighbor change refused before it was sent; the message says which
    /// and what to do.
    #[error(transparent)]
    Bgp(#[from] bgp::BgpError),
    /// An overlay change refused before it was sent: it contradicts what nvod has (a
    /// locator added twice, one removed that is not there). The message says which and
    /// what to do.
    #[error(transparent)]
    Overlay(#[from] overlay::OverlayError),
    /// The status page cannot be shown: nvod has no `http_listen`, or no browser opened.
    #[error(transparent)]
    Ui(#[from] ui::UiError),
    /// Standard output could not be written (other than closed by its reader).
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
    /// A file named on the command line could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// etcd could not be reached or refused a call (`nvo --etcd`).
    #[error(transparent)]
    Etcd(#[from] nvo_cluster::StoreError),
    /// A cluster object refused before it was written, or one that is not there.
    #[error("{0}")]
    Cluster(String),
    /// A policy file or labels refused before anything was sent; the message says which.
    #[error("{0}")]
    Policy(String),
    /// A capture stream broke or was not pcapng.
    #[error("capture stream from nvod: {0}")]
    Capture(std::io::Error),
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<(), CliError> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
