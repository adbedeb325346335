//! What the speaker installed and advertised, saved in `evpn.json` in the state directory so
//! that a restarted nvod forwards at once (graceful restart, RFC 4724): the FDB entries,
//! neighbour entries and flood-list remotes from EVPN, and the local hosts with their mobility
//! sequence numbers. Written atomically (temporary file, rename); a missing or unreadable file
//! means a cold start (logged), never a refusal to start.

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use nvo_pipeline::Mac;
use serde::{Deserialize, Serialize};

use super::rib::Installed;

/// Format version of the file.
const VERSION: u32 = 1;

/// The file's contents.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// [`VERSION`].
    pub version: u32,
    /// Unix time of the save, seconds.
    pub saved_at: u64,
    /// (vni, mac, vtep).
    pub fdb: Vec<(u32, Mac, IpAddr)>,
    /// (vni, ip, mac).
    pub neigh: Vec<(u32, IpAddr, Mac)>,
    /// (vni, vtep).
    pub flood: Vec<(u32, IpAddr)>,
    /// (vni, mac, ips, sequence).
    pub local: Vec<(u32, Mac, Vec<IpAddr>, u32)>,
}

impl Saved {
    /// A snapshot.
    pub fn of(installed: &Installed, local: Vec<(u32, Mac, Vec<IpAddr>, u32)>) -> Saved {
        Saved {
            version: VERSION,
            saved_at: unix_now(),
            fdb: installed
                .fdb
                .iter()
                .map(|(&(v, m), &ip)| (v, m, ip))
                .collect(),
            neigh: installed
                .neigh
                .iter()
                .map(|(&(v, ip), &m)| (v, ip, m))
                .collect(),
            flood: installed
                .flood
                .iter()
                .flat_map(|(&v, set)| set.iter().map(move |&ip| (v, ip)))
                .collect(),
            local,
        }
    }

    /// The installed part as the table keeps it.
    pub fn installed(&self) -> Installed {
        let mut i = Installed::default();
        i.fdb
            .extend(self.fdb.iter().map(|&(v, m, ip)| ((v, m), ip)));
        i.neigh
            .extend(self.neigh.iter().map(|&(v, ip, m)| ((v, ip), m)));
        for &(v, ip) in &self.flood {
            i.flood.entry(v).or_default().insert(ip);
        }
        i
    }
}

/// Seconds since the Unix epoch (0 on a clock before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The file in the state directory.
#[derive(Debug, Clone)]
pub struct SaveFile {
    file: PathBuf,
    tmp: PathBuf,
}

impl SaveFile {
    /// `evpn.json` in `dir`.
    pub fn new(dir: &Path) -> SaveFile {
        SaveFile {
            file: dir.join("evpn.json"),
            tmp: dir.join("evpn.json.tmp"),
        }
    }

    /// Reads the file; None when there is none or it cannot be used (logged).
    pub fn load(&self) -> Option<Saved> {
        let text = match fs::read(&self.file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                log::warn!(
                    "evpn: cannot read {}: {e}; starting cold",
                    self.file.display()
                );
                return None;
            }
        };
        match serde_json::from_slice::<Saved>(&text) {
            Ok(s) if s.version == VERSION => Some(s),
            Ok(s) => {
                log::warn!(
                    "evpn: {} has format version {}, not {VERSION}; starting cold",
                    self.file.display(),
                    s.version
                );
                None
            }
            Err(e) => {
                log::warn!(
                    "evpn: {} is unreadable ({e}); starting cold",
                    self.file.display()
                );
                None
            }
        }
    }

    /// Writes `saved` atomically, readable by its owner only (0600 whatever the umask: it names
    /// the peers and what they advertised).
    pub fn save(&self, saved: &Saved) -> std::io::Result<()> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let text = serde_json::to_vec(saved).map_err(std::io::Error::other)?;
        let mut tmp = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&self.tmp)?;
        tmp.set_permissions(fs::Permissions::from_mode(0o600))?;
        tmp.write_all(&text)?;
        tmp.sync_all()?;
        drop(tmp);
        fs::rename(&self.tmp, &self.file)
    }

    /// Removes the file (BGP turned off).
    pub fn remove(&self) {
        if let Err(e) = fs::remove_file(&self.file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                log::warn!("evpn: cannot remove {}: {e}", self.file.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = std::env::temp_dir().join(format!("nvo-evpn-persist-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut i = Installed::default();
        let mac = Mac([2, 0, 0, 0, 0, 1]);
        let vtep: IpAddr = "192.0.2.2".parse().unwrap();
        i.fdb.insert((100, mac), vtep);
        i.neigh.insert((100, "10.0.0.2".parse().unwrap()), mac);
        i.flood.entry(100).or_default().insert(vtep);
        let saved = Saved::of(&i, vec![(100, Mac([2, 0, 0, 0, 0, 9]), vec![], 3)]);
        let file = SaveFile::new(&dir);
        file.save(&saved).unwrap();
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            fs::metadata(dir.join("evpn.json"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            mode, 0o600,
            "evpn.json must be its owner's only, whatever the umask"
        );
        let back = file.load().unwrap();
        assert_eq!(back.installed(), i);
        assert_eq!(back.local, saved.local);
        fs::write(dir.join("evpn.json"), b"{ not json").unwrap();
        assert!(file.load().is_none());
        file.remove();
        assert!(file.load().is_none());
        fs::remove_dir_all(&dir).unwrap();
    }
}
