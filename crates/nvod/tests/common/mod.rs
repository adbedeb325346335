//! Helpers of nvod's integration tests: a running nvod inside a network namespace, killed when
//! the test ends (also when it fails), and its API.
//!
//! Needs root and iproute2, like every network test of nvo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nvo_api::{Client, ClientError};
use nvo_io::netns::{run_in, NamedNetns};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub mod topo;

/// A scratch directory removed on drop.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("nvod-test-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A namespace with `lo` up and an underlay veth pair `u0`/`u1` (`u0` holds `address`), so
/// that nvod has a locator to bind.
pub fn host(tag: &str, address: &str) -> NamedNetns {
    let ns = NamedNetns::create(&nvo_io::netns::unique_name(tag)).unwrap();
    ns.ip(&["link", "set", "lo", "up"]).unwrap();
    veths(&ns, &[("u0", "u1")]);
    ns.ip(&["addr", "add", address, "dev", "u0"]).unwrap();
    ns
}

/// Veth pairs `(a, b)` inside `ns`, both ends up.
pub fn veths(ns: &NamedNetns, pairs: &[(&str, &str)]) {
    for &(a, b) in pairs {
        ns.ip(&["link", "add", a, "type", "veth", "peer", "name", b])
            .unwrap();
        ns.ip(&["link", "set", a, "up"]).unwrap();
        ns.ip(&["link", "set", b, "up"]).unwrap();
    }
}

/// Where nvod's HTTP listener (`http_listen`: metrics, status page) answers inside the namespace.
pub const HTTP: &str = "127.0.0.1:9477";

/// `host` with the locator 10.209.0.1 and also a tenant veth pair `c0`/`c1` (`c1` holds
/// 10.0.0.1/24), for a test that makes `c0` a port.
pub fn host_with_port(tag: &str) -> NamedNetns {
    let ns = host(tag, "10.209.0.1/24");
    veths(&ns, &[("c0", "c1")]);
    ns.ip(&["addr", "add", "10.0.0.1/24", "dev", "c1"]).unwrap();
    ns
}

/// nvod in a `host_with_port` namespace with its HTTP listener on `HTTP` (`extra`: more
/// top-level TOML lines) and a BGP neighbour, 10.209.0.250, that never answers.
pub fn start_with_http(ns: &NamedNetns, dir: &Path, extra: &str) -> Nvod {
    Nvod::start(
        ns.name(),
        dir,
        "10.209.0.1",
        &format!(
            "http_listen = \"{HTTP}\"\n{extra}\
             [bgp]\nasn = 65001\nrouter_id = \"10.209.0.1\"\n\
             neighbors = [{{address = \"10.209.0.250\"}}]\n"
        ),
    )
}

