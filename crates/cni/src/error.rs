//! CNI errors: the spec's error object (SPEC.md "Error": `code`, `msg`, `details`) with its
//! well-known codes, and nvo-cni's own codes from 100 on (docs/cni.md lists them).

use serde_json::{json, Value};

/// Well-known codes (CNI spec 1.0 "Error", 1.1 adds 50/51) and nvo-cni's own (100+).
pub mod code {
    /// The configuration's `cniVersion` is not one nvo-cni speaks.
    pub const INCOMPATIBLE_VERSION: u32 = 1;
    /// The container (its network namespace) does not exist.
    pub const UNKNOWN_CONTAINER: u32 = 3;
    /// A missing or malformed `CNI_*` environment variable.
    pub const INVALID_ENV: u32 = 4;
    /// Reading the configuration from standard input failed.
    pub const IO_FAILURE: u32 = 5;
    /// The configuration is not JSON.
    pub const DECODE: u32 = 6;
    /// The configuration is JSON but wrong (a field missing, out of range, a VNI nvod lacks).
    pub const INVALID_CONFIG: u32 = 7;
    /// A transient condition (nvod not reachable): the runtime should retry.
    pub const TRY_AGAIN: u32 = 11;
    /// STATUS: the plugin cannot serve ADD now (spec 1.1).
    pub const NOT_AVAILABLE: u32 = 50;
    /// nvod refused a request for another reason.
    pub const NVOD: u32 = 100;
    /// Creating, configuring or deleting an interface failed.
    pub const LINK: u32 = 101;
    /// The IPAM plugin could not be run or its answer not read.
    pub const IPAM: u32 = 102;
    /// ADD found the attachment's host interface or nvod port already there.
    pub const EXISTS: u32 = 103;
    /// CHECK found the attachment broken (interface, port, MTU or address missing or wrong).
    pub const CHECK_FAILED: u32 = 104;
}

/// A CNI error as the plugin reports it on standard output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} (CNI code {code}){}", if details.is_empty() { String::new() } else { format!(": {details}") })]
pub struct CniError {
    /// Well-known (< 100) or nvo-cni's own (>= 100) code.
    pub code: u32,
    /// One line: what failed.
    pub msg: String,
    /// With what value, and what to do.
    pub details: String,
}

impl CniError {
    /// An error with a code and a message, no details.
    pub fn new(code: u32, msg: impl Into<String>) -> Self {
        CniError {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// The same error with `details`.
    pub fn details(mut self, details: impl Into<String>) -> Self {
        self.details = details.into();
        self
    }

    /// The spec's error JSON for configuration version `cni_version`.
    pub fn to_json(&self, cni_version: &str) -> Value {
        let mut v = json!({ "cniVersion": cni_version, "code": self.code, "msg": self.msg });
        if !self.details.is_empty() {
            v["details"] = Value::String(self.details.clone());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_json_has_the_spec_fields() {
        let e = CniError::new(code::INVALID_CONFIG, "vni missing").details("add \"vni\": N");
        assert_eq!(
            e.to_json("1.0.0"),
            json!({"cniVersion": "1.0.0", "code": 7, "msg": "vni missing", "details": "add \"vni\": N"})
        );
        let bare = CniError::new(code::TRY_AGAIN, "nvod down").to_json("1.1.0");
        assert!(bare.get("details").is_none());
        assert_eq!(bare["code"], 11);
    }
}
