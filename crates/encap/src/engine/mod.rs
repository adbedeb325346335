//! The engine: profiles, the receive key table and the header templates (docs/design/encap.md).
//!
//! ```text
//!  transmit: header(profile, vni, remote, entropy, inner_len) → cached template, patched → &[u8]
//!  receive:  decap(transport, bytes) → the profiles on that transport, in order
//!              → first whose matches hold and whose key is bound → Decap { target, header_len, … }
//! ```
//!
//! Receive order on a transport: built-ins first, the one testing more bits ahead (vxlan-gbp
//! before vxlan), then user-defined profiles in the order they were added. A profile whose
//! matches hold but whose key is not bound passes the packet on to the next matching profile, so
//! that a plain VXLAN network still receives from a sender that sets the GBP bit (RFC 7348 §5:
//! reserved bits are ignored on receipt); only when no matching profile knows the key is the
//! result [`DecapError::UnknownKey`]. A matching profile that finds the packet truncated or its
//! payload unknown fails the packet at once.
//!
//! Rules for user-defined profiles, beyond [`Profile::validate`]: the name is not taken; at most
//! `Limits::max_profiles` profiles (built-ins included); IP protocol 6 is STT's (segmentation
//! is not a profile's business) and 0, 1, 17, 58 and 255 are not tunnels (a raw socket on them
//! would see the host's own ICMP or UDP). Built-ins cannot be removed; a profile with bound keys
//! cannot be removed either.
//!
//! Parameters: `bind_local` sets a network's values, `set_params` with `remote: None` replaces
//! them and with `Some(remote)` sets one destination's, which override the network's. At most
//! `max_keys + max_templates` such value sets are kept. Any change drops the templates built
//! from the old values.

use std::collections::HashMap;
use std::net::IpAddr;

use serde::Serialize;

use crate::builtin;
use crate::keys::{Key, KeyStats, KeyTable};
use crate::profile::{MatchResult, Payload, Profile, ProfileId, Transport};
use crate::template::{Template, TemplateCache, TemplateStats};

/// Bounds on the engine's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Profiles, built-ins included (64).
    pub max_profiles: usize,
    /// Bound receive keys (65536).
    pub max_keys: usize,
    /// Cached header templates (65536).
    pub max_templates: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_profiles: 64,
            max_keys: 65536,
            max_templates: 65536,
        }
    }
}

pub use crate::keys::Target;

/// A received header, understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decap {
    /// The profile that read it.
    pub profile: ProfileId,
    /// Where the inner packet goes.
    pub target: Target,
    /// Bytes of tunnel header to strip.
    pub header_len: usize,
    /// What follows the header.
    pub payload: Payload,
    /// The receiver must not learn the inner source address.
    pub dont_learn: bool,
}

mod error;

pub use error::{DecapError, EngineError, RelayError};

/// The engine's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EngineStats {
    /// Profiles registered.
    pub profiles: usize,
    /// The key table's counters.
    pub keys: KeyStats,
    /// The template cache's counters.
    pub templates: TemplateStats,
}

type ParamKey = (ProfileId, u32, Option<IpAddr>);

/// Profiles, receive keys and header templates.
#[derive(Debug)]
pub struct Engine {
    limits: Limits,
    profiles: Vec<Option<Profile>>,
    /// Receive order per transport.
    order: Vec<(Transport, Vec<ProfileId>)>,
    keys: KeyTable,
    params: HashMap<ParamKey, Vec<(usize, u64)>>,
    /// Networks that send another payload than their profile's default (an L3 network on
    /// vxlan-gpe announces IPv4), by (profile, vni).
    payloads: HashMap<(ProfileId, u32), Payload>,
    templates: TemplateCache,
}

impl Engine {
    /// An engine with every built-in registered (ids as in [`builtin::ids`]).
    pub fn new(limits: Limits) -> Engine {
        let mut engine = Engine {
            limits,
            profiles: Vec::new(),
            order: Vec::new(),
            keys: KeyTable::new(limits.max_keys),
            params: HashMap::new(),
            payloads: HashMap::new(),
            templates: TemplateCache::new(limits.max_templates),
        };
        for profile in builtin::all() {
            let id = ProfileId(engine.profiles.len() as u16);
            let transport = profile.transport;
            engine.profiles.push(Some(profile));
            engine.place(id, transport, true);
        }
        engine
    }

