//! A fake nvod on a unix socket for the CLI's tests: it answers each request with what a
//! function of the method, path and body says, and records what it saw. Shared by tests/api.rs
//! and tests/prober.rs.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// A fake nvod.
pub struct Fake {
    socket: PathBuf,
    seen: Arc<Mutex<Vec<Seen>>>,
    _thread: JoinHandle<()>,
}

impl Fake {
    /// Answers every request with `status` and `body`.
    pub fn new(tag: &str, status: u16, body: &str) -> Fake {
        let body = body.to_owned();
        Fake::routed(tag, move |_, _| (status, body.clone()))
    }

    /// Answers what a function of the method and path says.
    pub fn routed(
        tag: &str,
        answer: impl Fn(&str, &str) -> (u16, String) + Send + 'static,
    ) -> Fake {
        Fake::by_body(tag, move |method, path, _| answer(method, path))
    }

    /// Answers what a function of the method, path and request body says.
    pub fn by_body(
        tag: &str,
        answer: impl Fn(&str, &str, &Value) -> (u16, String) + Send + 'static,
    ) -> Fake {
        let socket =
            std::env::temp_dir().join(format!("nvo-cli-fake-{tag}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut parts = line.split_whitespace();
                let (method, path) = (
                    parts.next().unwrap().to_owned(),
                    parts.next().unwrap().to_owned(),
                );
                let mut length = 0;
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut buf = vec![0; length];
                reader.read_exact(&mut buf).unwrap();
                let body = if buf.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&buf).unwrap()
                };
                let (status, out) = answer(&method, &path, &body);
                log.lock().unwrap().push(Seen { method, path, body });
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{out}",
                    out.len()
                );
                reader.get_mut().write_all(answer.as_bytes()).unwrap();
            }
        });
        Fake {
            socket,
            seen,
            _thread: thread,
        }
    }

    /// Runs `nvo ARGS` against this fake.
    pub fn nvo(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nvo"))
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .env_remove("NVO_SOCKET")
            .output()
            .unwrap()
    }

    /// The requests so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The socket path.
    pub fn socket(&self) -> &PathBuf {
        &self.socket
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A successful run's standard output.
pub fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "nvo failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}
