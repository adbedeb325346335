//! The key layout under the cluster prefix P (default `/nvo/`):
//! - `P networks/<VNI>`: a network object (the JSON body of `POST /v1/networks`);
//! - `P profiles/<NAME>`: an encapsulation profile (the JSON body of `POST /v1/profiles`);
//! - `P overlay/nodes/<ID>`: an overlay node's locators (the body of
//!   `PUT /v1/overlay/nodes/{id}`), decimal ID;
//! - `P overlay/routes/<APP>/<DST>`: a route's next hops (the body of
//!   `PUT /v1/overlay/routes/{app}/{dst}`), APP ethernet, ipv4 or ipv6, decimal DST;
//! - `P hosts/<name>`: a host registration, written under that host's lease;
//! - anything else under P is ignored (reserved for policies/).

/// The prefix when none is configured.
pub const DEFAULT_PREFIX: &str = "/nvo/";

/// Where network objects live, under the prefix.
const NETWORKS: &str = "networks/";
/// Where host registrations live, under the prefix.
const HOSTS: &str = "hosts/";
/// Where profile objects live, under the prefix.
const PROFILES: &str = "profiles/";
/// Where overlay node objects live, under the prefix.
const OVERLAY_NODES: &str = "overlay/nodes/";
/// Where overlay route objects live, under the prefix.
const OVERLAY_ROUTES: &str = "overlay/routes/";
/// The overlay applications' names, as keys spell them.
const APPS: [&str; 3] = ["ethernet", "ipv4", "ipv6"];

/// What a key under the prefix is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// `networks/<VNI>` with a decimal VNI that fits in 32 bits (its range is checked with
    /// the object).
    Network(u32),
    /// `networks/<something that is not a decimal VNI>`: an invalid object.
    BadNetwork(String),
    /// `profiles/<NAME>` with a NAME that is one non-empty key segment.
    Profile(String),
    /// `profiles/` followed by nothing or by more than one segment: an invalid object.
    BadProfile(String),
    /// `overlay/nodes/<ID>`, a decimal node ID (1 or more).
    OverlayNode(u32),
    /// `overlay/routes/<APP>/<DST>`, APP one of ethernet, ipv4, ipv6 and a decimal DST.
    OverlayRoute(String, u32),
    /// `overlay/nodes/…` or `overlay/routes/…` not of those forms: an invalid object.
    BadOverlay(String),
    /// `hosts/<name>`.
    Host(String),
    /// Anything else: ignored.
    Other,
}

/// The key layout of one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    prefix: String,
}

