//! `nvo meter add|del|show`: flow-table meters (`/v1/meters`), numbered token-bucket policers
//! that flow rules police through with `meter:N`. Rates and bursts are written as `nvo qos`
//! (and tc) write them: `100mbit`, `64k`.

use clap::Subcommand;
use nvo_api::{Client, Meter, MeterSpec};
use serde_json::Value;

use super::api::{done, show};
use super::qos::{parse_rate, parse_size};
use super::CliError;
use super::Format;
use crate::table::Table;

/// `nvo meter ...`
#[derive(Debug, Subcommand)]
pub enum MeterCmd {
    /// Add meter N: a token-bucket policer of RATE with a bucket of BURST bytes, for flow
    /// rules to police through with the action meter:N.
    #[command(
        after_help = "Example:\n  nvo meter add 1 --rate 100mbit --burst 64k\n  \
                      nvo flow add c-red1 'priority=100,tcp,actions=meter:1,normal'\n\n\
                      A meter is one bucket, shared by every rule that names it (as OpenFlow's \
                      meters). A frame over the rate is dropped (counted on the meter and as \
                      the drop reason qos_policed); one under it goes on to the rule's next \
                      actions."
    )]
    Add {
        /// The meter's number (1 to 4294901760).
        id: u32,
        /// The rate: bit/s, or with a unit (kbit, mbit, gbit, tbit), e.g. 100mbit.
        #[arg(long, value_parser = parse_rate)]
        rate: u64,
        /// The burst in bytes, or with a unit (k, m: 1024, 1024²), e.g. 64k.
        #[arg(long, value_parser = parse_size)]
        burst: u64,
    },
    /// Delete meter N (refused while a flow rule names it: delete those rules first).
    #[command(after_help = "Example:\n  nvo meter del 1")]
    Del {
        /// The meter's number.
        id: u32,
    },
    /// Show the meters: rate, burst, how many rules use each, frames passed and dropped.
    #[command(visible_alias = "list", after_help = "Example:\n  nvo meter show")]
    Show,
}

/// Runs `nvo meter ...`.
pub fn meter(client: &Client, format: Format, cmd: MeterCmd) -> Result<(), CliError> {
    match cmd {
        MeterCmd::Add { id, rate, burst } => {
            let body = MeterSpec { id, rate, burst };
            let answer: Value = client.post("/v1/meters", &body)?;
            done(
                format,
                answer,
                format!("meter {id}: {rate} bit/s, burst {burst} bytes"),
            )
        }
        MeterCmd::Del { id } => {
            client.delete(&format!("/v1/meters/{id}"))?;
            done(format, Value::Null, format!("meter {id} deleted"))
        }
        MeterCmd::Show => {
            let answer = client.get("/v1/meters")?;
            show(format, answer, |m: &Vec<Meter>| table(m).to_string())
        }
    }
}

/// The meter table: settings, users and counters.
pub fn table(meters: &[Meter]) -> Table {
    let mut t = Table::new(&[
        "METER",
        "RATE",
        "BURST",
        "RULES",
        "PASSED",
        "PASSED_BYTES",
        "DROPPED",
        "DROPPED_BYTES",
    ]);
    for c in 0..8 {
        t = t.right(c);
    }
    for m in meters {
        t.row([
            m.spec.id.to_string(),
            format!("{} bit/s", m.spec.rate),
            format!("{} B", m.spec.burst),
            m.rules.to_string(),
            m.passed_frames.to_string(),
            m.passed_bytes.to_string(),
            m.dropped_frames.to_string(),
            m.dropped_bytes.to_string(),
        ]);
    }
    t
}