    /// The limits the engine was made with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Adds a user-defined profile after checking it (see the module documentation).
    pub fn add_profile(&mut self, profile: Profile) -> Result<ProfileId, EngineError> {
        profile.validate()?;
        match profile.transport {
            Transport::Ip(6) => {
                return Err(EngineError::TransportTaken {
                    transport: profile.transport,
                    by: builtin::names::STT,
                })
            }
            Transport::Ip(0 | 1 | 17 | 58 | 255) => {
                return Err(EngineError::ReservedTransport(profile.transport))
            }
            _ => {}
        }
        if self.id(&profile.name).is_some() {
            return Err(EngineError::DuplicateName(profile.name));
        }
        let full = EngineError::TableFull {
            table: "profile",
            limit: self.limits.max_profiles,
        };
        if self.profiles().count() >= self.limits.max_profiles {
            return Err(full);
        }
        let slot = self
            .profiles
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.profiles.len());
        let id = ProfileId(u16::try_from(slot).map_err(|_| full)?);
        let transport = profile.transport;
        if slot == self.profiles.len() {
            self.profiles.push(Some(profile));
        } else {
            self.profiles[slot] = Some(profile);
        }
        self.place(id, transport, false);
        Ok(id)
    }

    /// Puts `id` into its transport's receive order: a built-in ahead of any user profile and of
    /// any built-in that tests fewer bits, a user profile last.
    fn place(&mut self, id: ProfileId, transport: Transport, builtin: bool) {
        let bits = |p: Option<&Profile>| -> u32 {
            p.map_or(0, |p| {
                p.matches
                    .iter()
                    .flat_map(|m| m.mask.iter())
                    .map(|b| b.count_ones())
                    .sum()
            })
        };
        let mine = bits(self.profile(id));
        let at = match self.order.iter().position(|(t, _)| *t == transport) {
            Some(at) => at,
            None => {
                self.order.push((transport, Vec::new()));
                self.order.len() - 1
            }
        };
        let list = &self.order[at].1;
        let pos = if builtin {
            list.iter()
                .position(|&other| {
                    let p = self.profile(other);
                    !p.is_some_and(|p| builtin::is_builtin(&p.name)) || bits(p) < mine
                })
                .unwrap_or(list.len())
        } else {
            list.len()
        };
        self.order[at].1.insert(pos, id);
    }

    /// Removes a user-defined profile that has no bound keys.
    pub fn remove_profile(&mut self, name: &str) -> Result<(), EngineError> {
        let id = self
            .id(name)
            .ok_or_else(|| EngineError::UnknownProfile(name.to_string()))?;
        if builtin::is_builtin(name) {
            return Err(EngineError::BuiltIn(name.to_string()));
        }
        let keys = self.keys.count(id);
        if keys > 0 {
            return Err(EngineError::InUse {
                profile: name.to_string(),
                keys,
            });
        }
        for (_, list) in &mut self.order {
            list.retain(|&p| p != id);
        }
        self.order.retain(|(_, list)| !list.is_empty());
        self.params.retain(|(p, _, _), _| *p != id);
        self.templates.invalidate(|(p, _, _)| *p == id);
        self.profiles[usize::from(id.0)] = None;
        Ok(())
    }

    /// The id of the profile called `name`.
    pub fn id(&self, name: &str) -> Option<ProfileId> {
        self.profiles()
            .find(|(_, p)| p.name == name)
            .map(|(id, _)| id)
    }

    /// The profile with id `id`.
    #[inline]
    pub fn profile(&self, id: ProfileId) -> Option<&Profile> {
        self.profiles.get(usize::from(id.0))?.as_ref()
    }

    /// Every profile, in id order.
    pub fn profiles(&self) -> impl Iterator<Item = (ProfileId, &Profile)> {
        self.profiles
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((ProfileId(i as u16), p.as_ref()?)))
    }

    /// Every transport some bound key uses: the sockets nvod must open.
    pub fn transports(&self) -> Vec<Transport> {
        let mut out: Vec<Transport> = self
            .keys
            .iter()
            .filter_map(|(id, _, _)| Some(self.profile(id)?.transport))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn get(&self, id: ProfileId) -> Result<&Profile, EngineError> {
        self.profile(id).ok_or(EngineError::UnknownId(id))
    }

    /// Binds `vni` on `profile` to the local network `vni`, with the network's parameter values.
    ///
    /// The key is the VNI written into the profile's key field; a profile without key or VNI
    /// field (ipip) has the empty key, so only one network can receive on it.
    pub fn bind_local(
        &mut self,
        profile: ProfileId,
        vni: u32,
        params: &[(String, u64)],
    ) -> Result<(), EngineError> {
        let p = self.get(profile)?;
        if !p.key_is_vni() {
            return Err(EngineError::KeyNotVni(p.name.clone()));
        }
        check_vni(p, vni)?;
        let values = resolve_params(p, params)?;
        let key = Key::of_value(p.key_field(), vni.into());
        let target = Target::Local { vni };
        match self.keys.get(profile, &key) {
            Some(t) if t != target => {
                return Err(EngineError::KeyTaken {
                    profile: p.name.clone(),
                    key: key.to_string(),
                    target: t,
                })
            }
            _ => {}
        }
        self.check_param_room(&(profile, vni, None), &values)?;
        self.insert_key(profile, key, target)?;
        self.store_params((profile, vni, None), values);
        Ok(())
    }

    /// Unbinds the local network `vni` from `profile`, with its parameters and templates.
    pub fn unbind_local(&mut self, profile: ProfileId, vni: u32) {
        if let Some(p) = self.profile(profile) {
            let key = Key::of_value(p.key_field(), vni.into());
            if self.keys.get(profile, &key) == Some(Target::Local { vni }) {
                self.keys.remove(profile, &key);
            }
        }
        self.params
            .retain(|(p, v, _), _| !(*p == profile && *v == vni));
        self.payloads.remove(&(profile, vni));
        self.templates
            .invalidate(|(p, v, _)| *p == profile && *v == vni);
    }

    fn insert_key(
        &mut self,
        profile: ProfileId,
        key: Key,
        target: Target,
    ) -> Result<(), EngineError> {
        self.keys
            .insert(profile, key, target)
            .map(|_| ())
            .map_err(|e| EngineError::TableFull {
                table: "key",
                limit: e.limit,
            })
    }

    /// Binds a raw key of `profile` (as it appears in its key field) to `target`, replacing
    /// any previous binding (an NSH path's next hop changing).
    pub fn bind_key(
        &mut self,
        profile: ProfileId,
        key: &[u8],
        target: Target,
    ) -> Result<(), EngineError> {
        let p = self.get(profile)?;
        let expected = p.key_field().map_or(0, |f| usize::from(f.len));
        let wrong_len = || EngineError::KeyLength {
            profile: p.name.clone(),
            expected,
            got: key.len(),
        };
        if key.len() != expected {
            return Err(wrong_len());
        }
        let key = Key::new(key).ok_or_else(wrong_len)?;
        self.insert_key(profile, key, target)?;
        Ok(())
    }

    /// Unbinds a raw key of `profile`.
    pub fn unbind_key(&mut self, profile: ProfileId, key: &[u8]) {
        if let Some(key) = Key::new(key) {
            self.keys.remove(profile, &key);
        }
    }

    /// Reads a received tunnel header (the bytes after the UDP or IP header). Allocates nothing.
    pub fn decap(&self, transport: Transport, packet: &[u8]) -> Result<Decap, DecapError> {
        let ids = self
            .order
            .iter()
            .find(|(t, _)| *t == transport)
            .map(|(_, ids)| ids.as_slice())
            .ok_or(DecapError::NoProfile)?;
        let mut matched = false;
        let mut short = false;
        for &id in ids {
            let Some(p) = self.profile(id) else { continue };
            match test_matches(p, packet) {
                MatchResult::Holds => matched = true,
                MatchResult::Short => {
                    short = true;
                    continue;
                }
                MatchResult::Fails => continue,
            }
            let header_len = p.header_len.of(packet).ok_or(DecapError::Truncated)?;
            // A length field claiming less than the minimum header is as malformed as a packet
            // ending early (NSH's Length counts the whole header, so `base` can be below it).
            if header_len < p.template.len() || packet.len() < header_len {
                return Err(DecapError::Truncated);
            }
            let payload = match p.payload_field {
                None => p.payload,
                Some(pf) => pf
                    .field
                    .read(packet)
                    .and_then(|v| pf.payload(v))
                    .ok_or(DecapError::UnknownPayload)?,
            };
            let key = Key::read(packet, p.key_field()).ok_or(DecapError::Truncated)?;
            if let Some(target) = self.keys.lookup(id, &key) {
                return Ok(Decap {
                    profile: id,
                    target,
                    header_len,
                    payload,
                    dont_learn: p.dont_learn.as_ref().is_some_and(|m| m.holds(packet)),
                });
            }
        }
        Err(if matched {
            DecapError::UnknownKey
        } else if short {
            DecapError::Truncated
        } else {
            DecapError::NoMatch
        })
    }

    /// Prepares a received header for relaying: decrements the profile's hop field (NSH's
    /// service index, the overlay TTL) in place. A profile without one relays as is. A header
    /// whose hop count would reach 0 must not be relayed: [`RelayError::HopExpired`].
    pub fn relay(&self, profile: ProfileId, header: &mut [u8]) -> Result<(), RelayError> {
        let p = self.profile(profile).ok_or(RelayError::UnknownProfile)?;
        let Some(hop) = p.hop else {
            return Ok(());
        };
        let at = usize::from(hop.offset);
        let count = header.get_mut(at).ok_or(RelayError::Truncated)?;
        if *count <= 1 {
            return Err(RelayError::HopExpired);
        }
        *count -= 1;
        Ok(())
    }

    /// The header to push for `vni` on `profile` towards `remote`: the cached template, patched
    /// with this packet's entropy, length and sequence number. Allocates only on a cache miss.
    pub fn header(
        &mut self,
        profile: ProfileId,
        vni: u32,
        remote: IpAddr,
        entropy: u16,
        inner_len: usize,
    ) -> Result<&[u8], EngineError> {
        self.header_carrying(profile, vni, remote, (entropy, inner_len), None)
    }

    /// [`Engine::header`] for a packet that announces `payload` in the profile's payload field
    /// rather than the network's own (an L3 network on vxlan-gpe sends IPv4 and IPv6, each
    /// with its Next Protocol); `None`: the network's. A payload the profile cannot carry is
    /// [`EngineError::PayloadNotCarried`].
    pub fn header_carrying(
        &mut self,
        profile: ProfileId,
        vni: u32,
        remote: IpAddr,
        (entropy, inner_len): (u16, usize),
        payload: Option<Payload>,
    ) -> Result<&[u8], EngineError> {
        let p = self
            .profiles
            .get(usize::from(profile.0))
            .and_then(Option::as_ref)
            .ok_or(EngineError::UnknownId(profile))?;
        let params = &self.params;
        let network = self
            .payloads
            .get(&(profile, vni))
            .copied()
            .unwrap_or(p.payload);
        let payload = payload.unwrap_or(network);
        // The field's value is written per packet (the template may have sent the other
        // family last); a profile without the field carries its own payload only.
        let value = p
            .payload_field
            .and_then(|pf| Some((pf.field, pf.value(payload)?)));
        if !p.carries(payload) {
            return Err(EngineError::PayloadNotCarried {
                profile: p.name.clone(),
                payload,
            });
        }
        let template = self
            .templates
            .get_or_try_insert((profile, vni, remote), || {
                check_vni(p, vni)?;
                let empty = Vec::new();
                let network_params = params.get(&(profile, vni, None)).unwrap_or(&empty);
                let dest = params.get(&(profile, vni, Some(remote))).unwrap_or(&empty);
                Ok::<_, EngineError>(Template::build(p, vni, network, &[network_params, dest]))
            })?;
        if let Some((field, v)) = value {
            template.set_field(field, v);
        }
        template
            .patch(p, entropy, inner_len)
            .map_err(|e| EngineError::LengthOverflow {
                profile: p.name.clone(),
                value: e.value,
                max: e.max,
            })
    }

    /// The header a network sends to `remote` (or, with `None`, to any remote without values
    /// of its own) before the per-packet fields — entropy, length and sequence patches — are
    /// written: what a datapath that patches headers itself (the eBPF path) pushes. Not cached.
    pub fn template_bytes(
        &self,
        profile: ProfileId,
        vni: u32,
        remote: Option<IpAddr>,
    ) -> Result<Vec<u8>, EngineError> {
        let p = self.get(profile)?;
        check_vni(p, vni)?;
        let empty = Vec::new();
        let network = self.params.get(&(profile, vni, None)).unwrap_or(&empty);
        let dest = match remote {
            Some(r) => self.params.get(&(profile, vni, Some(r))).unwrap_or(&empty),
            None => &empty,
        };
        let payload = self.network_payload(profile, vni);
        Ok(Template::build(p, vni, payload, &[network, dest])
            .bytes()
            .to_vec())
    }

    /// The remotes that have parameter values of their own for network `vni` on `profile`.
    pub fn param_remotes(&self, profile: ProfileId, vni: u32) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = self
            .params
            .keys()
            .filter_map(|&(p, v, r)| (p == profile && v == vni).then_some(r).flatten())
            .collect();
        out.sort_unstable();
        out
    }

    /// Every transport with its profiles in the order a received packet tries them.
    pub fn receive_order(&self) -> impl Iterator<Item = (Transport, &[ProfileId])> {
        self.order.iter().map(|(t, ids)| (*t, ids.as_slice()))
    }

    /// What network `vni` on `profile` carries: the profile's payload unless
    /// [`Engine::set_payload`] said otherwise.
    pub fn network_payload(&self, profile: ProfileId, vni: u32) -> Payload {
        self.payloads
            .get(&(profile, vni))
            .copied()
            .or_else(|| self.profile(profile).map(|p| p.payload))
            .unwrap_or(Payload::Ethernet)
    }

    /// Sets the parameter values of network `vni` on `profile` (`remote: None`, replacing the
    /// network's) or of one destination (`Some`, overriding the network's); an empty list
    /// clears them. Drops the templates they affect.
    pub fn set_params(
        &mut self,
        profile: ProfileId,
        vni: u32,
        remote: Option<IpAddr>,
        params: &[(String, u64)],
    ) -> Result<(), EngineError> {
        let values = resolve_params(self.get(profile)?, params)?;
        let key = (profile, vni, remote);
        self.check_param_room(&key, &values)?;
        self.store_params(key, values);
        Ok(())
    }

    /// Sets what network `vni` on `profile` carries when it is not the profile's default: the
    /// payload field of its headers announces it (vxlan-gpe: Next Protocol 1 for IPv4). A
    /// profile without a payload field carries only its own payload. Drops the network's
    /// templates.
    pub fn set_payload(
        &mut self,
        profile: ProfileId,
        vni: u32,
        payload: Payload,
    ) -> Result<(), EngineError> {
        let p = self.get(profile)?;
        if !p.carries(payload) {
            return Err(EngineError::PayloadNotCarried {
                profile: p.name.clone(),
                payload,
            });
        }
        if payload == p.payload {
            self.payloads.remove(&(profile, vni));
        } else {
            if self.payloads.len() >= self.limits.max_keys
                && !self.payloads.contains_key(&(profile, vni))
            {
                return Err(EngineError::TableFull {
                    table: "payload",
                    limit: self.limits.max_keys,
                });
            }
            self.payloads.insert((profile, vni), payload);
        }
        self.templates
            .invalidate(|&(p, v, _)| p == profile && v == vni);
        Ok(())
    }

    /// The payload field value that announces `payload` on `profile` (None without a payload
    /// field or when the protocol cannot carry it).
    pub fn payload_value(&self, profile: ProfileId, payload: Payload) -> Option<u64> {
        self.profile(profile)?.payload_field?.value(payload)
    }

    /// The engine's counters.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            profiles: self.profiles().count(),
            keys: self.keys.stats(),
            templates: self.templates.stats(),
        }
    }

    /// The key table (read-only), for the API.
    pub fn keys(&self) -> &KeyTable {
        &self.keys
    }

    fn check_param_room(&self, key: &ParamKey, values: &[(usize, u64)]) -> Result<(), EngineError> {
        let limit = self
            .limits
            .max_keys
            .saturating_add(self.limits.max_templates);
        if !values.is_empty() && self.params.len() >= limit && !self.params.contains_key(key) {
            return Err(EngineError::TableFull {
                table: "parameter",
                limit,
            });
        }
        Ok(())
    }

    /// Stores (or, when empty, clears) a value set and drops the templates built from it.
    fn store_params(&mut self, key: ParamKey, values: Vec<(usize, u64)>) {
        if values.is_empty() {
            self.params.remove(&key);
        } else {
            self.params.insert(key, values);
        }
        let (profile, vni, remote) = key;
        self.templates.invalidate(|&(p, v, r)| {
            p == profile && v == vni && remote.is_none_or(|remote| remote == r)
        });
    }
}

