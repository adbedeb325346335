//! `nvo qos add|del|show|attach|detach`: QoS profiles (a token-bucket policer with optional DSCP
//! marking or trust) and where they are attached (`/v1/qos`, `/v1/ports/{port}/qos`,
//! `/v1/ports/{port}/vports/{mac}/qos`). Rates and bursts are written as tc writes them:
//! `100mbit`, `64k`.

use clap::Subcommand;
use nvo_api::{Client, Qos, QosAttach, QosSpec};
use serde_json::Value;

use super::api::{done, segment, show};
use super::CliError;
use super::Format;
use crate::table::Table;

/// `nvo qos ...`
#[derive(Debug, Subcommand)]
pub enum QosCmd {
    /// Add a QoS profile: a policer of RATE with a bucket of BURST bytes, and optionally a
    /// DSCP to mark IP frames with (their tunnel packets' outer TOS follows) or --trust.
    #[command(
        after_help = "Example:\n  nvo qos add silver --rate 100mbit --burst 64k\n  \
                      nvo qos add gold --rate 1gbit --burst 256k --dscp 46\n  \
                      nvo qos attach c-red1 silver\n  \
                      nvo qos attach hv0 02:00:00:00:01:01 gold\n\n\
                      Each port or virtual port a profile is attached to gets its own bucket; \
                      frames from it beyond the rate and burst are dropped (qos_policed)."
    )]
    Add {
        /// The profile's name.
        name: String,
        /// The rate: bit/s, or with a unit (kbit, mbit, gbit, tbit), e.g. 100mbit.
        #[arg(long, value_parser = parse_rate)]
        rate: u64,
        /// The burst in bytes, or with a unit (k, m: 1024, 1024²), e.g. 64k.
        #[arg(long, value_parser = parse_size)]
        burst: u64,
        /// Mark IP frames from the port with this DSCP (0-63).
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=63), conflicts_with = "trust")]
        dscp: Option<u8>,
        /// Trust the frames' own DSCP: the tunnel packets' outer TOS is the inner packet's.
        #[arg(long)]
        trust: bool,
    },
    /// Delete a QoS profile (detach it first).
    #[command(after_help = "Example:\n  nvo qos del silver")]
    Del {
        /// The profile's name.
        name: String,
    },
    /// Show the QoS profiles, where each is attached and what their policers counted.
    #[command(visible_alias = "list", after_help = "Example:\n  nvo qos show")]
    Show,
    /// Attach a QoS profile to a port, to a shared port's virtual port (PORT MAC NAME), or to
    /// a trunk's VLAN (PORT VID NAME).
    #[command(
        override_usage = "nvo qos attach [OPTIONS] PORT [MAC|VID] NAME",
        after_help = "Example:\n  nvo qos attach c-red1 silver\n  nvo qos attach hv0 02:00:00:00:01:01 gold\n  \
                      nvo qos attach trunk0 10 silver"
    )]
    Attach {
        /// The port, then the virtual port's MAC or the trunk's VLAN ID if any, then the
        /// profile.
        #[arg(required = true, num_args = 2..=3, value_name = "PORT [MAC|VID] NAME")]
        args: Vec<String>,
    },
    /// Detach the QoS profile of a port, virtual port or trunk VLAN.
    #[command(
        after_help = "Example:\n  nvo qos detach c-red1\n  nvo qos detach hv0 02:00:00:00:01:01\n  nvo qos detach trunk0 10"
    )]
    Detach {
        /// The port.
        port: String,
        /// The virtual port's MAC (a shared port) or the VLAN ID (a trunk).
        #[arg(value_name = "MAC|VID")]
        within: Option<String>,
    },
}

/// Runs `nvo qos ...`.
pub fn qos(client: &Client, format: Format, cmd: QosCmd) -> Result<(), CliError> {
    match cmd {
        QosCmd::Add {
            name,
            rate,
            burst,
            dscp,
            trust,
        } => {
            let body = QosSpec {
                name: name.clone(),
                rate,
                burst,
                dscp,
                trust,
            };
            let answer: Value = client.post("/v1/qos", &body)?;
            done(
                format,
                answer,
                format!("qos profile {name}: {rate} bit/s, burst {burst} bytes"),
            )
        }
        QosCmd::Del { name } => {
            client.delete(&format!("/v1/qos/{}", segment(&name)))?;
            done(format, Value::Null, format!("qos profile {name} deleted"))
        }
        QosCmd::Show => {
            let answer = client.get("/v1/qos")?;
            show(format, answer, |q: &Vec<Qos>| table(q).to_string())
        }
        QosCmd::Attach { args } => {
            let (port, within, name) = attach_args(&args);
            let (path, target) = attachment(port, within, "qos");
            let body = QosAttach {
                profile: name.clone(),
            };
            client.put::<_, Value>(&path, &body)?;
            done(
                format,
                Value::Null,
                format!("qos profile {name} attached to {target}"),
            )
        }
        QosCmd::Detach { port, within } => {
            let (path, target) = attachment(&port, within.as_deref(), "qos");
            client.delete(&path)?;
            done(
                format,
                Value::Null,
                format!("qos profile detached from {target}"),
            )
        }
    }
}

