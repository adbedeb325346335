//! The receive key table: (profile, key bytes) → [`Target`].
//!
//! A key is the bytes of a profile's key field as received (the VNI for most protocols, SPI and
//! SI for NSH, nothing for ipip), kept in a fixed-size [`Key`] so that a lookup allocates
//! nothing. The table holds at most `limit` entries; inserting past it fails with
//! [`KeyTableFull`] rather than evicting a network someone configured. Lookups and misses are
//! counted with relaxed atomics so that [`KeyTable::lookup`] takes `&self`.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::profile::{ByteField, ProfileId, MAX_FIELD_LEN};

/// Where a received packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A local network: hand the inner packet to the pipeline.
    Local {
        /// The network's VNI.
        vni: u32,
    },
    /// Send it on to another node (NSH next hop, overlay relay).
    Forward {
        /// The next hop's underlay address.
        remote: IpAddr,
    },
}

const KEY_CAPACITY: usize = MAX_FIELD_LEN as usize;

/// Up to eight key bytes, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key {
    len: u8,
    bytes: [u8; KEY_CAPACITY],
}

impl Key {
    /// The empty key (profiles without a key or VNI field).
    pub const EMPTY: Key = Key {
        len: 0,
        bytes: [0; KEY_CAPACITY],
    };

    /// A key of these bytes; `None` when there are more than eight.
    pub fn new(bytes: &[u8]) -> Option<Key> {
        let mut key = Key::EMPTY;
        key.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        key.len = bytes.len() as u8;
        Some(key)
    }

    /// The key a header has in `field` (empty without a field); `None` when the header is short.
    #[inline]
    pub fn read(header: &[u8], field: Option<ByteField>) -> Option<Key> {
        match field {
            None => Some(Key::EMPTY),
            Some(field) => Key::new(header.get(field.range())?),
        }
    }

    /// The key `value` makes when written into `field` (empty without a field).
    pub fn of_value(field: Option<ByteField>, value: u64) -> Key {
        let Some(field) = field else {
            return Key::EMPTY;
        };
        let len = usize::from(field.len).min(KEY_CAPACITY);
        let be = value.to_be_bytes();
        Key::new(&be[KEY_CAPACITY - len..]).unwrap_or(Key::EMPTY)
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            return f.write_str("(empty)");
        }
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The table is at its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("key table full ({limit} entries)")]
pub struct KeyTableFull {
    /// The limit.
    pub limit: usize,
}

/// Counters of a [`KeyTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct KeyStats {
    /// Entries held.
    pub entries: usize,
    /// Lookups made.
    pub lookups: u64,
    /// Lookups that found nothing.
    pub misses: u64,
}

/// The bounded map from (profile, key) to where received packets go.
#[derive(Debug)]
pub struct KeyTable {
    map: HashMap<(ProfileId, Key), Target>,
    limit: usize,
    lookups: AtomicU64,
    misses: AtomicU64,
}

impl KeyTable {
    /// An empty table of at most `limit` entries.
    pub fn new(limit: usize) -> KeyTable {
        KeyTable {
            map: HashMap::new(),
            limit,
            lookups: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Binds `key` of `profile` to `target`, returning the target it replaces.
    pub fn insert(
        &mut self,
        profile: ProfileId,
        key: Key,
        target: Target,
    ) -> Result<Option<Target>, KeyTableFull> {
        if self.map.len() >= self.limit && !self.map.contains_key(&(profile, key)) {
            return Err(KeyTableFull { limit: self.limit });
        }
        Ok(self.map.insert((profile, key), target))
    }

    /// Unbinds `key` of `profile`, returning its target.
    pub fn remove(&mut self, profile: ProfileId, key: &Key) -> Option<Target> {
        self.map.remove(&(profile, *key))
    }

    /// The target of `key` on `profile`, counted.
    #[inline]
    pub fn lookup(&self, profile: ProfileId, key: &Key) -> Option<Target> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let found = self.map.get(&(profile, *key)).copied();
        if found.is_none() {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// The target of `key` on `profile`, not counted (for the control plane).
    pub fn get(&self, profile: ProfileId, key: &Key) -> Option<Target> {
        self.map.get(&(profile, *key)).copied()
    }

    /// How many keys `profile` has bound.
    pub fn count(&self, profile: ProfileId) -> usize {
        self.map.keys().filter(|(p, _)| *p == profile).count()
    }

    /// Every binding.
    pub fn iter(&self) -> impl Iterator<Item = (ProfileId, &Key, &Target)> {
        self.map.iter().map(|((p, k), t)| (*p, k, t))
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no key is bound.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The counters.
    pub fn stats(&self) -> KeyStats {
        KeyStats {
            entries: self.map.len(),
            lookups: self.lookups.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_of_value_matches_key_read_from_header() {
        let field = Some(ByteField::new(4, 3));
        let header = [0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0];
        assert_eq!(
            Key::read(&header, field),
            Some(Key::of_value(field, 0x123456))
        );
        assert_eq!(Key::read(&header[..6], field), None);
        assert_eq!(Key::read(&header, None), Some(Key::EMPTY));
        assert_eq!(Key::new(&[0; 9]), None);
    }

    #[test]
    fn table_is_bounded_but_replaces_in_place() {
        let mut t = KeyTable::new(1);
        let a = Key::new(&[1]).unwrap();
        let b = Key::new(&[2]).unwrap();
        let p = ProfileId(0);
        assert_eq!(t.insert(p, a, Target::Local { vni: 1 }), Ok(None));
        assert_eq!(
            t.insert(p, a, Target::Local { vni: 2 }),
            Ok(Some(Target::Local { vni: 1 }))
        );
        assert_eq!(
            t.insert(p, b, Target::Local { vni: 3 }),
            Err(KeyTableFull { limit: 1 })
        );
        assert_eq!(t.lookup(p, &b), None);
        assert_eq!(t.lookup(p, &a), Some(Target::Local { vni: 2 }));
        assert_eq!(
            t.stats(),
            KeyStats {
                entries: 1,
                lookups: 2,
                misses: 1
            }
        );
    }
}
