//! Meters (`/v1/meters`): numbered token-bucket policers that flow rules police through with
//! the `meter:N` action (OpenFlow's meters: one bucket per meter, shared by every rule that
//! names it).
//!
//! ```json
//! POST /v1/meters        {"id": 1, "rate": 100000000, "burst": 65536}
//! GET  /v1/meters
//! DELETE /v1/meters/1
//! ```

use serde::{Deserialize, Serialize};

/// `POST /v1/meters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterSpec {
    /// The meter's number (1 to 4294901760), as `meter:N` names it.
    pub id: u32,
    /// The rate in bit/s (8000 to 10^12).
    pub rate: u64,
    /// The burst in bytes (1518 to 64 MiB).
    pub burst: u64,
}

/// A meter as shown: its settings, how many rules use it and what its bucket counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meter {
    /// Its settings.
    #[serde(flatten)]
    pub spec: MeterSpec,
    /// How many flow rules name it.
    #[serde(default)]
    pub rules: u64,
    /// Frames under the rate (passed on to the rule's other actions).
    #[serde(default)]
    pub passed_frames: u64,
    /// Their bytes.
    #[serde(default)]
    pub passed_bytes: u64,
    /// Frames over the rate, dropped (counted as the drop reason `qos_policed`).
    #[serde(default)]
    pub dropped_frames: u64,
    /// Their bytes.
    #[serde(default)]
    pub dropped_bytes: u64,
}
