//! The checks of cluster mode's settings that need no etcd — the one copy nvod's `[cluster]`
//! table and a lab's `nvod: {cluster: …}` both apply (the prefix is checked by
//! [`crate::Layout::new`]).

use std::ops::RangeInclusive;

/// Bounds of a host's registration lease TTL, seconds.
pub const LEASE_TTL_S: RangeInclusive<u32> = 2..=300;

/// The lease TTL when none is configured, seconds.
pub const DEFAULT_LEASE_TTL_S: u32 = 10;

/// An etcd endpoint: `http://HOST:PORT` or `https://HOST:PORT`, no spaces.
pub fn check_endpoint(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.contains(char::is_whitespace) => Ok(()),
        _ => Err("each endpoint must be http://HOST:PORT or https://HOST:PORT"),
    }
}

/// A host's name in the cluster: one key segment of 1 to 253 characters, no spaces.
pub fn check_host_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty()
        || name.len() > 253
        || name.contains('/')
        || name.contains(char::is_whitespace)
    {
        return Err("must be 1 to 253 characters without '/' or spaces");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_names() {
        assert!(check_endpoint("http://10.1.0.1:2379").is_ok());
        assert!(check_endpoint("https://etcd:2379").is_ok());
        for bad in ["10.1.0.1:2379", "http://", "ftp://x", "http://a b"] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
        assert!(check_host_name("h1").is_ok());
        assert!(check_host_name(&"a".repeat(253)).is_ok());
        for bad in ["", "a/b", "a b", &"a".repeat(254)] {
            assert!(check_host_name(bad).is_err(), "{bad}");
        }
    }
}
