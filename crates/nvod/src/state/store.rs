//! The state directory: a snapshot (`state.json`), a journal of the writes since
//! (`state.journal`), and a lock file (`lock`) that keeps a second nvod out.
//!
//! Why a journal and not one file per object: a write is then one append and one fsync
//! whatever the change, the snapshot keeps the format operators already have on disk (a file
//! of the old format is a snapshot with an empty journal, upgraded in place at start), and a
//! crash can only tear the last line, which is easy to recognise.
//!
//! - Each acknowledged write appends one line (a [`Record`]) and fsyncs it before nvod
//!   answers; a write the datapath then refuses is cut off again (truncate + fsync), so a
//!   refused request leaves the files as they were.
//! - At start the snapshot is read and the journal replayed; a last line without its newline
//!   or that does not parse (nvod killed mid-append) is ignored with a warning. A bad line
//!   before the last one is corruption and stops nvod with the file named.
//! - The journal is folded into a new snapshot (write `state.json.tmp`, fsync, rename, fsync
//!   the directory, then empty the journal) at every start, and when it has grown past the
//!   snapshot's size (at least [`MIN_COMPACT`]), so a write costs a bounded append plus, on
//!   average, a bounded share of one snapshot: the cost does not grow with the tables.
//!
//! The directory is created 0700 and every file 0600 whatever the umask (created with that
//! mode, then set explicitly); an existing directory writable by group or others, or owned
//! by another user, is refused.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::journal::{self, Op, Record};
use super::{Corruption, State, StateError, FORMAT_VERSION};

/// The journal is folded into the snapshot when it is larger than the snapshot and than this.
pub const MIN_COMPACT: u64 = 64 * 1024;

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// The state files in their directory, locked for this process.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    file: PathBuf,
    tmp: PathBuf,
    journal_path: PathBuf,
    journal: File,
    /// Bytes in the journal.
    journal_len: u64,
    /// Bytes of the last snapshot written.
    snapshot_len: u64,
    /// The journal's length before the last record, for [`Store::undo`].
    before_last: Option<u64>,
    /// Held (flock) for the life of the process.
    _lock: File,
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StateError {
    let path = path.to_owned();
    move |source| StateError::Io { op, path, source }
}

/// Opens a file for writing with mode 0600, set explicitly (the umask does not widen it, and
/// a file left by an older nvod with a wider mode is narrowed before anything is written).
fn open_private(path: &Path, truncate: bool) -> Result<File, StateError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(FILE_MODE)
        .open(path)
        .map_err(io("open", path))?;
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))
        .map_err(io("set mode 0600 on", path))?;
    Ok(file)
}

/// nvod's effective uid: the owner of its own /proc entry.
fn own_uid() -> Result<u32, StateError> {
    let proc = Path::new("/proc/self");
    Ok(fs::metadata(proc).map_err(io("stat", proc))?.uid())
}

/// Creates the directory 0700, or checks an existing one.
fn prepare_dir(dir: &Path) -> Result<(), StateError> {
    match fs::metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(io("create state directory", dir))?;
            fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
                .map_err(io("set mode 0700 on", dir))
        }
        Err(source) => Err(StateError::Io {
            op: "stat state directory",
            path: dir.to_owned(),
            source,
        }),
        Ok(meta) => {
            let mode = meta.mode() & 0o7777;
            let uid = own_uid()?;
            if !meta.is_dir() {
                return Err(StateError::Unsafe {
                    path: dir.to_owned(),
                    why: "is not a directory".to_owned(),
                });
            }
            if meta.uid() != uid {
                return Err(StateError::Unsafe {
                    path: dir.to_owned(),
                    why: format!("is owned by uid {}, not by nvod's uid {uid}", meta.uid()),
                });
            }
            if mode & 0o022 != 0 {
                return Err(StateError::Unsafe {
                    path: dir.to_owned(),
                    why: format!("is writable by group or others (mode {mode:04o})"),
                });
            }
            if mode & 0o077 != 0 {
                log::info!(
                    "state directory {}: mode {mode:04o} narrowed to 0700",
                    dir.display()
                );
                fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
                    .map_err(io("set mode 0700 on", dir))?;
            }
            Ok(())
        }
    }
}