impl Layout {
    /// The layout under `prefix`, which must start and end with '/'.
    pub fn new(prefix: &str) -> Result<Layout, String> {
        if !prefix.starts_with('/') || !prefix.ends_with('/') {
            return Err(format!(
                "cluster prefix {prefix:?} must start and end with '/', e.g. {DEFAULT_PREFIX:?}"
            ));
        }
        Ok(Layout {
            prefix: prefix.to_owned(),
        })
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of network `vni`.
    pub fn network(&self, vni: u32) -> String {
        format!("{}{NETWORKS}{vni}", self.prefix)
    }

    /// The prefix of every network key.
    pub fn networks(&self) -> String {
        format!("{}{NETWORKS}", self.prefix)
    }

    /// The key of profile `name`.
    pub fn profile(&self, name: &str) -> String {
        format!("{}{PROFILES}{name}", self.prefix)
    }

    /// The prefix of every profile key.
    pub fn profiles(&self) -> String {
        format!("{}{PROFILES}", self.prefix)
    }

    /// The key of overlay node `id`.
    pub fn overlay_node(&self, id: u32) -> String {
        format!("{}{OVERLAY_NODES}{id}", self.prefix)
    }

    /// The key of the overlay route of `app` to `dst`.
    pub fn overlay_route(&self, app: &str, dst: u32) -> String {
        format!("{}{OVERLAY_ROUTES}{app}/{dst}", self.prefix)
    }

    /// The prefix of every overlay key.
    pub fn overlay(&self) -> String {
        format!("{}overlay/", self.prefix)
    }

    /// The key of host `name`.
    pub fn host(&self, name: &str) -> String {
        format!("{}{HOSTS}{name}", self.prefix)
    }

    /// What `key` is; keys outside the prefix are [`Key::Other`].
    pub fn classify(&self, key: &str) -> Key {
        let Some(rest) = key.strip_prefix(&self.prefix) else {
            return Key::Other;
        };
        if let Some(vni) = rest.strip_prefix(NETWORKS) {
            return match decimal(vni) {
                Some(n) => Key::Network(n),
                None => Key::BadNetwork(vni.to_owned()),
            };
        }
        if let Some(id) = rest.strip_prefix(OVERLAY_NODES) {
            return match decimal(id) {
                Some(n) if n != 0 => Key::OverlayNode(n),
                _ => Key::BadOverlay(rest.to_owned()),
            };
        }
        if let Some(route) = rest.strip_prefix(OVERLAY_ROUTES) {
            return match route.split_once('/') {
                Some((app, dst)) if APPS.contains(&app) => match decimal(dst) {
                    Some(n) if n != 0 => Key::OverlayRoute(app.to_owned(), n),
                    _ => Key::BadOverlay(rest.to_owned()),
                },
                _ => Key::BadOverlay(rest.to_owned()),
            };
        }
        if let Some(name) = rest.strip_prefix(PROFILES) {
            return if name.is_empty() || name.contains('/') {
                Key::BadProfile(name.to_owned())
            } else {
                Key::Profile(name.to_owned())
            };
        }
        match rest.strip_prefix(HOSTS) {
            Some(name) if !name.is_empty() && !name.contains('/') => Key::Host(name.to_owned()),
            _ => Key::Other,
        }
    }
}

/// A decimal number that fits in 32 bits, written without a sign or leading zeros.
fn decimal(text: &str) -> Option<u32> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let canonical = text == "0" || !text.starts_with('0');
    text.parse().ok().filter(|_| digits && canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_must_start_and_end_with_slash() {
        assert!(Layout::new("/nvo/").is_ok());
        assert!(Layout::new("/").is_ok());
        for bad in ["", "nvo/", "/nvo", "nvo"] {
            assert!(Layout::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn classifies_keys() {
        let l = Layout::new("/nvo/").unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(l.network(100), "/nvo/networks/100");
        assert_eq!(l.host("h1"), "/nvo/hosts/h1");
        assert_eq!(l.classify("/nvo/networks/100"), Key::Network(100));
        assert_eq!(l.classify("/nvo/networks/0"), Key::Network(0));
        assert_eq!(l.classify("/nvo/networks/16777216"), Key::Network(16777216));
        assert_eq!(
            l.classify("/nvo/networks/abc"),
            Key::BadNetwork("abc".into())
        );
        assert_eq!(
            l.classify("/nvo/networks/0100"),
            Key::BadNetwork("0100".into())
        );
        assert_eq!(l.classify("/nvo/networks/+1"), Key::BadNetwork("+1".into()));
        assert_eq!(
            l.classify("/nvo/networks/99999999999"),
            Key::BadNetwork("99999999999".into())
        );
        assert_eq!(l.classify("/nvo/hosts/h1"), Key::Host("h1".into()));
        assert_eq!(l.profile("mytun"), "/nvo/profiles/mytun");
        assert_eq!(l.classify("/nvo/profiles/x"), Key::Profile("x".into()));
        assert_eq!(l.classify("/nvo/profiles/"), Key::BadProfile("".into()));
        assert_eq!(
            l.classify("/nvo/profiles/a/b"),
            Key::BadProfile("a/b".into())
        );
        assert_eq!(l.overlay_node(5), "/nvo/overlay/nodes/5");
        assert_eq!(l.overlay_route("ipv4", 9), "/nvo/overlay/routes/ipv4/9");
        assert_eq!(l.classify("/nvo/overlay/nodes/1"), Key::OverlayNode(1));
        assert_eq!(
            l.classify("/nvo/overlay/routes/ethernet/4294967295"),
            Key::OverlayRoute("ethernet".into(), u32::MAX)
        );
        for bad in [
            "nodes/0",
            "nodes/x",
            "nodes/01",
            "nodes/",
            "routes/7/5",
            "routes/ipv4/0",
            "routes/ipv4",
            "routes/ipv4/5/6",
        ] {
            assert_eq!(
                l.classify(&format!("/nvo/overlay/{bad}")),
                Key::BadOverlay(format!("overlay/{bad}")),
                "{bad}"
            );
        }
        assert_eq!(l.classify("/nvo/overlay/other"), Key::Other);
        assert_eq!(l.classify("/other/networks/1"), Key::Other);
        assert_eq!(l.classify("/nvo/hosts/"), Key::Other);
    }
}
