//! The API socket file: who may reach it, whatever the umask nvod was started under.
//!
//! - Its directory must be nvod's to control: owned by root or nvod's user, writable by no
//!   one else (not o+w, and g+w only for root's or nvod's group); otherwise another user could
//!   put their own socket at the path or remove nvod's. A missing directory is created 0755.
//! - An existing file at the path must be a socket owned by root or nvod's user. A stale one
//!   (left by a crash) is replaced, one that another nvod answers on is not, so two daemons
//!   never fight over the same tables' API.
//! - The socket is bound in a private 0700 directory beside the path, given mode 0660 and the
//!   configured group there, then renamed into place: no moment exists where the path names a
//!   socket wider than 0660 (a socket's mode is what `connect` checks, and `bind` would create
//!   it 0777 minus the umask).

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::config::GroupSetting;

/// Mode of the socket file: its owner (root) and its group may connect.
pub const SOCKET_MODE: u32 = 0o660;

/// Mode of a socket directory nvod creates.
const DIR_MODE: u32 = 0o755;

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
    /// The socket's directory or an existing socket file is not nvod's to control.
    #[error(
        "refusing the API socket {path}: {what} {reason}; another user could replace the \
         socket. Fix its owner and mode (e.g. chown root: and chmod 755 the directory) or \
         choose another api_socket"
    )]
    Unsafe {
        /// The socket path.
        path: PathBuf,
        /// The directory or file at fault.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The configured group does not exist.
    #[error("config key `api_group`: no group {0:?} in /etc/group; create it or give a gid")]
    NoGroup(String),
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

/// Checks (or creates) the socket's directory and removes a stale socket file. Refuses when
/// the directory or the file is not nvod's to control, or another process answers on it.
pub fn prepare_socket(path: &Path) -> Result<(), SocketError> {
    let io = |op, source| SocketError::Io {
        op,
        path: path.to_owned(),
        source,
    };
    let me = own_uid();
    let dir = parent(path);
    match std::fs::metadata(&dir) {
        Ok(meta) => check_dir(path, &dir, &meta, me)?,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(&dir)
                .map_err(|e| io("create the directory of", e))?;
            // The umask may have taken bits the API's group needs to reach the socket.
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(DIR_MODE))
                .map_err(|e| io("set the mode of the directory of", e))?;
        }
        Err(e) => return Err(io("inspect the directory of", e)),
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("inspect", e)),
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(path.to_owned()));
    }
    if meta.uid() != 0 && meta.uid() != me {
        return Err(SocketError::Unsafe {
            path: path.to_owned(),
            what: format!("the existing socket file {}", path.display()),
            reason: format!(
                "is owned by uid {}, not root or nvod's uid {me}",
                meta.uid()
            ),
        });
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

/// Listens on the API socket with mode 0660 and `group` (call [`prepare_socket`] first).
pub fn bind(
    path: &Path,
    group: Option<&GroupSetting>,
) -> Result<tokio::net::UnixListener, SocketError> {
    let gid = group.map(gid_of).transpose()?;
    let io = |op, source| SocketError::Io {
        op,
        path: path.to_owned(),
        source,
    };
    let private = parent(path).join(format!(".nvod-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(|e| io("create a private directory beside", e))?;
    let staged = private.join("s");
    let bound = (|| {
        let listener = tokio::net::UnixListener::bind(&staged).map_err(|e| io("listen on", e))?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(SOCKET_MODE))
            .map_err(|e| io("set the mode of", e))?;
        if let Some(gid) = gid {
            std::os::unix::fs::chown(&staged, None, Some(gid))
                .map_err(|e| io("set the group of", e))?;
        }
        std::fs::rename(&staged, path).map_err(|e| io("move the new socket to", e))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&private);
    bound
}

/// The socket's directory ("." for a bare file name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Refuses a directory another user owns or may write to.
fn check_dir(
    path: &Path,
    dir: &Path,
    meta: &std::fs::Metadata,
    me: u32,
) -> Result<(), SocketError> {
    let mode = meta.mode() & 0o7777;
    let reason = if meta.uid() != 0 && meta.uid() != me {
        Some(format!(
            "is owned by uid {}, not root or nvod's uid {me}",
            meta.uid()
        ))
    } else if mode & 0o002 != 0 {
        Some(format!("is writable by every user (mode {mode:o})"))
    } else if mode & 0o020 != 0 && meta.gid() != 0 && meta.gid() != own_gid() {
        Some(format!(
            "is writable by group {} (mode {mode:o})",
            meta.gid()
        ))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(SocketError::Unsafe {
            path: path.to_owned(),
            what: format!("its directory {}", dir.display()),
            reason,
        }),
        None => Ok(()),
    }
}

/// nvod's effective uid: the owner of /proc/self (proc(5)); root if /proc cannot say.
fn own_uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// nvod's effective gid, the same way.
fn own_gid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| m.gid())
}

/// The gid of a configured group: a number as is, a name looked up in /etc/group.
fn gid_of(group: &GroupSetting) -> Result<u32, SocketError> {
    let name = match group {
        GroupSetting::Gid(gid) => return Ok(*gid),
        GroupSetting::Name(name) => name,
    };
    let text = std::fs::read_to_string("/etc/group").map_err(|source| SocketError::Io {
        op: "read",
        path: PathBuf::from("/etc/group"),
        source,
    })?;
    group_line(&text, name).ok_or_else(|| SocketError::NoGroup(name.clone()))
}

/// The gid of `name` in group(5) text.
fn group_line(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        fields.nth(1)?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_found_by_name() {
        let text = "root:x:0:\nnvo:x:997:alice,bob\nbad:x:notanumber:\n";
        assert_eq!(group_line(text, "root"), Some(0));
        assert_eq!(group_line(text, "nvo"), Some(997));
        assert_eq!(group_line(text, "nv"), None);
        assert_eq!(group_line(text, "bad"), None);
        assert_eq!(gid_of(&GroupSetting::Gid(42)).unwrap(), 42);
    }
}