/// Takes the directory's lock, or says which process holds it.
fn lock(dir: &Path) -> Result<File, StateError> {
    let path = dir.join("lock");
    let mut file = open_private(&path, false)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(StateError::Locked {
                dir: dir.to_owned(),
                holder: if pid.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {pid})")
                },
            });
        }
        Err(fs::TryLockError::Error(source)) => {
            return Err(StateError::Io {
                op: "lock",
                path,
                source,
            })
        }
    }
    file.set_len(0).map_err(io("truncate", &path))?;
    file.seek(SeekFrom::Start(0)).map_err(io("seek", &path))?;
    writeln!(file, "{}", std::process::id()).map_err(io("write", &path))?;
    Ok(file)
}

impl Store {
    /// Opens the state directory (creating it), locks it, reads the state, and folds the
    /// journal into a new snapshot.
    pub fn open(dir: &Path) -> Result<(Store, State), StateError> {
        prepare_dir(dir)?;
        let lock = lock(dir)?;
        let file = dir.join("state.json");
        let journal_path = dir.join("state.journal");
        let journal = open_private(&journal_path, false)?;
        let mut store = Store {
            dir: dir.to_owned(),
            tmp: dir.join("state.json.tmp"),
            file,
            journal_path,
            journal,
            journal_len: 0,
            snapshot_len: 0,
            before_last: None,
            _lock: lock,
        };
        let state = store.load()?;
        store.compact(&state)?;
        Ok((store, state))
    }

    /// Path of `state.json`.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Reads the snapshot (none: an empty state) and replays the journal on it.
    fn load(&mut self) -> Result<State, StateError> {
        let corrupt = |path: &Path, source: Corruption| StateError::Corrupt {
            path: path.to_owned(),
            source,
        };
        let mut value = match fs::read(&self.file) {
            Ok(text) => serde_json::from_slice(&text)
                .map_err(|e| corrupt(&self.file, Corruption::Json(e)))?,
            Err(e) if e.kind() == ErrorKind::NotFound => serde_json::to_value(State::default())
                .map_err(|e| corrupt(&self.file, Corruption::Json(e)))?,
            Err(source) => {
                return Err(StateError::Io {
                    op: "read state file",
                    path: self.file.clone(),
                    source,
                })
            }
        };
        let mut text = Vec::new();
        self.journal
            .read_to_end(&mut text)
            .map_err(io("read", &self.journal_path))?;
        let replayed = replay(&mut value, &text).map_err(|(line, source)| {
            corrupt(
                &self.journal_path,
                Corruption::Journal { line, why: source },
            )
        })?;
        let mut state: State = serde_json::from_value(value).map_err(|e| {
            let path = if replayed > 0 {
                &self.journal_path
            } else {
                &self.file
            };
            corrupt(path, Corruption::Json(e))
        })?;
        if state.version == 1 {
            log::info!(
                "{}: format version 1, upgraded in place to {FORMAT_VERSION}",
                self.file.display()
            );
            state.version = FORMAT_VERSION;
        }
        state.check().map_err(|e| corrupt(&self.file, e))?;
        Ok(state)
    }

    /// Persists the change from `old` (the state as last recorded) to `new`: one journal line,
    /// fsynced. Nothing to change writes nothing.
    pub fn record(&mut self, old: &State, new: &State) -> Result<(), StateError> {
        let ops = journal::diff(old, new).map_err(|e| self.encode_error(e))?;
        self.before_last = None;
        if ops.is_empty() {
            return Ok(());
        }
        if self.journal_len > self.snapshot_len.max(MIN_COMPACT) {
            self.compact(old)?;
        }
        self.append(ops)
    }

    fn append(&mut self, ops: Vec<Op>) -> Result<(), StateError> {
        let mut line = serde_json::to_vec(&Record { ops }).map_err(|e| self.encode_error(e))?;
        line.push(b'\n');
        let path = &self.journal_path;
        let before = self.journal_len;
        let written = self
            .journal
            .seek(SeekFrom::Start(before))
            .and_then(|_| self.journal.write_all(&line))
            .and_then(|()| self.journal.sync_data());
        if let Err(source) = written {
            // Cut off whatever part of the line reached the file, so the next record does not
            // follow a torn one.
            let _ = self.journal.set_len(before);
            return Err(StateError::Io {
                op: "append to",
                path: path.clone(),
                source,
            });
        }
        self.before_last = Some(before);
        self.journal_len = before + line.len() as u64;
        Ok(())
    }

    /// Takes back the last record (the datapath refused the change it recorded).
    pub fn undo(&mut self) -> Result<(), StateError> {
        let Some(before) = self.before_last.take() else {
            return Ok(());
        };
        self.journal
            .set_len(before)
            .and_then(|()| self.journal.sync_data())
            .map_err(io("truncate", &self.journal_path))?;
        self.journal_len = before;
        Ok(())
    }