/// Whether every match of `p` holds on `packet` (Short when one runs past its end).
#[inline]
fn test_matches(p: &Profile, packet: &[u8]) -> MatchResult {
    for m in &p.matches {
        match m.test(packet) {
            MatchResult::Holds => {}
            other => return other,
        }
    }
    MatchResult::Holds
}

fn check_vni(p: &Profile, vni: u32) -> Result<(), EngineError> {
    match p.vni {
        Some(field) if !field.fits(vni.into()) => Err(EngineError::VniTooWide {
            profile: p.name.clone(),
            vni,
            max: field.max_value(),
        }),
        _ => Ok(()),
    }
}

/// Turns (name, value) pairs into checked (index, value) pairs.
fn resolve_params(p: &Profile, params: &[(String, u64)]) -> Result<Vec<(usize, u64)>, EngineError> {
    params
        .iter()
        .map(|(name, value)| {
            let index = p
                .param_index(name)
                .ok_or_else(|| EngineError::UnknownParam {
                    profile: p.name.clone(),
                    name: name.clone(),
                    known: p
                        .params
                        .iter()
                        .map(|q| q.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            let field = p.params[index].field;
            if !field.fits(*value) {
                return Err(EngineError::ParamTooWide {
                    profile: p.name.clone(),
                    name: name.clone(),
                    value: *value,
                    max: field.max_value(),
                });
            }
            Ok((index, *value))
        })
        .collect()
}
