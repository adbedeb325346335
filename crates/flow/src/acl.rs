//! ACL profiles (issue 17 item 4, the VTEP paper's ACL profiles): a named list of rules in
//! the flow syntax without `in_port`, which becomes flow-table rules once attached to a port
//! or virtual port — each rule with `in_port` = that port and the profile's cookie.
//!
//! ```text
//!  profile "no-ssh"                       attached to hv0/02:00:00:00:01:01 (port id 7)
//!    priority=200,tcp,tp_dst=22,actions=drop   ──►  cookie=0xac1…,priority=200,in_port=7,tcp,tp_dst=22 actions=drop
//!    priority=100,actions=normal               ──►  cookie=0xac1…,priority=100,in_port=7 actions=normal
//! ```
//!
//! What an attachment owns is exactly its compiled rules (same priority, match and cookie):
//! nvod removes those on detach and nothing else. The rules act on what the port sends in
//! (the flow table's place in the pipeline), not on what it is sent.

use crate::flow_match::Match;
use crate::key::Field;
use crate::syntax::{parse, Flow, SyntaxError};

/// The most rules one profile holds.
pub const MAX_RULES: usize = 64;

/// The top 16 bits of every ACL rule's cookie (the rest is a hash of the profile's name).
pub const COOKIE_TAG: u64 = 0x0ac1 << 48;

/// The cookie bits that say a rule is an ACL's.
pub const COOKIE_TAG_MASK: u64 = 0xffff << 48;

/// Why a profile's rules were refused; `rule` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// No rule at all.
    #[error("an acl needs at least one rule (e.g. `priority=100,actions=normal`)")]
    Empty,
    /// More than [`MAX_RULES`].
    #[error("{0} rules given; an acl holds at most {MAX_RULES}")]
    TooMany(usize),
    /// A rule that does not parse.
    #[error("rule {rule} ({text:?}): {source}")]
    Syntax {
        /// Which rule.
        rule: usize,
        /// Its text.
        text: String,
        /// Why.
        source: SyntaxError,
    },
    /// A rule naming what the attachment supplies or an ACL cannot have.
    #[error("rule {rule} ({text:?}) names {what}; leave it out ({why})")]
    Names {
        /// Which rule.
        rule: usize,
        /// Its text.
        text: String,
        /// `in_port`, `cookie`, `idle_timeout`...
        what: &'static str,
        /// Why it is refused.
        why: &'static str,
    },
    /// Two rules with the same priority and match: the second would replace the first.
    #[error("rules {first} and {second} have the same priority and match; the second would replace the first")]
    Duplicate {
        /// The earlier rule.
        first: usize,
        /// The later one.
        second: usize,
    },
}

/// Parses and checks a profile's rules; `port` resolves port names in actions (`output:NAME`).
pub fn parse_rules(
    texts: &[String],
    port: &dyn Fn(&str) -> Option<u32>,
) -> Result<Vec<Flow>, AclError> {
    if texts.is_empty() {
        return Err(AclError::Empty);
    }
    if texts.len() > MAX_RULES {
        return Err(AclError::TooMany(texts.len()));
    }
    let mut out: Vec<Flow> = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let rule = i + 1;
        let flow = parse(text, port).map_err(|source| AclError::Syntax {
            rule,
            text: text.clone(),
            source,
        })?;
        let names = |what, why| AclError::Names {
            rule,
            text: text.clone(),
            what,
            why,
        };
        if flow.pattern.field(Field::InPort).1 != 0 {
            return Err(names(
                "in_port",
                "the port or virtual port the acl is attached to is its in_port",
            ));
        }
        if flow.cookie != 0 {
            return Err(names("cookie", "an acl's rules carry the acl's own cookie"));
        }
        if flow.idle_timeout.is_some() || flow.hard_timeout.is_some() {
            return Err(names(
                "a timeout",
                "an acl's rules stay as long as it is attached",
            ));
        }
        if let Some(first) = out
            .iter()
            .position(|f| f.priority == flow.priority && f.pattern == flow.pattern)
        {
            return Err(AclError::Duplicate {
                first: first + 1,
                second: rule,
            });
        }
        out.push(flow);
    }
    Ok(out)
}

/// The cookie of profile `name`'s rules: [`COOKIE_TAG`] and 48 bits of an FNV-1a hash of the
/// name (stable across restarts and hosts).
pub fn cookie(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    COOKIE_TAG | (h & !COOKIE_TAG_MASK)
}

