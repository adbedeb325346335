//! Endpoint labels and label selectors, in Kubernetes' selector syntax (what operators already
//! write): `app=web`, `tier!=db`, `env in (prod,staging)`, `env notin (dev)`, `canary`,
//! `!legacy`, joined by commas (all must hold).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Most labels on one endpoint.
pub const MAX_LABELS: usize = 64;
/// Longest label key or value.
pub const MAX_LABEL_LEN: usize = 63;
/// Most requirements in one selector, and values in one `in`/`notin` list.
pub const MAX_REQUIREMENTS: usize = 32;

/// Why labels or a selector were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// More than [`MAX_LABELS`] labels.
    #[error("more than {MAX_LABELS} labels")]
    TooMany,
    /// A key or value that is empty where it may not be, too long, or has characters
    /// outside `[A-Za-z0-9._/-]`.
    #[error("{0:?} is not a label key or value (1 to {MAX_LABEL_LEN} of A-Z a-z 0-9 . _ - /)")]
    Bad(String),
    /// A selector that does not parse.
    #[error("selector {selector:?}: {why}")]
    Selector {
        /// The selector.
        selector: String,
        /// What is wrong.
        why: &'static str,
    },
}

/// An endpoint's labels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Labels(BTreeMap<String, String>);

fn check_word(s: &str, empty_ok: bool) -> Result<(), LabelError> {
    let ok = (empty_ok || !s.is_empty())
        && s.len() <= MAX_LABEL_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'));
    if ok {
        Ok(())
    } else {
        Err(LabelError::Bad(s.to_owned()))
    }
}

impl Labels {
    /// Labels from pairs, checked.
    pub fn new<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Labels, LabelError> {
        let mut m = BTreeMap::new();
        for (k, v) in pairs {
            check_word(k, false)?;
            check_word(v, true)?;
            m.insert(k.to_owned(), v.to_owned());
            if m.len() > MAX_LABELS {
                return Err(LabelError::TooMany);
            }
        }
        Ok(Labels(m))
    }

    /// Checks labels that came from elsewhere (a file, the API).
    pub fn check(&self) -> Result<(), LabelError> {
        if self.0.len() > MAX_LABELS {
            return Err(LabelError::TooMany);
        }
        for (k, v) in &self.0 {
            check_word(k, false)?;
            check_word(v, true)?;
        }
        Ok(())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Every label.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` (also `key==value`).
    Equals(String, String),
    /// `key!=value`: not that value (a missing key satisfies it, as in Kubernetes).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: a missing key satisfies it.
    NotIn(String, Vec<String>),
    /// `key`: present.
    Exists(String),
    /// `!key`: absent.
    Absent(String),
}

impl Requirement {
    fn holds(&self, l: &Labels) -> bool {
        match self {
            Requirement::Equals(k, v) => l.get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => l.get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => l.get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => !l.get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => l.get(k).is_some(),
            Requirement::Absent(k) => l.get(k).is_none(),
        }
    }
}

/// A label selector: every requirement must hold. The empty selector selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
    text: String,
}

impl Selector {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Selector, LabelError> {
        let bad = |why| LabelError::Selector {
            selector: text.to_owned(),
            why,
        };
        let text_t = text.trim();
        // Requirements are separated by commas outside parentheses.
        let mut items = Vec::new();
        let (mut depth, mut from) = (0i32, 0);
        for (i, c) in text_t.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&text_t[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        if !text_t.is_empty() {
            items.push(&text_t[from..]);
        }
        if items.len() > MAX_REQUIREMENTS {
            return Err(bad("too many requirements"));
        }
        let reqs = items
            .into_iter()
            .map(|item| requirement(item.trim()).map_err(bad))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Selector {
            requirements: reqs,
            text: text.trim().to_owned(),
        })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn selects(&self, labels: &Labels) -> bool {
        self.requirements.iter().all(|r| r.holds(labels))
    }

    /// Its requirements.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn word(s: &str, empty_ok: bool) -> Result<String, &'static str> {
    let s = s.trim();
    check_word(s, empty_ok)
        .map_err(|_| "a key or value has characters outside A-Z a-z 0-9 . _ - /, or is too long")?;
    Ok(s.to_owned())
}

fn list(s: &str) -> Result<Vec<String>, &'static str> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .ok_or("in/notin needs a list in parentheses: key in (a,b)")?;
    if inner.trim().is_empty() {
        return Err("in/notin lists hold 1 to 32 values");
    }
    let values: Vec<String> = inner
        .split(',')
        .map(|v| word(v, true))
        .collect::<Result<_, _>>()?;
    if values.is_empty() || values.len() > MAX_REQUIREMENTS {
        return Err("in/notin lists hold 1 to 32 values");
    }
    Ok(values)
}

fn requirement(item: &str) -> Result<Requirement, &'static str> {
    if item.is_empty() {
        return Err("an empty requirement (two commas in a row?)");
    }
    if let Some(k) = item.strip_prefix('!') {
        return Ok(Requirement::Absent(word(k, false)?));
    }
    if let Some((k, v)) = item.split_once("!=") {
        return Ok(Requirement::NotEquals(word(k, false)?, word(v, true)?));
    }
    if let Some((k, v)) = item.split_once("==").or_else(|| item.split_once('=')) {
        return Ok(Requirement::Equals(word(k, false)?, word(v, true)?));
    }
    let mut parts = item.splitn(2, char::is_whitespace);
    let key = parts.next().unwrap_or_default();
    match parts.next().map(str::trim_start) {
        None => Ok(Requirement::Exists(word(key, false)?)),
        Some(rest) => {
            if let Some(l) = rest.strip_prefix("notin") {
                Ok(Requirement::NotIn(word(key, false)?, list(l)?))
            } else if let Some(l) = rest.strip_prefix("in") {
                Ok(Requirement::In(word(key, false)?, list(l)?))
            } else {
                Err("expected key=value, key!=value, key in (…), key notin (…), key or !key")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Labels {
        Labels::new(pairs.iter().copied()).unwrap()
    }

    #[test]
    fn selectors_as_kubernetes_reads_them() {
        let web = l(&[("app", "web"), ("env", "prod")]);
        let db = l(&[("app", "db"), ("env", "prod"), ("legacy", "")]);
        let s = |t: &str| Selector::parse(t).unwrap();
        assert!(s("app=web").selects(&web) && !s("app=web").selects(&db));
        assert!(s("app==web,env=prod").selects(&web));
        assert!(s("app!=db").selects(&web) && s("tier!=x").selects(&web));
        assert!(s("env in (prod, staging)").selects(&db));
        assert!(!s("env notin (prod)").selects(&db) && s("tier notin (a)").selects(&db));
        assert!(s("legacy").selects(&db) && !s("legacy").selects(&web));
        assert!(s("!legacy").selects(&web) && !s("!legacy").selects(&db));
        assert!(s("").selects(&web), "the empty selector selects everything");
        assert_eq!(s(" app=web , env in (a,b) ").requirements().len(), 2);
    }

    #[test]
    fn bad_selectors_and_labels_are_refused() {
        for bad in [
            "app=web,,x",
            "app in prod",
            "app in ()",
            "a b c",
            "app=we b",
            "=x",
            "!",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
        assert!(Labels::new([("", "x")]).is_err());
        assert!(Labels::new([("app", "a b")]).is_err());
        assert!(Labels::new([("k".repeat(64).as_str(), "x")]).is_err());
        let many: Vec<(String, String)> = (0..65).map(|i| (format!("k{i}"), "v".into())).collect();
        assert_eq!(
            Labels::new(many.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            Err(LabelError::TooMany)
        );
    }
}