    /// Writes `state` as the new snapshot, atomically and durably, then empties the journal.
    fn compact(&mut self, state: &State) -> Result<(), StateError> {
        let mut text = serde_json::to_vec_pretty(state).map_err(|e| self.encode_error(e))?;
        text.push(b'\n');
        let mut tmp = open_private(&self.tmp, true)?;
        tmp.write_all(&text).map_err(io("write", &self.tmp))?;
        tmp.sync_all().map_err(io("fsync", &self.tmp))?;
        drop(tmp);
        fs::rename(&self.tmp, &self.file).map_err(io("rename over", &self.file))?;
        // The rename is durable only once the directory entry is.
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsync directory", &self.dir))?;
        // A crash before the journal is emptied replays it onto a snapshot that holds it
        // already, which changes nothing (journal.rs).
        self.journal
            .set_len(0)
            .and_then(|()| self.journal.sync_data())
            .map_err(io("truncate", &self.journal_path))?;
        self.journal_len = 0;
        self.snapshot_len = text.len() as u64;
        self.before_last = None;
        Ok(())
    }

    fn encode_error(&self, e: serde_json::Error) -> StateError {
        StateError::Io {
            op: "encode state for",
            path: self.file.clone(),
            source: std::io::Error::other(e),
        }
    }

    /// Bytes in the journal (tests and the benchmark's figures).
    #[cfg(test)]
    pub fn journal_len(&self) -> u64 {
        self.journal_len
    }
}

