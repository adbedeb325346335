//! `nvo monitor`: follows nvod's live datapath events, `GET /v1/monitor` (docs/monitor.md),
//! through the server-sent events client in `sse`, and prints one line per event (UTC time
//! of day, type, then the type's fields); `-o json` prints each event's JSON line as nvod
//! sent it. The filters go to nvod, which applies them before an event is queued for this
//! listener. Ends when nvod closes the stream, after `--count` events, on Ctrl-C, or when
//! stdout is closed.

use std::io;

use clap::Args;
use nvo_api::{Client, ClientError, MonitorEvent};

use super::api::segment;
use super::sse::{self, Follow, Sse};
use super::{CliError, Format};

/// `nvo monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Only events of this network.
    #[arg(long, value_name = "VNI")]
    pub network: Option<u32>,
    /// Only events of this port (the interface name, as `nvo port list` shows it).
    #[arg(long, value_name = "NAME")]
    pub port: Option<String>,
    /// Only drops for this reason (a name from `nvo counters`, e.g. unknown_vni).
    #[arg(long, value_name = "NAME")]
    pub reason: Option<String>,
    /// Only these event types: drop, learn, move, age, flood, trace (lost events always show).
    /// Without it every type but trace shows: a trace is one event per packet forwarded.
    #[arg(long = "type", value_name = "T,...", value_delimiter = ',')]
    pub types: Vec<String>,
    /// Stop after N events (default: follow until nvod closes the stream or Ctrl-C).
    #[arg(long, short = 'c', value_name = "N")]
    pub count: Option<u64>,
}

impl MonitorArgs {
    /// The request path with the filters as its query.
    pub fn path(&self) -> String {
        let mut query = Vec::new();
        if let Some(n) = self.network {
            query.push(format!("network={n}"));
        }
        if let Some(p) = &self.port {
            query.push(format!("port={}", segment(p)));
        }
        if let Some(r) = &self.reason {
            query.push(format!("reason={}", segment(r)));
        }
        if !self.types.is_empty() {
            let types: Vec<String> = self.types.iter().map(|t| segment(t)).collect();
            query.push(format!("type={}", types.join(",")));
        }
        if query.is_empty() {
            "/v1/monitor".to_owned()
        } else {
            format!("/v1/monitor?{}", query.join("&"))
        }
    }
}

/// Runs `nvo monitor`.
pub fn monitor(client: &Client, format: Format, args: MonitorArgs) -> Result<(), CliError> {
    let mut stream = sse::open(client, &args.path())?;
    let mut out = io::stdout().lock();
    let line = |event: Sse| match format {
        Format::Json => Some(event.data),
        Format::Text => Some(event_line(&event)),
    };
    sse::follow(&mut stream, args.count, &mut out, line).map_err(|e| match e {
        Follow::Read(source) => CliError::Api(ClientError::Io {
            socket: client.socket().to_owned(),
            source,
        }),
        Follow::Write(e) => CliError::Stdout(e),
    })
}

/// `HH:MM:SS.uuuuuu` (UTC) of a Unix time in nanoseconds.
fn time_of_day(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let micros = (ns % 1_000_000_000) / 1000;
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{micros:06}",
        day / 3600,
        day / 60 % 60,
        day % 60
    )
}

/// One line for an event, or the raw data when it is not an event this CLI knows.
pub fn event_line(e: &Sse) -> String {
    let Ok(ev) = serde_json::from_str::<MonitorEvent>(&e.data) else {
        return format!("{} {}", e.event, e.data.replace('\n', " "));
    };
    let t = time_of_day(ev.time_ns);
    format!("{t} {:<5} {}", ev.kind.name(), ev.summary())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(data: &str) -> String {
        event_line(&Sse {
            event: "x".into(),
            data: data.into(),
        })
    }

    #[test]
    fn lines_per_type() {
        assert_eq!(
            line(
                r#"{"type":"drop","time_ns":3723000004000,"network":999,"reason":"unknown_vni","code":9,"len":92,"decode":"from 10.0.0.2 to port 4789 vxlan vni 999 | a > b"}"#
            ),
            "01:02:03.000004 drop  unknown_vni vni 999 port - len 92: from 10.0.0.2 to port 4789 \
             vxlan vni 999 | a > b"
        );
        assert_eq!(
            line(
                r#"{"type":"move","time_ns":0,"network":10,"mac":"02:00:00:00:00:0a","where":"port b","from":"remote 192.0.2.1"}"#
            ),
            "00:00:00.000000 move  vni 10 02:00:00:00:00:0a from remote 192.0.2.1 to port b"
        );
        assert_eq!(
            line(r#"{"type":"lost","time_ns":0,"count":12,"stage":"listener"}"#),
            "00:00:00.000000 lost  12 events lost (listener)"
        );
        assert_eq!(
            line(
                r#"{"type":"trace","time_ns":0,"network":100,"port":"c-red1","where":"remote 10.100.0.2","len":98,"decode":"a > b"}"#
            ),
            "00:00:00.000000 trace vni 100 port c-red1 -> remote 10.100.0.2 len 98: a > b"
        );
        assert_eq!(
            line(
                r#"{"type":"trace","time_ns":0,"network":100,"from":"remote 10.100.0.2","where":"port c-red1","len":98,"decode":"a > b"}"#
            ),
            "00:00:00.000000 trace vni 100 remote 10.100.0.2 -> port c-red1 len 98: a > b"
        );
        assert_eq!(line("{\"type\":\"new\"}"), "x {\"type\":\"new\"}");
    }

    #[test]
    fn filters_become_the_query() {
        let args = MonitorArgs {
            network: Some(10),
            port: Some("c 1".into()),
            reason: None,
            types: vec!["drop".into(), "learn".into()],
            count: None,
        };
        assert_eq!(
            args.path(),
            "/v1/monitor?network=10&port=c%201&type=drop,learn"
        );
        let none = MonitorArgs {
            network: None,
            port: None,
            reason: None,
            types: vec![],
            count: Some(1),
        };
        assert_eq!(none.path(), "/v1/monitor");
    }
}
