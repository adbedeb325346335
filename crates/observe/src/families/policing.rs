//! The policers' families: each QoS profile's (summed over its attachments, as `nvo qos show`
//! shows it) and each flow-table meter's (`nvo meter show`). Labels: `profile` (at most the
//! node's 1024 QoS profiles) and `meter` (at most 1024 meters).
//!
//! ```text
//!  nvo_qos_conformed_frames_total{profile}   nvo_meter_passed_frames_total{meter}
//!  nvo_qos_conformed_bytes_total{profile}    nvo_meter_passed_bytes_total{meter}
//!  nvo_qos_policed_frames_total{profile}     nvo_meter_dropped_frames_total{meter}
//!  nvo_qos_policed_bytes_total{profile}      nvo_meter_dropped_bytes_total{meter}
//! ```

use crate::text::{Exposition, Kind, TextError};

/// One policer's counters at a scrape: a QoS profile (named) or a meter (numbered).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policer {
    /// The `profile` or `meter` label.
    pub name: String,
    /// Frames under the rate.
    pub passed_frames: u64,
    /// Their bytes.
    pub passed_bytes: u64,
    /// Frames over the rate, dropped (drop reason `qos_policed`).
    pub dropped_frames: u64,
    /// Their bytes.
    pub dropped_bytes: u64,
}

/// The families of one kind of policer: `prefix` (`nvo_qos`), the label, and the words for
/// passed and dropped (`conformed`, `policed`).
struct Policers {
    prefix: &'static str,
    label: &'static str,
    passed: &'static str,
    dropped: &'static str,
    what: &'static str,
}

const QOS: Policers = Policers {
    prefix: "nvo_qos",
    label: "profile",
    passed: "conformed",
    dropped: "policed",
    what: "QoS profile's policers (summed over its attachments)",
};

const METER: Policers = Policers {
    prefix: "nvo_meter",
    label: "meter",
    passed: "passed",
    dropped: "dropped",
    what: "flow-table meter",
};

/// Renders the QoS profiles' and the meters' families (a family without series is left out
/// by the exposition).
pub(super) fn policing_families(
    e: &mut Exposition,
    qos: &[Policer],
    meters: &[Policer],
) -> Result<(), TextError> {
    kind_families(e, &QOS, qos)?;
    kind_families(e, &METER, meters)
}

fn kind_families(e: &mut Exposition, k: &Policers, list: &[Policer]) -> Result<(), TextError> {
    type Field = fn(&Policer) -> u64;
    let families: [(&str, &str, &str, Field); 4] = [
        (k.passed, "frames", "Frames under the rate", |p| {
            p.passed_frames
        }),
        (
            k.passed,
            "bytes",
            "Bytes of the frames under the rate",
            |p| p.passed_bytes,
        ),
        (
            k.dropped,
            "frames",
            "Frames over the rate, dropped (qos_policed)",
            |p| p.dropped_frames,
        ),
        (
            k.dropped,
            "bytes",
            "Bytes of the frames over the rate, dropped",
            |p| p.dropped_bytes,
        ),
    ];
    for (word, unit, help, value) in families {
        let mut f = e.family(
            &format!("{}_{word}_{unit}_total", k.prefix),
            Kind::Counter,
            &format!("{help}, by {}.", k.what),
        )?;
        for p in list {
            f.sample(&[(k.label, &p.name)], value(p))?;
        }
    }
    Ok(())
}