/// Whether `cookie` is in the range ACL rules use.
pub fn is_acl_cookie(cookie: u64) -> bool {
    cookie & COOKIE_TAG_MASK == COOKIE_TAG
}

/// The flow rules of `rules` attached to port `in_port`, with cookie `cookie`.
pub fn compile(rules: &[Flow], in_port: u32, cookie: u64) -> Vec<Flow> {
    rules
        .iter()
        .map(|r| {
            let mut f = r.clone();
            f.pattern = on_port(r.pattern, in_port);
            f.cookie = cookie;
            f
        })
        .collect()
}

fn on_port(m: Match, in_port: u32) -> Match {
    m.with(Field::InPort, u128::from(in_port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::key::Key;

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn no_ports(_: &str) -> Option<u32> {
        None
    }

    #[test]
    fn rules_without_in_port_parse_and_compile_onto_the_port() {
        let rules = parse_rules(
            &texts(&[
                "priority=200,tcp,tp_dst=22,actions=drop",
                "priority=100,actions=normal",
            ]),
            &no_ports,
        )
        .unwrap();
        let c = cookie("no-ssh");
        let flows = compile(&rules, 7, c);
        assert_eq!(flows.len(), 2);
        for f in &flows {
            assert_eq!(f.pattern.field(Field::InPort), (7, u128::from(u32::MAX)));
            assert_eq!(f.cookie, c);
            assert!(is_acl_cookie(f.cookie));
        }
        assert_eq!(flows[0].priority, 200);
        assert!(flows[0].actions.is_empty(), "drop is no actions");
        assert_eq!(flows[1].actions, vec![Action::Normal]);
        // The compiled deny matches an SSH SYN from port 7 only, not one from port 8.
        let syn = |port: u32| {
            let mut k = Key::default();
            k.set(Field::InPort, port.into());
            k.set(Field::EthType, 0x0800);
            k.set(Field::IpProto, 6);
            k.set(Field::TpDst, 22);
            k
        };
        assert!(flows[0].pattern.matches(&syn(7)));
        assert!(!flows[0].pattern.matches(&syn(8)));
        // The rules as given are unchanged (a second attachment compiles them again).
        assert_eq!(rules[0].pattern.field(Field::InPort).1, 0);
    }

    #[test]
    fn what_the_attachment_supplies_and_bad_rules_are_refused() {
        let refused = |list: &[&str]| parse_rules(&texts(list), &|_| Some(3)).unwrap_err();
        assert_eq!(refused(&[]), AclError::Empty);
        let many: Vec<String> = (0..=MAX_RULES)
            .map(|i| format!("priority={i},actions=drop"))
            .collect();
        assert_eq!(
            parse_rules(&many, &no_ports).unwrap_err(),
            AclError::TooMany(MAX_RULES + 1)
        );
        let e = refused(&["priority=1,in_port=3,actions=drop"]);
        assert!(e.to_string().contains("names in_port"), "{e}");
        let e = refused(&["cookie=5,actions=drop"]);
        assert!(e.to_string().contains("names cookie"), "{e}");
        let e = refused(&["idle_timeout=10,actions=drop"]);
        assert!(e.to_string().contains("timeout"), "{e}");
        let e = refused(&["priority=1,actions=normal", "tcp,tp_dst=22"]);
        assert!(
            matches!(e, AclError::Syntax { rule: 2, .. }),
            "the second rule has no actions: {e}"
        );
        let e = refused(&[
            "priority=9,tcp,actions=drop",
            "priority=9,tcp,actions=normal",
        ]);
        assert_eq!(
            e,
            AclError::Duplicate {
                first: 1,
                second: 2
            }
        );
        // The most a profile holds is fine.
        let most: Vec<String> = (0..MAX_RULES)
            .map(|i| format!("priority={i},actions=drop"))
            .collect();
        assert_eq!(parse_rules(&most, &no_ports).unwrap().len(), MAX_RULES);
    }

    #[test]
    fn cookies_are_tagged_stable_and_differ_by_name() {
        assert_eq!(cookie("no-ssh"), cookie("no-ssh"));
        assert_ne!(cookie("no-ssh"), cookie("no-ssh2"));
        assert!(is_acl_cookie(cookie("")));
        assert!(!is_acl_cookie(0));
        assert!(!is_acl_cookie(0xdead_beef));
    }
}
