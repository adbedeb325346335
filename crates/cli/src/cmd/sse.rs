//! The server-sent events client `nvo events` and `nvo monitor` share: nvod's streams
//! (`GET /v1/events`, `GET /v1/monitor`) never end, and `nvo_api::Client` reads whole answers,
//! so the request is made here on its own connection: an HTTP/1.1 head, then a body framed by
//! chunked transfer encoding, by Content-Length, or by the end of the connection, read
//! incrementally and parsed as the WHATWG server-sent events format (fields `event` and
//! `data`, `:` comments as keep-alives, a blank line ending each event).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

use nvo_api::{ApiError, Client, ClientError};

/// Longest line of the answer's head or of an event; nvod's lines are far shorter.
const MAX_LINE: u64 = 64 << 10;

/// One server-sent event: its name (`event:`, "message" when absent) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sse {
    /// The `event:` field.
    pub event: String,
    /// The `data:` fields, joined by newlines.
    pub data: String,
}

/// Why following the stream stopped early.
#[derive(Debug)]
pub enum Follow {
    /// Reading the stream failed.
    Read(io::Error),
    /// Writing a line failed (other than the reader having gone away).
    Write(io::Error),
}

/// Prints the line `line` makes of each event of `stream` on `out` until the stream ends or
/// `count` lines are printed; never reads beyond the last event it prints. An event `line`
/// makes nothing of (`None`) is neither printed nor counted.
pub fn follow(
    stream: &mut impl BufRead,
    count: Option<u64>,
    out: &mut impl Write,
    mut line: impl FnMut(Sse) -> Option<String>,
) -> Result<(), Follow> {
    let mut seen = 0;
    while count.is_none_or(|n| seen < n) {
        let Some(event) = next_event(stream).map_err(Follow::Read)? else {
            break;
        };
        let Some(line) = line(event) else {
            continue;
        };
        seen += 1;
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Ok(()) => {}
            // The reader went away (`nvo events | head -3`): done, not an error.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(Follow::Write(e)),
        }
    }
    Ok(())
}

/// Connects, sends `GET path` and reads the answer's head: the body reader on success, the
/// API error nvod sent otherwise.
pub fn open(client: &Client, path: &str) -> Result<Box<dyn BufRead>, ClientError> {
    open_stream(client, path, "text/event-stream")
}

/// `GET path` on its own connection, answered with a stream of type `accept`: the body reader
/// on success (read as it arrives), the API error nvod sent otherwise. `nvo capture` uses it
/// for its pcapng stream.
pub fn open_stream(
    client: &Client,
    path: &str,
    accept: &str,
) -> Result<Box<dyn BufRead>, ClientError> {
    let socket = client.socket();
    let io = |source| ClientError::Io {
        socket: socket.to_owned(),
        source,
    };
    let mut stream = UnixStream::connect(socket).map_err(|source| ClientError::Connect {
        socket: socket.to_owned(),
        source,
    })?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: nvod\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader).map_err(io)?;
    let (status, framing) = parse_head(&head)?;
    let body = framing.body(reader);
    if (200..300).contains(&status) {
        return Ok(body);
    }
    let mut text = Vec::new();
    body.take(MAX_LINE).read_to_end(&mut text).map_err(io)?;
    let message = serde_json::from_slice::<ApiError>(&text)
        .map(|e| e.error)
        .unwrap_or_else(|_| String::from_utf8_lossy(&text).trim().to_owned());
    Err(ClientError::Api { status, message })
}

/// How the answer's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    Length(u64),
    Close,
}

impl Framing {
    fn body<R: BufRead + 'static>(self, reader: R) -> Box<dyn BufRead> {
        match self {
            Framing::Chunked => Box::new(BufReader::new(Chunked::new(reader))),
            Framing::Length(n) => Box::new(reader.take(n)),
            Framing::Close => Box::new(reader),
        }
    }
}

/// Reads the head up to its blank line (lines bounded by [`MAX_LINE`], at most 100 of them).
fn read_head(reader: &mut impl BufRead) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    for _ in 0..100 {
        let line = read_line(reader)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed in the head",
            )
        })?;
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "answer head over 100 lines",
    ))
}

/// The status and body framing of an answer's head.
fn parse_head(lines: &[String]) -> Result<(u16, Framing), ClientError> {
    let status_line = lines.first().map(String::as_str).unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| ClientError::Protocol(format!("bad status line {status_line:?}")))?;
    let mut framing = Framing::Close;
    for line in &lines[1..] {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            framing = Framing::Chunked;
        } else if name.eq_ignore_ascii_case("content-length") && framing == Framing::Close {
            let n = value
                .parse()
                .map_err(|_| ClientError::Protocol(format!("bad content-length {value:?}")))?;
            framing = Framing::Length(n);
        }
    }
    Ok((status, framing))
}

