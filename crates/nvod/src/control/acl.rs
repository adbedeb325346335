//! ACL profiles (`/v1/acls`, nvo_flow::acl): named lists of flow rules without `in_port`,
//! attached by name to ports (`PUT /v1/ports/{port}/acl`) and virtual ports
//! (`PUT /v1/ports/{port}/vports/{mac}/acl`). An attachment installs the profile's rules in
//! the flow table with `in_port` = that port and the profile's cookie; a detach removes the
//! rules with that `in_port` and cookie — exactly the attachment's.
//!
//! The installed rules are not stored with the API's own rules (`State::flows`): they follow
//! from the profiles and the attachments, which are, and are installed again at start after
//! the stored rules. A profile in use cannot be deleted nor added again under its name (to
//! change one: detach, delete, add, attach). A port has at most one profile. Rules added
//! through `/v1/flows` cannot replace an attached profile's rule, nor can a `/v1/flows`
//! delete take one (the request is refused and says which); an OpenFlow controller's
//! FLOW_MODs keep OpenFlow's semantics over the whole table (docs/acl.md).

use nvo_api as api;
use nvo_datapath::Command;
use nvo_flow::acl;
use nvo_flow::syntax::Flow;
use nvo_flow::{Field, Match};
use nvo_openflow::wire::port;
use nvo_openflow::{Command as OfCommand, FlowMod};
use nvo_pipeline::flows::check_actions;

use super::named::{ProfileKind, Within};
use super::{Control, Failure, Kind};

const ACL: ProfileKind = ProfileKind {
    what: "acl",
    list: "/v1/acls",
    detach: "nvo acl detach",
};

/// The most ACL profiles a node holds.
pub const MAX_PROFILES: usize = 256;

impl Control {
    /// `GET /v1/acls`: profiles, where they are attached, and each rule's counters summed
    /// over the attachments.
    pub async fn acl_list(&self) -> Result<Vec<api::Acl>, Failure> {
        let dump = self.flow_dump().await?;
        let mut out = Vec::new();
        for (name, texts) in &self.state.acls {
            let cookie = acl::cookie(name);
            let mut rules: Vec<api::AclRule> = texts
                .iter()
                .map(|t| api::AclRule {
                    rule: t.clone(),
                    n_packets: 0,
                    n_bytes: 0,
                })
                .collect();
            let mut attached = Vec::new();
            for (target, flows) in self.acl_installed(Some(name)) {
                attached.push(target);
                for (shown, f) in rules.iter_mut().zip(&flows) {
                    let stat = dump.rules.iter().find(|s| {
                        s.rule.cookie == cookie
                            && s.rule.priority == f.priority
                            && s.rule.pattern == f.pattern
                    });
                    if let Some(s) = stat {
                        shown.n_packets += s.packets;
                        shown.n_bytes += s.bytes;
                    }
                }
            }
            out.push(api::Acl {
                name: name.clone(),
                cookie,
                rules,
                attached,
            });
        }
        Ok(out)
    }

