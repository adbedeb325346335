//! The control API server: HTTP/1.1 + JSON on a unix socket, served by axum on the control
//! thread's tokio runtime.
//!
//! The socket file is nvod's: a stale one (left by a crash) is replaced, but one that another
//! nvod answers on is not, so two daemons never fight over the same tables' API.

mod bgp;
mod error;
mod routes;

use std::future::Future;
use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

pub use routes::router;

/// The control state every handler shares; the mutex serialises changes.
pub type Shared = std::sync::Arc<tokio::sync::Mutex<crate::control::Control>>;

/// Why the API socket cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Another process answers on the socket.
    #[error(
        "another nvod is already answering on {0}; stop it first, or give this one another \
         api_socket in its config"
    )]
    InUse(PathBuf),
    /// Something that is not a socket sits at the path.
    #[error("{0} exists and is not a socket; remove it or choose another api_socket")]
    NotASocket(PathBuf),
    /// A file system or socket operation failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What nvod was doing.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Creates the socket's directory and removes a stale socket file. Refuses when another
/// process answers on it.
pub fn prepare_socket(path: &Path) -> Result<(), SocketError> {
    let io = |op, source| SocketError::Io {
        op,
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("inspect", e)),
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(path.to_owned()));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(SocketError::InUse(path.to_owned())),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            log::info!("removing stale API socket {}", path.display());
            std::fs::remove_file(path).map_err(|e| io("remove the stale socket", e))
        }
        Err(e) => Err(io("connect to", e)),
    }
}

/// Listens on the API socket (call [`prepare_socket`] first).
pub fn bind(path: &Path) -> Result<tokio::net::UnixListener, SocketError> {
    tokio::net::UnixListener::bind(path).map_err(|source| SocketError::Io {
        op: "listen on",
        path: path.to_owned(),
        source,
    })
}

/// Serves the API until `shutdown` completes; `path` only names the socket in errors.
pub async fn serve(
    listener: tokio::net::UnixListener,
    path: &Path,
    control: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SocketError> {
    axum::serve(listener, router(control))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| SocketError::Io {
            op: "serve the API on",
            path: path.to_owned(),
            source,
        })
}
