//! Per-destination header templates: built once, patched per packet.
//!
//! A [`Template`] is a profile's template with the VNI, the payload field (for the profile's
//! default payload) and the parameter values written in: first the network's values, then the
//! destination's, so a destination overrides its network. Sending a packet only rewrites the
//! entropy field and the [`Patch`]es, in place, and hands out the bytes: nothing is allocated
//! once a template is cached.
//!
//! The [`TemplateCache`] keys templates by (profile, VNI, remote) and holds at most `limit` of
//! them. When full, a miss evicts one arbitrary template (counted) rather than failing the
//! packet: a template is cheap to rebuild, and traffic must not stop because the cache is full.
//! Whoever changes what a template was built from drops it with [`TemplateCache::invalidate`].

use std::collections::HashMap;
use std::net::IpAddr;

use crate::profile::{Patch, Payload, Profile, ProfileId};

/// Parameter values as (index into `Profile::params`, value), checked to fit their fields.
pub type ParamValues = [(usize, u64)];

/// A length patch's value does not fit its field (or is negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("length field value {value} outside 0..={max}")]
pub struct LengthOverflow {
    /// The computed length.
    pub value: i64,
    /// The largest value the field holds.
    pub max: u64,
}

/// One destination's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    bytes: Vec<u8>,
    sequence: u64,
}

impl Template {
    /// Builds the header of `vni` on `profile` with `layers` of parameter values applied in
    /// order. The profile is validated and `vni` fits its field (the caller checked).
    pub fn build(
        profile: &Profile,
        vni: u32,
        payload: Payload,
        layers: &[&ParamValues],
    ) -> Template {
        let mut bytes = profile.template.clone();
        if let Some(field) = profile.vni {
            field.write(&mut bytes, vni.into());
        }
        if let Some(pf) = profile.payload_field {
            if let Some(value) = pf.value(payload) {
                pf.field.write(&mut bytes, value);
            }
        }
        for layer in layers {
            for &(index, value) in layer.iter() {
                if let Some(param) = profile.params.get(index) {
                    param.field.write(&mut bytes, value);
                }
            }
        }
        Template { bytes, sequence: 0 }
    }

    /// Writes `value` into `field` of the header (a per-packet field such as the payload
    /// field).
    #[inline]
    pub fn set_field(&mut self, field: crate::profile::ByteField, value: u64) {
        field.write(&mut self.bytes, value);
    }

    /// The header as last patched.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Writes this packet's entropy (its low bytes, as many as the field has), length fields and
    /// sequence number, and returns the header.
    #[inline]
    pub fn patch(
        &mut self,
        profile: &Profile,
        entropy: u16,
        inner_len: usize,
    ) -> Result<&[u8], LengthOverflow> {
        if let Some(field) = profile.entropy {
            field.write(&mut self.bytes, entropy.into());
        }
        let header_len = self.bytes.len();
        for patch in &profile.patches {
            match *patch {
                Patch::Length { field, adjust } => {
                    let value = i64::try_from(inner_len.saturating_add(header_len))
                        .unwrap_or(i64::MAX)
                        .saturating_add(adjust.into());
                    let max = field.max_value();
                    match u64::try_from(value) {
                        Ok(v) if v <= max => field.write(&mut self.bytes, v),
                        _ => return Err(LengthOverflow { value, max }),
                    }
                }
                Patch::Sequence { field } => {
                    let max = field.max_value();
                    field.write(&mut self.bytes, self.sequence & max);
                    self.sequence = if self.sequence >= max {
                        0
                    } else {
                        self.sequence + 1
                    };
                }
            }
        }
        Ok(&self.bytes)
    }
}

/// What a template is cached under.
pub type TemplateKey = (ProfileId, u32, IpAddr);

/// Counters of a [`TemplateCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct TemplateStats {
    /// Templates held.
    pub entries: usize,
    /// Templates built (misses).
    pub builds: u64,
    /// Templates evicted because the cache was full.
    pub evictions: u64,
    /// Templates dropped because what they were built from changed.
    pub invalidations: u64,
}

/// The bounded template cache.
#[derive(Debug)]
pub struct TemplateCache {
    map: HashMap<TemplateKey, Template>,
    limit: usize,
    stats: TemplateStats,
}

impl TemplateCache {
    /// An empty cache of at most `limit` templates (at least one).
    pub fn new(limit: usize) -> TemplateCache {
        TemplateCache {
            map: HashMap::new(),
            limit: limit.max(1),
            stats: TemplateStats::default(),
        }
    }

    /// The template under `key`, built by `build` on a miss (evicting one when full).
    pub fn get_or_try_insert<E>(
        &mut self,
        key: TemplateKey,
        build: impl FnOnce() -> Result<Template, E>,
    ) -> Result<&mut Template, E> {
        if self.map.len() >= self.limit && !self.map.contains_key(&key) {
            if let Some(victim) = self.map.keys().next().copied() {
                self.map.remove(&victim);
                self.stats.evictions += 1;
            }
        }
        match self.map.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                let template = build()?;
                self.stats.builds += 1;
                Ok(e.insert(template))
            }
        }
    }

    /// The cached template under `key`, if any.
    pub fn get(&self, key: &TemplateKey) -> Option<&Template> {
        self.map.get(key)
    }

    /// Drops every template for which `stale` holds.
    pub fn invalidate(&mut self, mut stale: impl FnMut(&TemplateKey) -> bool) {
        let before = self.map.len();
        self.map.retain(|k, _| !stale(k));
        self.stats.invalidations += (before - self.map.len()) as u64;
    }

    /// Templates held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no template is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The counters.
    pub fn stats(&self) -> TemplateStats {
        TemplateStats {
            entries: self.map.len(),
            ..self.stats
        }
    }
}