/// A TCP connection to `HTTP`, made inside `ns`, whose reads give up after 10 s.
pub fn http_connect(ns: &NamedNetns) -> TcpStream {
    let stream = run_in(ns.name(), || TcpStream::connect(HTTP))
        .unwrap()
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends `request` as is on a new connection to `HTTP` and reads the answer to its end:
/// (status, head, body).
pub fn http_exchange(ns: &NamedNetns, request: &str) -> (u16, String, String) {
    let mut s = http_connect(ns);
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// An nvod process in a namespace; killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct Nvod {
    child: Option<Child>,
    pub client: Client,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    config: PathBuf,
    log: PathBuf,
    netns: String,
}

impl Nvod {
    /// Writes a config in `dir` (extra TOML lines appended) and starts nvod in `netns`.
    pub fn start(netns: &str, dir: &Path, locator: &str, extra: &str) -> Nvod {
        let mut nvod = Nvod::prepare(netns, dir, locator, extra);
        nvod.spawn();
        nvod
    }

    /// Writes the config; does not start nvod.
    pub fn prepare(netns: &str, dir: &Path, locator: &str, extra: &str) -> Nvod {
        let socket = dir.join("nvod.sock");
        let state_dir = dir.join("state");
        let config = dir.join("nvod.toml");
        // NVO_TEST_WORKERS=N runs every test's nvod with N datapath workers (default: nvod's,
        // one per CPU), unless the test sets `workers` itself.
        let workers = match std::env::var("NVO_TEST_WORKERS") {
            Ok(n) if !extra.contains("workers") => format!("workers = {n}\n"),
            _ => String::new(),
        };
        fs::write(
            &config,
            format!(
                "locator = \"{locator}\"\napi_socket = \"{}\"\nstate_dir = \"{}\"\nlog = \"debug\"\n{workers}{extra}",
                socket.display(),
                state_dir.display()
            ),
        )
        .unwrap();
        Nvod {
            child: None,
            client: Client::new(&socket),
            socket,
            state_dir,
            config,
            log: dir.join("nvod.log"),
            netns: netns.to_owned(),
        }
    }

    /// Starts (again) the process and waits until it answers.
    pub fn spawn(&mut self) {
        self.spawn_under(&[]);
    }

    /// Starts nvod as `ip netns exec NS WRAPPER... nvod` (`setpriv` dropping capabilities,
    /// say) and waits until it answers.
    pub fn spawn_under(&mut self, wrapper: &[&str]) {
        let child = self.launch(wrapper);
        self.child = Some(child);
        self.wait_answer();
    }

    /// Starts nvod under `wrapper` and waits for it to exit: its status and log, for a start
    /// that must fail.
    pub fn start_failing(
        netns: &str,
        dir: &Path,
        locator: &str,
        extra: &str,
        wrapper: &[&str],
    ) -> (std::process::ExitStatus, String) {
        let mut nvod = Nvod::prepare(netns, dir, locator, extra);
        let mut child = nvod.launch(wrapper);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return (status, nvod.log_text());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                nvod.child = None;
                panic!("nvod did not exit:\n{}", nvod.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn launch(&mut self, wrapper: &[&str]) -> Child {
        assert!(self.child.is_none(), "nvod already running");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        Command::new("ip")
            .args(["netns", "exec", &self.netns])
            .args(wrapper)
            .args([env!("CARGO_BIN_EXE_nvod"), "--config"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn wait_answer(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self.client.get::<serde_json::Value>("/v1/node").is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("nvod exited with {status} at start:\n{}", self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "nvod did not answer:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and wait: a clean stop. Returns whether nvod exited with status 0.
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> T {
        self.client
            .get(path)
            .unwrap_or_else(|e| panic!("GET {path}: {e}\n{}", self.log_text()))
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> T {
        self.client
            .post(path, body)
            .unwrap_or_else(|e| panic!("POST {path}: {e}\n{}", self.log_text()))
    }

    pub fn put<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> T {
        let body = serde_json::to_vec(body).unwrap();
        self.client
            .call("PUT", path, Some(&body))
            .unwrap_or_else(|e| panic!("PUT {path}: {e}\n{}", self.log_text()))
    }

    pub fn delete(&self, path: &str) {
        self.client
            .delete(path)
            .unwrap_or_else(|e| panic!("DELETE {path}: {e}\n{}", self.log_text()));
    }

    /// Sends a raw request; answers (status, error message or body text).
    pub fn raw(&self, method: &str, path: &str, body: Option<&[u8]>) -> (u16, String) {
        let (status, body) = self.client.raw(method, path, body).unwrap();
        let text = String::from_utf8_lossy(&body).into_owned();
        let message = serde_json::from_str::<nvo_api::ApiError>(&text)
            .map(|e| e.error)
            .unwrap_or(text);
        (status, message)
    }

    /// Expects a failed call with this status; returns the error message.
    pub fn expect_error(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        status: u16,
    ) -> String {
        let (got, message) = self.raw(method, path, body.map(str::as_bytes));
        assert_eq!(
            got, status,
            "{method} {path} {body:?}: expected {status}, got {got}: {message}"
        );
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "one line: {message:?}"
        );
        message
    }
}

impl Drop for Nvod {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether an API error says `status`.
pub fn is_status(e: &ClientError, status: u16) -> bool {
    matches!(e, ClientError::Api { status: s, .. } if *s == status)
}

/// `etcdctl ARGS` against `endpoint`, run in `netns` (v3 API, 1 s to dial, 3 s a command):
/// its output, or its error text.
pub fn etcdctl(netns: &str, endpoint: &str, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", netns, "etcdctl"])
        .args(["--dial-timeout=1s", "--command-timeout=3s"])
        .arg(format!("--endpoints={endpoint}"))
        .args(args)
        .env("ETCDCTL_API", "3")
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Polls `check` every 50 ms until it holds or `timeout` passes; returns whether it held.
pub fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The desired state as stored in `state_dir`: the snapshot `state.json` with the journal
/// `state.journal` replayed on it (each line `{"ops": [{"set": [path, value]} | {"del":
/// path}]}`; a last line without its newline is ignored, as nvod does). Written here from the
/// format's description, not with nvod's code, so a test reading it checks nvod's files.
pub fn stored_state(state_dir: &Path) -> serde_json::Value {
    use serde_json::Value;
    let mut root: Value = fs::read(state_dir.join("state.json"))
        .ok()
        .map(|t| serde_json::from_slice(&t).expect("state.json is JSON"))
        .unwrap_or_else(|| serde_json::json!({}));
    let journal = fs::read_to_string(state_dir.join("state.journal")).unwrap_or_default();
    for line in journal.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let record: Value = serde_json::from_str(line).expect("a journal line is JSON");
        for op in record["ops"].as_array().expect("ops") {
            let (path, value) = match (op.get("set"), op.get("del")) {
                (Some(set), _) => (set[0].as_array().unwrap().clone(), Some(set[1].clone())),
                (None, Some(del)) => (del.as_array().unwrap().clone(), None),
                _ => panic!("unknown journal operation {op}"),
            };
            let keys: Vec<String> = path
                .iter()
                .map(|k| k.as_str().unwrap().to_owned())
                .collect();
            let (last, parents) = keys.split_last().unwrap();
            let pointer: String = parents
                .iter()
                .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
                .collect();
            if value.is_none() && root.pointer(&pointer).is_none() {
                continue;
            }
            let mut node = &mut root;
            for k in parents {
                node = node
                    .as_object_mut()
                    .unwrap()
                    .entry(k.clone())
                    .or_insert_with(|| serde_json::json!({}));
            }
            let object = node.as_object_mut().unwrap();
            match value {
                Some(v) => {
                    object.insert(last.clone(), v);
                }
                None => {
                    object.remove(last);
                }
            }
        }
    }
    root
}