/// Applies the journal's lines to `value`; returns how many applied. A torn last line is
/// skipped with a warning; a bad line before it is `(line number, why)`.
fn replay(value: &mut serde_json::Value, text: &[u8]) -> Result<usize, (usize, String)> {
    let mut applied = 0;
    let mut lines = text.split_inclusive(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let last = lines.peek().is_none();
        let parsed = match line.strip_suffix(b"\n") {
            None => Err("no end of line".to_owned()),
            Some(body) => serde_json::from_slice::<Record>(body).map_err(|e| e.to_string()),
        };
        match parsed {
            Ok(record) => {
                for op in &record.ops {
                    journal::apply(value, op).map_err(|e| (i + 1, e.to_string()))?;
                }
                applied += 1;
            }
            Err(why) if last => {
                log::warn!(
                    "state journal: last record ({} bytes) is incomplete ({why}), ignored: nvod \
                     stopped while writing it, before it was acknowledged",
                    line.len()
                );
            }
            Err(why) => return Err((i + 1, why)),
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{BumState, NetworkState, StaticDest};
    use super::*;

    fn scratch_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nvod-store-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn with_network(s: &State, vni: u32) -> State {
        let mut s = s.clone();
        s.networks.insert(
            vni,
            NetworkState {
                mtu: 1450,
                learning: true,
                learn_ports: None,
                learn_tunnels: None,
                bum: BumState::HeadEnd,
                max_learned: 4096,
                ageing_s: 300,
                flood: vec![],
                fdb: BTreeMap::new(),
                fdb_ips: BTreeMap::new(),
                encap: "vxlan".to_owned(),
                params: BTreeMap::new(),
                l3: false,
                routes: BTreeMap::new(),
                accept_remotes: None,
                max_learned_per_port: None,
                max_learned_per_remote: None,
                cluster: false,
            },
        );
        s
    }

    #[test]
    fn writes_survive_reopen_and_a_torn_tail_is_ignored() {
        let dir = scratch_dir("torn");
        let (mut store, s0) = Store::open(&dir).unwrap();
        assert_eq!(s0, State::default());
        let s1 = with_network(&s0, 10);
        store.record(&s0, &s1).unwrap();
        let mut s2 = s1.clone();
        s2.networks.get_mut(&10).unwrap().fdb.insert(
            "02:00:00:00:00:01".into(),
            StaticDest::Remote("192.0.2.1".parse().unwrap()),
        );
        store.record(&s1, &s2).unwrap();
        // A refused change is cut off again.
        let s3 = with_network(&s2, 11);
        let len = store.journal_len();
        store.record(&s2, &s3).unwrap();
        store.undo().unwrap();
        assert_eq!(store.journal_len(), len);
        drop(store);
        // A record cut short by a kill: ignored.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join("state.journal"))
            .unwrap();
        f.write_all(b"{\"ops\":[[\"set\",[\"networks\",\"12\"")
            .unwrap();
        drop(f);
        let (store, loaded) = Store::open(&dir).unwrap();
        assert_eq!(loaded, s2);
        // Folded at start: the journal is empty, the snapshot holds everything.
        assert_eq!(store.journal_len(), 0);
        drop(store);
        let (_, again) = Store::open(&dir).unwrap();
        assert_eq!(again, s2);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_snapshot_is_refused_with_its_path_and_left_alone() {
        let dir = scratch_dir("corrupt");
        drop(Store::open(&dir).unwrap());
        fs::write(dir.join("state.json"), b"{\"version\": 2, \"networks\": ").unwrap();
        let e = Store::open(&dir).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("corrupt"), "{e}");
        assert_eq!(
            fs::read(dir.join("state.json")).unwrap(),
            b"{\"version\": 2, \"networks\": "
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_line_before_the_last_is_corruption() {
        let dir = scratch_dir("badline");
        drop(Store::open(&dir).unwrap());
        fs::write(dir.join("state.journal"), b"garbage\n{\"ops\":[]}\n").unwrap();
        let e = Store::open(&dir).unwrap_err().to_string();
        assert!(e.contains("state.journal") && e.contains("line 1"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_version_1_file_is_upgraded_in_place() {
        let dir = scratch_dir("v1");
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let old = with_network(&State::default(), 5);
        let mut v1 = serde_json::to_value(&old).unwrap();
        v1["version"] = 1.into();
        fs::write(
            dir.join("state.json"),
            serde_json::to_vec_pretty(&v1).unwrap(),
        )
        .unwrap();
        fs::set_permissions(dir.join("state.json"), fs::Permissions::from_mode(0o644)).unwrap();
        let (_store, loaded) = Store::open(&dir).unwrap();
        assert_eq!(loaded, old);
        let text = fs::read_to_string(dir.join("state.json")).unwrap();
        assert!(
            text.contains(&format!("\"version\": {FORMAT_VERSION}")),
            "{text}"
        );
        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "0755 is narrowed");
        assert_eq!(mode(&dir.join("state.json")), 0o600);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_journal_is_folded_when_it_outgrows_the_snapshot() {
        let dir = scratch_dir("compact");
        let (mut store, mut s) = Store::open(&dir).unwrap();
        let mut longest = 0;
        for vni in 1..=2000 {
            let next = with_network(&s, vni);
            store.record(&s, &next).unwrap();
            s = next;
            longest = longest.max(store.journal_len());
        }
        let snapshot = fs::metadata(dir.join("state.json")).unwrap().len();
        assert!(
            longest <= snapshot.max(MIN_COMPACT) + 4096,
            "{longest} {snapshot}"
        );
        drop(store);
        assert_eq!(Store::open(&dir).unwrap().1, s);
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod cluster_mark {
    use super::super::NetworkState;

    /// Files written before cluster mode have no `cluster` key: their networks are local; a
    /// cluster-owned network keeps its mark through a write and a read; a local one writes no
    /// key at all (so older nvods still read the file).
    #[test]
    fn the_cluster_mark_defaults_to_local_and_round_trips() {
        let old = r#"{"mtu": 1450, "learning": true, "bum": {"mode": "head_end"},
            "max_learned": 4096, "ageing_s": 300, "flood": [], "fdb": {}}"#;
        let net: NetworkState = serde_json::from_str(old).unwrap();
        assert!(!net.cluster);
        assert!(!serde_json::to_string(&net).unwrap().contains("cluster"));
        let owned = NetworkState {
            cluster: true,
            ..net
        };
        let text = serde_json::to_string(&owned).unwrap();
        let back: NetworkState = serde_json::from_str(&text).unwrap();
        assert!(back.cluster, "{text}");
    }

    /// Files written before cluster-owned profiles have no `cluster_profiles`: every profile
    /// is local; the mark round-trips and an empty one writes no key (older nvods read it).
    #[test]
    fn cluster_profiles_default_to_none_and_round_trip() {
        let old = r#"{"version": 2, "networks": {}, "ports": {}}"#;
        let state: super::super::State = serde_json::from_str(old).unwrap();
        assert!(state.cluster_profiles.is_empty());
        assert!(!serde_json::to_string(&state)
            .unwrap()
            .contains("cluster_profiles"));
        let mut owned = state;
        owned.cluster_profiles.insert("mytun".into());
        let text = serde_json::to_string(&owned).unwrap();
        let back: super::super::State = serde_json::from_str(&text).unwrap();
        assert_eq!(back, owned);
    }
}