    /// `POST /v1/acls`.
    pub async fn acl_add(&mut self, spec: api::AclSpec) -> Result<api::Acl, Failure> {
        ACL.check_name(&spec.name)?;
        if self.state.acls.contains_key(&spec.name) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "acl {} already exists; to change it detach it, delete it (DELETE /v1/acls/{}) and add it again",
                    spec.name, spec.name
                ),
            ));
        }
        if self.state.acls.len() >= MAX_PROFILES {
            return Err(Failure::bad(format!(
                "{MAX_PROFILES} acls exist, the most a node holds; delete some first"
            )));
        }
        let rules: Vec<String> = spec.rules.iter().map(|r| r.trim().to_owned()).collect();
        self.acl_rules(&spec.name, &rules)?;
        let mut new = self.state.clone();
        new.acls.insert(spec.name.clone(), rules.clone());
        // No datapath change: the rules are installed once attached.
        self.store.record(&self.state, &new)?;
        self.state = new;
        log::info!("acl {} added: {} rules", spec.name, rules.len());
        Ok(api::Acl {
            cookie: acl::cookie(&spec.name),
            name: spec.name,
            rules: rules
                .into_iter()
                .map(|rule| api::AclRule {
                    rule,
                    n_packets: 0,
                    n_bytes: 0,
                })
                .collect(),
            attached: Vec::new(),
        })
    }

    /// `DELETE /v1/acls/{name}`.
    pub async fn acl_delete(&mut self, name: &str) -> Result<(), Failure> {
        let users: Vec<String> = self
            .state
            .acl_attached
            .iter()
            .filter(|(_, p)| *p == name)
            .map(|(t, _)| t.clone())
            .collect();
        let exists = self.state.acls.contains_key(name);
        self.delete_named(&ACL, name, exists, &users, |s| {
            s.acls.remove(name);
        })
    }

    /// `PUT`/`DELETE /v1/ports/{port}/acl`, `…/vports/{mac}/acl` and `…/vlans/{vid}/acl`:
    /// attaches profile `profile` (`None`: detaches) to port `port`, or to its virtual port or
    /// VLAN circuit (named.rs).
    pub async fn acl_attach(
        &mut self,
        port: &str,
        within: Within<'_>,
        profile: Option<&str>,
    ) -> Result<(), Failure> {
        let target = self.attach_target(port, within, "an acl")?.name;
        let Some(&id) = self.port_ids.get(&target) else {
            return Err(Failure::new(Kind::NotFound, format!("no port {target:?}")));
        };
        let current = self.state.acl_attached.get(&target).cloned();
        let Some(name) = profile else {
            let Some(current) = current else {
                return Err(Failure::new(
                    Kind::NotFound,
                    format!("{target} has no acl attached"),
                ));
            };
            let mut new = self.state.clone();
            new.acl_attached.remove(&target);
            self.commit(new, Command::FlowMod(remove_rules(id.0, &current)))
                .await?;
            log::info!("acl {current} detached from {target}");
            return Ok(());
        };
        if let Some(current) = current {
            return Err(Failure::new(
                Kind::Conflict,
                format!("{target} has acl {current} attached; detach it first (nvo acl detach)"),
            ));
        }
        let texts = self
            .state
            .acls
            .get(name)
            .cloned()
            .ok_or_else(|| ACL.not_found(name))?;
        let flows = acl::compile(&self.acl_rules(name, &texts)?, id.0, acl::cookie(name));
        let dump = self.flow_dump().await?;
        if dump.rules.len() + flows.len() > dump.capacity {
            return Err(Failure::bad(format!(
                "the flow table holds {} of {} rules; acl {name} needs {} more: delete rules first",
                dump.rules.len(),
                dump.capacity,
                flows.len()
            )));
        }
        let taken = dump.rules.iter().find(|s| {
            flows
                .iter()
                .any(|f| f.priority == s.rule.priority && f.pattern == s.rule.pattern)
        });
        if let Some(s) = taken {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "{target} already has flow rule {:?} with the match and priority of a rule of acl {name}, which would replace it; delete it first (nvo flow del --strict)",
                    self.flow_text(&s.rule)
                ),
            ));
        }
        let mut new = self.state.clone();
        new.acl_attached.insert(target.clone(), name.to_owned());
        self.store.record(&self.state, &new)?;
        for f in flows {
            if let Err(e) = self.datapath.call(Command::FlowMod(add_rule(f))).await {
                // Take back what went in: the attachment is all or nothing.
                if let Err(undo) = self
                    .datapath
                    .call(Command::FlowMod(remove_rules(id.0, name)))
                    .await
                {
                    log::error!("acl {name} on {target}: its partial rules stay: {undo}");
                }
                self.undo_record(&e);
                return Err(e.into());
            }
        }
        self.state = new;
        log::info!("acl {name} attached to {target}");
        Ok(())
    }

    /// Installs the rules of every stored attachment (at start, after the stored rules).
    pub(super) async fn acl_restore(&mut self) {
        for (target, flows) in self.acl_installed(None) {
            for f in flows {
                if let Err(e) = self.datapath.call(Command::FlowMod(add_rule(f))).await {
                    log::warn!("a rule of the acl of {target} is not restored: {e}");
                }
            }
        }
    }

    /// Refuses a `/v1/flows` rule that would replace an attached ACL's rule, or that carries
    /// a cookie of the ACLs' range.
    pub(super) fn acl_guard_add(&self, rule: &Flow, pattern: &Match) -> Result<(), Failure> {
        if acl::is_acl_cookie(rule.cookie) {
            return Err(Failure::bad(format!(
                "cookie {:#x} is in the range of acl rules ({:#x}/{:#x}); choose another",
                rule.cookie,
                acl::COOKIE_TAG,
                acl::COOKIE_TAG_MASK
            )));
        }
        self.acl_guard(|f| f.priority == rule.priority && f.pattern == *pattern)
    }

    /// Refuses a `/v1/flows` delete that would take an attached ACL's rule.
    pub(super) fn acl_guard_delete(
        &self,
        pattern: &Match,
        priority: u16,
        strict: bool,
    ) -> Result<(), Failure> {
        self.acl_guard(|f| match strict {
            true => f.priority == priority && f.pattern == *pattern,
            false => f.pattern.within(pattern),
        })
    }

    fn acl_guard(&self, hits: impl Fn(&Flow) -> bool) -> Result<(), Failure> {
        for (target, flows) in self.acl_installed(None) {
            if let Some(f) = flows.iter().find(|f| hits(f)) {
                let acl = self.state.acl_attached.get(&target).cloned();
                return Err(Failure::new(
                    Kind::Conflict,
                    format!(
                        "rule {:?} is acl {}'s on {target}; detach the acl (nvo acl detach) or leave its rules out of the request",
                        self.flow_text(f),
                        acl.unwrap_or_default()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The rules installed for each attachment (of profile `only`, or of all): (target, its
    /// rules in the profile's order).
    fn acl_installed(&self, only: Option<&str>) -> Vec<(String, Vec<Flow>)> {
        let mut out = Vec::new();
        for (target, name) in &self.state.acl_attached {
            if only.is_some_and(|o| o != name) {
                continue;
            }
            let (Some(texts), Some(id)) = (self.state.acls.get(name), self.port_ids.get(target))
            else {
                continue;
            };
            match self.acl_rules(name, texts) {
                Ok(rules) => out.push((
                    target.clone(),
                    acl::compile(&rules, id.0, acl::cookie(name)),
                )),
                Err(e) => log::warn!("acl {name} of {target}: {}", e.message),
            }
        }
        out
    }

    /// Profile `name`'s rules, parsed and checked.
    fn acl_rules(&self, name: &str, texts: &[String]) -> Result<Vec<Flow>, Failure> {
        let rules = acl::parse_rules(texts, &|n| self.port_number(n))
            .map_err(|e| Failure::bad(format!("acl {name}: {e}")))?;
        for (i, r) in rules.iter().enumerate() {
            check_actions(&r.actions)
                .and_then(|()| self.meters_exist(&r.actions))
                .and_then(|()| self.tunnel_here(&r.actions))
                .map_err(|e| Failure::bad(format!("acl {name}: rule {}: {e}", i + 1)))?;
        }
        Ok(rules)
    }
}

/// A FLOW_MOD adding rule `f` (no timeouts: an ACL's rules stay while it is attached).
fn add_rule(f: Flow) -> FlowMod {
    FlowMod {
        command: OfCommand::Add,
        cookie: f.cookie,
        cookie_mask: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: f.priority,
        out_port: port::ANY,
        reset_counts: false,
        pattern: f.pattern,
        actions: f.actions,
    }
}

/// A FLOW_MOD removing the rules of profile `name` on port `id`: those with its `in_port`
/// and exactly its cookie.
fn remove_rules(id: u32, name: &str) -> FlowMod {
    FlowMod {
        command: OfCommand::Delete { strict: false },
        cookie: acl::cookie(name),
        cookie_mask: u64::MAX,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 0,
        out_port: port::ANY,
        reset_counts: false,
        pattern: Match::any().with(Field::InPort, u128::from(id)),
        actions: Vec::new(),
    }
}
