//! `nvo events`: follows nvod's event stream, `GET /v1/events` (server-sent events, one
//! `event:` name and one `data:` JSON line per event: node, locator and route changes of the
//! overlay), and prints one line per event as it arrives; `-o json` prints each event's JSON
//! line as nvod sent it. The stream is read by the client in `sse`, shared with `nvo monitor`.
//! The command ends when nvod closes the stream, after `--count` events, on Ctrl-C (SIGINT's
//! default action), or when stdout is closed.

use std::io::{self, BufRead, Write};

use clap::Args;
use nvo_api::{Client, ClientError, OverlayEvent};

use super::sse::{self, Follow, Sse};
use super::{CliError, Format};

/// `nvo events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Stop after N events (default: follow until nvod closes the stream or Ctrl-C).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// Runs `nvo events`.
pub fn events(client: &Client, format: Format, args: EventsArgs) -> Result<(), CliError> {
    let mut stream = sse::open(client, "/v1/events")?;
    let mut out = io::stdout().lock();
    follow(&mut stream, format, args.count, &mut out).map_err(|e| match e {
        Follow::Read(source) => CliError::Api(ClientError::Io {
            socket: client.socket().to_owned(),
            source,
        }),
        Follow::Write(e) => CliError::Stdout(e),
    })
}

/// Prints each event of `stream` on `out` (see `sse::follow`): its JSON, or its line.
pub fn follow(
    stream: &mut impl BufRead,
    format: Format,
    count: Option<u64>,
    out: &mut impl Write,
) -> Result<(), Follow> {
    sse::follow(stream, count, out, |event| {
        Some(match format {
            Format::Json => event.data,
            Format::Text => event_line(&event),
        })
    })
}

/// One line for an event: `kind action object details`, or the raw data when it is not an
/// event this CLI knows.
pub fn event_line(e: &Sse) -> String {
    match serde_json::from_str::<OverlayEvent>(&e.data) {
        Ok(event) => event.summary(),
        Err(_) => format!("{} {}", e.event, e.data.replace('\n', " ")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Read};

    use super::*;
    use crate::cmd::sse::Chunked;

    fn sse(event: &str, data: &str) -> Sse {
        Sse {
            event: event.into(),
            data: data.into(),
        }
    }

    /// The rest of a stream nvod keeps open: reading it is a failure of the test.
    struct Open;

    impl Read for Open {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("read past the last event asked for"))
        }
    }

    /// Output whose reader has gone away.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const TWO: &str = "event: own\ndata: {\"kind\":\"own\",\"action\":\"set\",\"node\":4}\n\n\
                       event: node\ndata: {\"kind\":\"node\",\"action\":\"removed\",\"node\":2}\n\n";

    #[test]
    fn following_stops_after_count_without_waiting_for_more() {
        // Two chunks split mid-line, then a connection that stays open.
        let chunks = format!(
            "1e\r\n{}\r\n{:x}\r\n{}\r\n",
            &TWO[..30],
            TWO.len() - 30,
            &TWO[30..]
        );
        let stream = || BufReader::new(Chunked::new(BufReader::new(chunks.as_bytes().chain(Open))));
        let mut out = Vec::new();
        follow(&mut stream(), Format::Text, Some(2), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "own set 4\nnode removed 2\n"
        );
        let mut out = Vec::new();
        follow(&mut stream(), Format::Json, Some(1), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"kind\":\"own\",\"action\":\"set\",\"node\":4}\n"
        );
        // Without a count it follows on, and a broken stream is an error.
        let e = follow(&mut stream(), Format::Text, None, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(e, Follow::Read(ref e) if e.to_string().contains("read past")),
            "{e:?}"
        );
        // A closed stdout ends it quietly.
        follow(&mut stream(), Format::Text, None, &mut Closed).unwrap();
    }

    #[test]
    fn event_lines() {
        let line = |data: &str| event_line(&sse("x", data));
        assert_eq!(
            line(
                r#"{"kind":"node","action":"set","node":2,"locators":[{"addr":"fd00::2","weight":3}]}"#
            ),
            "node set 2 locators fd00::2@3"
        );
        assert_eq!(
            line(r#"{"kind":"node","action":"removed","node":2}"#),
            "node removed 2"
        );
        assert_eq!(
            line(r#"{"kind":"route","action":"set","app":"ethernet","dst":5,"next_hops":[2,3]}"#),
            "route set ethernet 5 via 2,3"
        );
        assert_eq!(
            line(r#"{"kind":"route","action":"removed","app":"ipv4","dst":5}"#),
            "route removed ipv4 5"
        );
        assert_eq!(
            line(r#"{"kind":"own","action":"set","node":4}"#),
            "own set 4"
        );
        // An event this CLI does not know is shown as it came.
        assert_eq!(
            line("{\"kind\":\"probe\"}\nmore"),
            "x {\"kind\":\"probe\"} more"
        );
    }
}