/// One line without its line ending; `None` at the end of the stream. A line over
/// [`MAX_LINE`] bytes or not UTF-8 is an error.
fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    let n = reader.take(MAX_LINE).read_line(&mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if !line.ends_with('\n') && n as u64 == MAX_LINE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("line longer than {MAX_LINE} bytes"),
        ));
    }
    let trimmed = line.trim_end_matches('\n').trim_end_matches('\r');
    Ok(Some(trimmed.to_owned()))
}

/// The next complete event of a server-sent event stream; `None` when the stream ends (an
/// event cut off by the end is dropped, as the format says).
pub fn next_event(reader: &mut impl BufRead) -> io::Result<Option<Sse>> {
    let mut event = String::new();
    let mut data: Option<String> = None;
    while let Some(line) = read_line(reader)? {
        if line.is_empty() {
            // A blank line ends an event; one without data is not dispatched.
            if let Some(data) = data.take() {
                let event = if event.is_empty() {
                    "message".to_owned()
                } else {
                    event
                };
                return Ok(Some(Sse { event, data }));
            }
            event.clear();
            continue;
        }
        if line.starts_with(':') {
            continue; // a comment: nvod's keep-alive
        }
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => value.clone_into(&mut event),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {} // id, retry and unknown fields: nothing to do for a follower
        }
    }
    Ok(None)
}

/// A reader of a chunked body (RFC 9112 section 7.1): the chunks' data, then end of stream at
/// the last chunk or when the connection closes.
pub struct Chunked<R> {
    inner: R,
    left: u64,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    pub fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let Some(line) = read_line(&mut self.inner)? else {
                self.done = true;
                return Ok(0);
            };
            let size = line.split(';').next().unwrap_or_default().trim();
            self.left = u64::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad chunk size {size:?}"),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..want])?;
        if got == 0 {
            self.done = true;
            return Ok(0);
        }
        self.left -= got as u64;
        if self.left == 0 {
            // The CRLF after the chunk's data.
            read_line(&mut self.inner)?;
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(mut r: impl BufRead) -> Vec<Sse> {
        std::iter::from_fn(|| next_event(&mut r).unwrap()).collect()
    }

    fn sse(event: &str, data: &str) -> Sse {
        Sse {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_follow_the_sse_format() {
        let text = ": keep-alive\r\n\r\nevent: route\r\ndata: {\"a\":1}\r\n\r\n\
                    event:node\ndata:x\ndata: y\nid: 7\n\n\
                    data: plain\n\nevent: lost\n\nevent: cut\ndata: off";
        assert_eq!(
            all(text.as_bytes()),
            [
                sse("route", "{\"a\":1}"),
                sse("node", "x\ny"),
                sse("message", "plain")
            ]
        );
    }

    #[test]
    fn chunked_bodies_are_read_across_chunk_boundaries() {
        let body = "7\r\nevent: \r\n10;ext=1\r\nroute\ndata: {}\n\n\r\n0\r\n\r\nevent: after\n";
        let reader = BufReader::new(Chunked::new(body.as_bytes()));
        assert_eq!(all(reader), [sse("route", "{}")]);
        let mut bad = Chunked::new("zz\r\n".as_bytes());
        let e = bad.read(&mut [0; 8]).unwrap_err();
        assert!(e.to_string().contains("bad chunk size \"zz\""), "{e}");
    }

    #[test]
    fn heads_give_status_and_framing() {
        let head = |lines: &[&str]| {
            let lines: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            parse_head(&lines)
        };
        assert_eq!(
            head(&["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]).unwrap(),
            (200, Framing::Chunked)
        );
        assert_eq!(
            head(&["HTTP/1.1 404 X", "content-length: 12"]).unwrap(),
            (404, Framing::Length(12))
        );
        assert_eq!(head(&["HTTP/1.1 200 OK"]).unwrap(), (200, Framing::Close));
        assert!(head(&["garbage"]).is_err());
        assert!(head(&["HTTP/1.1 200 OK", "Content-Length: -1"]).is_err());
        let mut long = "x".repeat(MAX_LINE as usize + 10).into_bytes();
        long.push(b'\n');
        assert!(read_line(&mut long.as_slice()).is_err());
    }
}