/// Parses a rate: bit/s, or a number with kbit, mbit, gbit or tbit (decimal, as tc).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let units = [
        ("tbit", 1e12),
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(u, s)| t.strip_suffix(u).map(|n| (n, *s)))
        .unwrap_or((t.as_str(), 1.0));
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a rate; write e.g. 100mbit, 1gbit or 500000"))?;
    let bits = value * scale;
    if !(1.0..=1e13).contains(&bits) {
        return Err(format!("{text:?} is out of range; write e.g. 100mbit"));
    }
    Ok(bits.round() as u64)
}

/// Parses a size in bytes: a number, or with k or m (1024, 1024², as tc's burst), kb, kib.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let units = [
        ("kib", 1024u64),
        ("mib", 1 << 20),
        ("kb", 1024),
        ("mb", 1 << 20),
        ("k", 1024),
        ("m", 1 << 20),
        ("b", 1),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(u, s)| t.strip_suffix(u).map(|n| (n, *s)))
        .unwrap_or((t.as_str(), 1));
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size; write e.g. 64k or 1500"))?;
    value
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// The profile table: settings, attachments and counters.
pub fn table(profiles: &[Qos]) -> Table {
    let mut t = Table::new(&[
        "NAME", "RATE", "BURST", "DSCP", "ATTACHED", "PASSED", "POLICED",
    ])
    .right(1)
    .right(2)
    .right(5)
    .right(6);
    for q in profiles {
        let dscp = match (q.spec.dscp, q.spec.trust) {
            (Some(d), _) => format!("mark {d}"),
            (None, true) => "trust".to_owned(),
            (None, false) => "-".to_owned(),
        };
        let attached = if q.attached.is_empty() {
            "-".to_owned()
        } else {
            q.attached.join(",")
        };
        t.row([
            q.spec.name.clone(),
            format!("{} bit/s", q.spec.rate),
            format!("{} B", q.spec.burst),
            dscp,
            attached,
            q.conformed_frames.to_string(),
            q.policed_frames.to_string(),
        ]);
    }
    t
}

/// `attach`'s values: the port, the MAC or VLAN ID if given, and the profile's name.
pub(super) fn attach_args(args: &[String]) -> (&str, Option<&str>, &String) {
    match args {
        [port, name] => (port, None, name),
        [port, within, name] => (port, Some(within), name),
        _ => unreachable!("clap takes 2 or 3 values"),
    }
}

/// The API path of a profile attachment (`one`: `qos`, `acl`) and how its target is named:
/// the port, a virtual port (`within` a MAC: `PORT/MAC`) or a trunk's VLAN circuit (`within`
/// a number: `PORT.VID`, as counters and FDB entries name it).
pub(super) fn attachment(port: &str, within: Option<&str>, one: &str) -> (String, String) {
    let port_ = segment(port);
    match within {
        None => (format!("/v1/ports/{port_}/{one}"), port.to_owned()),
        Some(vid) if vid.bytes().all(|b| b.is_ascii_digit()) => (
            format!("/v1/ports/{port_}/vlans/{vid}/{one}"),
            format!("{port}.{vid}"),
        ),
        Some(mac) => (
            format!("/v1/ports/{port_}/vports/{}/{one}", segment(mac)),
            format!("{port}/{mac}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_sizes_read_as_tc_writes_them() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate("64kbit"), Ok(64_000));
        assert_eq!(parse_rate("500000"), Ok(500_000));
        assert!(parse_rate("fast").unwrap_err().contains("not a rate"));
        assert!(parse_rate("0").is_err());
        assert_eq!(parse_size("64k"), Ok(65_536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1500"), Ok(1500));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
    }

    #[test]
    fn attachments_name_a_port_a_virtual_port_or_a_trunk_vlan() {
        assert_eq!(
            attachment("c-red1", None, "qos"),
            ("/v1/ports/c-red1/qos".to_owned(), "c-red1".to_owned())
        );
        assert_eq!(
            attachment("hv0", Some("02:00:00:00:01:01"), "acl"),
            (
                "/v1/ports/hv0/vports/02:00:00:00:01:01/acl".to_owned(),
                "hv0/02:00:00:00:01:01".to_owned()
            )
        );
        assert_eq!(
            attachment("trunk0", Some("10"), "acl"),
            (
                "/v1/ports/trunk0/vlans/10/acl".to_owned(),
                "trunk0.10".to_owned()
            )
        );
    }
}
