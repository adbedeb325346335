//! A small blocking client for nvod's API: one HTTP/1.1 request per connection on the unix socket
//! (`Connection: close`), JSON in and out.
//!
//! Hand-written rather than pulled from an HTTP stack because the CLI needs only this, and a CLI
//! that starts fast and links little is what operators script against.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ApiError;

/// Where nvod listens unless its configuration says otherwise.
pub const DEFAULT_SOCKET: &str = "/run/nvo/nvod.sock";

/// Largest answer the client accepts (an FDB listing of a full table fits comfortably).
const MAX_RESPONSE: u64 = 64 << 20;

/// Why an API call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// nvod is not listening on the socket.
    #[error("cannot reach nvod at {socket}: {source} (is nvod running? pass --socket if it listens elsewhere)")]
    Connect {
        /// The socket path tried.
        socket: PathBuf,
        /// What connect said.
        source: std::io::Error,
    },
    /// The connection broke mid-request.
    #[error("talking to nvod at {socket}: {source}")]
    Io {
        /// The socket path.
        socket: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// nvod answered with an error status.
    #[error("{message} (HTTP {status})")]
    Api {
        /// HTTP status.
        status: u16,
        /// nvod's one-line explanation.
        message: String,
    },
    /// The answer was not what the API promises.
    #[error("unexpected answer from nvod: {0}")]
    Protocol(String),
}

/// A connection-per-request API client.
#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    timeout: Duration,
}

impl Client {
    /// A client for the nvod listening on `socket`.
    pub fn new(socket: impl AsRef<Path>) -> Self {
        Client {
            socket: socket.as_ref().to_owned(),
            timeout: Duration::from_secs(10),
        }
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `GET path`, decoding the JSON answer.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.call("GET", path, None)
    }

    /// `POST path` with a JSON body, decoding the JSON answer.
    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let body = serde_json::to_vec(body).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.call("POST", path, Some(&body))
    }

    /// `PUT path` with a JSON body, decoding the JSON answer.
    pub fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let body = serde_json::to_vec(body).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.call("PUT", path, Some(&body))
    }

    /// `DELETE path`; the answer carries no body.
    pub fn delete(&self, path: &str) -> Result<(), ClientError> {
        self.call::<serde_json::Value>("DELETE", path, None)
            .map(|_| ())
    }

    /// Sends one request and returns the decoded answer (`null` for an empty body).
    pub fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<T, ClientError> {
        let (status, body) = self.raw(method, path, body)?;
        if !(200..300).contains(&status) {
            let message = serde_json::from_slice::<ApiError>(&body)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body).trim().to_owned());
            return Err(ClientError::Api { status, message });
        }
        let body: &[u8] = if body.is_empty() { b"null" } else { &body };
        serde_json::from_slice(body)
            .map_err(|e| ClientError::Protocol(format!("{method} {path}: {e}")))
    }

    /// Sends one request and returns the status and raw body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let io = |source| ClientError::Io {
            socket: self.socket.clone(),
            source,
        };
        let mut stream =
            UnixStream::connect(&self.socket).map_err(|source| ClientError::Connect {
                socket: self.socket.clone(),
                source,
            })?;
        stream.set_read_timeout(Some(self.timeout)).map_err(io)?;
        stream.set_write_timeout(Some(self.timeout)).map_err(io)?;
        let body = body.unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: nvod\r\nAccept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let sent = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body));
        if let Err(e) = sent {
            // nvod may answer before reading the whole body (413 on a declared length over
            // its limit) and close: its answer is still there to read.
            if !matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ) {
                return Err(io(e));
            }
        }
        let mut answer = Vec::new();
        match stream.take(MAX_RESPONSE).read_to_end(&mut answer) {
            Ok(_) => {}
            // A unix socket whose peer closed with our unread body still queued reads what the
            // peer wrote, then ECONNRESET instead of end-of-file: the answer is all there.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => {}
            Err(e) => return Err(io(e)),
        }
        parse_response(&answer)
    }
}

/// Splits an HTTP/1.1 answer into status and body (Content-Length, chunked, or until close).
fn parse_response(answer: &[u8]) -> Result<(u16, Vec<u8>), ClientError> {
    let bad = |what: &str| ClientError::Protocol(what.to_owned());
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = std::str::from_utf8(&answer[..end]).map_err(|_| bad("headers are not UTF-8"))?;
    let rest = &answer[end + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| ClientError::Protocol(format!("bad status line {status_line:?}")))?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        }
    }
    let body = if chunked {
        dechunk(rest).ok_or_else(|| bad("broken chunked body"))?
    } else if let Some(n) = length {
        rest.get(..n)
            .ok_or_else(|| bad("body shorter than Content-Length"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok((status, body))
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_chunked_and_close_delimited_answers() {
        let a = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(a).unwrap(), (200, b"{}".to_vec()));
        let c = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(c).unwrap(), (404, b"abcde".to_vec()));
        let e = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse_response(e).unwrap(), (204, Vec::new()));
        assert!(parse_response(b"HTTP/1.1 200").is_err());
        assert!(parse_response(b"garbage\r\n\r\n").is_err());
    }

    #[test]
    fn connect_error_names_the_socket() {
        let err = Client::new("/nonexistent/nvod.sock")
            .get::<serde_json::Value>("/v1/node")
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/nvod.sock"), "{err}");
    }
}
