//! Issue 15, items 1 (the socket), 2 and 5: the API socket is 0660 with its configured group
//! whatever the umask, and refused when its directory or file is another user's; only tenant
//! interfaces become ports; the API server stays bounded under half-open connections, lying
//! Content-Lengths and bodies that are not objects.
//!
//! ```text
//!   ns nvo-TAG-PID
//!  ┌───────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.203.0.1 on u0, API socket in a scratch    │
//!  │       directory)                                          │
//!  │ u0 ─veth─ u1   va ─veth─ vb   w0 ─veth─ w1   d0 (bridge)   │
//!  │ (underlay)     (tenant)       (10.203.9.1)   lo            │
//!  └───────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Nvod, Scratch};
use nvo_io::netns::NamedNetns;
use serde_json::{json, Value};

const LOCATOR: &str = "10.203.0.1";
/// The gid of `nogroup` (Debian) / `nobody` (others) and the uid of `nobody`.
const NOBODY: u32 = 65534;

/// `common::host` with the locator on `u0`.
fn host(tag: &str) -> NamedNetns {
    common::host(tag, &format!("{LOCATOR}/24"))
}

/// Runs nvod under `umask 000` (the wrapper's `$0` is nvod, `$@` its arguments).
const UMASK_000: [&str; 3] = ["sh", "-c", "umask 000 && exec \"$0\" \"$@\""];

#[test]
fn socket_is_0660_with_its_group_under_umask_000() {
    let ns = host("umask");
    let dir = Scratch::new("nvoza-umask");
    let mut nvod = Nvod::prepare(ns.name(), &dir.0, LOCATOR, "api_group = \"nogroup\"\n");
    nvod.spawn_under(&UMASK_000);
    let meta = fs::symlink_metadata(&nvod.socket).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o660, "socket mode {:o}", meta.mode());
    assert_eq!(meta.gid(), NOBODY, "socket group");
    assert_eq!(meta.uid(), 0);
    // No staging directory is left beside it.
    let leftovers: Vec<_> = fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".nvod-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The group by number, and the default (nvod's own group, root's).
    assert!(nvod.terminate());
    let extra = format!("api_group = {NOBODY}\n");
    fs::write(dir.0.join("nvod.toml"), config_text(&dir.0, &extra)).unwrap();
    nvod.spawn_under(&UMASK_000);
    assert_eq!(fs::metadata(&nvod.socket).unwrap().gid(), NOBODY);
    assert!(nvod.terminate());
    fs::write(dir.0.join("nvod.toml"), config_text(&dir.0, "")).unwrap();
    nvod.spawn_under(&UMASK_000);
    let meta = fs::metadata(&nvod.socket).unwrap();
    assert_eq!((meta.mode() & 0o7777, meta.gid()), (0o660, 0));
}

/// The config `Nvod::prepare` writes, with other extra lines.
fn config_text(dir: &Path, extra: &str) -> String {
    format!(
        "locator = \"{LOCATOR}\"\napi_socket = \"{}\"\nstate_dir = \"{}\"\nlog = \"debug\"\n{extra}",
        dir.join("nvod.sock").display(),
        dir.join("state").display()
    )
}

/// Starts nvod expecting it to refuse; returns its one error line.
fn refused_start(ns: &NamedNetns, dir: &Path, extra: &str) -> String {
    let _ = fs::remove_file(dir.join("nvod.log"));
    let (status, log) = Nvod::start_failing(ns.name(), dir, LOCATOR, extra, &[]);
    assert!(!status.success(), "nvod started:\n{log}");
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "one error line:\n{log}");
    errors[0].to_owned()
}

#[test]
fn a_socket_directory_or_file_of_another_user_is_refused() {
    let ns = host("owner");
    // A directory another user owns.
    let dir = Scratch::new("nvoza-owner");
    std::os::unix::fs::chown(&dir.0, Some(NOBODY), None).unwrap();
    let line = refused_start(&ns, &dir.0, "");
    assert!(
        line.contains("refusing the API socket") && line.contains("owned by uid 65534"),
        "{line}"
    );
    assert!(!dir.0.join("nvod.sock").exists());
    // A directory every user may write to.
    std::os::unix::fs::chown(&dir.0, Some(0), None).unwrap();
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
    let line = refused_start(&ns, &dir.0, "");
    assert!(line.contains("writable by every user (mode 777)"), "{line}");
    // A good directory, but a socket file another user left at the path.
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.0.join("nvod.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    std::os::unix::fs::chown(&socket, Some(NOBODY), None).unwrap();
    let line = refused_start(&ns, &dir.0, "");
    assert!(
        line.contains("existing socket file") && line.contains("owned by uid 65534"),
        "{line}"
    );
    assert_eq!(fs::symlink_metadata(&socket).unwrap().uid(), NOBODY);
    // Once it is root's (a stale socket of nvod's own), it is replaced.
    std::os::unix::fs::chown(&socket, Some(0), None).unwrap();
    let mut nvod = Nvod::prepare(ns.name(), &dir.0, LOCATOR, "");
    nvod.spawn();
    let _: Value = nvod.get("/v1/node");
}

#[test]
fn only_tenant_interfaces_become_ports() {
    let ns = host("ports");
    ns.ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"])
        .unwrap();
    ns.ip(&["link", "add", "w0", "type", "veth", "peer", "name", "w1"])
        .unwrap();
    ns.ip(&["addr", "add", "10.203.9.1/24", "dev", "w0"])
        .unwrap();
    ns.ip(&["link", "add", "d0", "type", "bridge"]).unwrap();
    for dev in ["va", "vb", "w0", "w1", "d0"] {
        ns.ip(&["link", "set", dev, "up"]).unwrap();
    }
    let dir = Scratch::new("nvoza-ports");
    let mut nvod = Nvod::start(ns.name(), &dir.0, LOCATOR, "");
    let _: Value = nvod.post("/v1/networks", &json!({"vni": 100}));
    let node: Value = nvod.get("/v1/node");
    // w0 holds one of this node's overlay locators: an underlay address too.
    let own = node["node_id"].as_u64().unwrap();
    let _: Value = nvod.put(
        &format!("/v1/overlay/nodes/{own}"),
        &json!({"locators": [{"addr": LOCATOR}, {"addr": "10.203.9.1"}]}),
    );
    let before: Value = nvod.get("/v1/ports");
    for (body, words) in [
        (
            r#"{"name": "lo", "vni": 100}"#,
            &[
                "interface lo is a loopback",
                "only veth, tap may be ports (config port_kinds)",
            ][..],
        ),
        (
            r#"{"name": "u0", "vni": 100}"#,
            &["interface u0 holds nvod's underlay address 10.203.0.1"][..],
        ),
        (
            r#"{"name": "w0", "vni": 100}"#,
            &["interface w0 holds nvod's underlay address 10.203.9.1"][..],
        ),
        (
            r#"{"name": "d0", "vni": 100}"#,
            &["interface d0 is a bridge interface", "port_kinds"][..],
        ),
        (
            r#"{"name": "va", "vni": 100, "kind": "tap"}"#,
            &["interface va exists and is a veth interface, not a TAP"][..],
        ),
        (
            r#"{"name": "lo", "vni": 100, "kind": "tap"}"#,
            &["interface lo is a loopback"][..],
        ),
    ] {
        let message = nvod.expect_error("POST", "/v1/ports", Some(body), 400);
        for word in words {
            assert!(message.contains(word), "{body}: {message}");
        }
    }
    assert_eq!(
        nvod.get::<Value>("/v1/ports"),
        before,
        "refusals changed nothing"
    );
    // A veth is a port; a bridge too once the operator allows its kind.
    let _: Value = nvod.post("/v1/ports", &json!({"name": "va", "vni": 100}));
    assert!(nvod.terminate());
    let allow = "port_kinds = [\"veth\", \"tap\", \"bridge\"]\n";
    fs::write(dir.0.join("nvod.toml"), config_text(&dir.0, allow)).unwrap();
    nvod.spawn();
    let _: Value = nvod.post("/v1/ports", &json!({"name": "d0", "vni": 100}));
    let _: Value = nvod.post(
        "/v1/networks/100/fdb",
        &json!({"mac": "02:00:00:00:0d:01", "port": "d0"}),
    );
    // Back to the default kinds: the restored d0 is refused with a log line, va stays, nvod
    // runs, and the static entry on d0 goes with it.
    assert!(nvod.terminate());
    fs::write(dir.0.join("nvod.toml"), config_text(&dir.0, "")).unwrap();
    nvod.spawn();
    let names: Vec<String> = nvod
        .get::<Vec<Value>>("/v1/ports")
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["va"]);
    let log = nvod.log_text();
    assert!(
        log.contains("port d0 (network 100) in the state file is refused and dropped: interface d0 is a bridge interface"),
        "{log}"
    );
    let fdb: Vec<Value> = nvod.get("/v1/networks/100/fdb");
    assert!(fdb.iter().all(|e| e["port"] != "d0"), "{fdb:?}");
    // Only the TAPs nvod would create are refused when "tap" is not allowed.
    assert!(nvod.terminate());
    let veth_only = "port_kinds = [\"veth\"]\n";
    fs::write(dir.0.join("nvod.toml"), config_text(&dir.0, veth_only)).unwrap();
    nvod.spawn();
    let message = nvod.expect_error(
        "POST",
        "/v1/ports",
        Some(r#"{"name": "t0", "vni": 100, "kind": "tap"}"#),
        400,
    );
    assert!(message.contains("would be a new TAP device") && message.contains("only veth"));
}

/// Sends `request` on a new connection; the answer's status line and body, and how long the
/// answer took.
fn exchange(socket: &Path, request: &[u8]) -> (String, String, Duration) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let start = Instant::now();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading the answer: {e} (got {answer:?})"),
        }
        if headers_and_body_done(&answer) {
            break;
        }
    }
    let took = start.elapsed();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.lines().next().unwrap_or_default().to_owned();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body, took)
}

/// Whether a complete answer with a Content-Length is in `answer`.
fn headers_and_body_done(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    body.len() >= length
}

#[test]
fn lying_content_length_and_non_object_bodies_are_refused_at_once() {
    let ns = host("body");
    let dir = Scratch::new("nvoza-body");
    let nvod = Nvod::start(ns.name(), &dir.0, LOCATOR, "");
    // 10 GB claimed, nothing sent: 413 before a byte of the body is read.
    let (status, body, took) = exchange(
        &nvod.socket,
        b"POST /v1/networks HTTP/1.1\r\nHost: nvod\r\nContent-Type: application/json\r\n\
          Content-Length: 10000000000\r\n\r\n",
    );
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert!(
        body.contains("10000000000") && body.contains("65536"),
        "{body}"
    );
    assert!(took < Duration::from_millis(500), "took {took:?}");
    // A JSON array (or scalar) where an object is documented: 400, nothing created.
    for (text, word) in [
        ("[6, 1400, false]", "an array"),
        ("6", "a number"),
        ("\"x\"", "a string"),
        ("null", "null"),
    ] {
        let message = nvod.expect_error("POST", "/v1/networks", Some(text), 400);
        assert!(
            message.contains(word) && message.contains("JSON object"),
            "{text}: {message}"
        );
    }
    let message = nvod.expect_error("POST", "/v1/ports", Some("[\"va\", 100]"), 400);
    assert!(message.contains("an array"), "{message}");
    assert_eq!(nvod.get::<Vec<Value>>("/v1/networks"), Vec::<Value>::new());
    // A real object still works.
    let _: Value = nvod.post("/v1/networks", &json!({"vni": 6}));
}

#[test]
fn header_and_idle_timeouts_close_stalled_connections() {
    let ns = host("timeouts");
    let dir = Scratch::new("nvoza-timeouts");
    let extra = "api_header_timeout_s = 1\napi_idle_timeout_s = 1\n";
    let nvod = Nvod::start(ns.name(), &dir.0, LOCATOR, extra);
    // Half a header: closed once the header timeout passes.
    let mut half = UnixStream::connect(&nvod.socket).unwrap();
    half.write_all(b"GET /v1/node HTTP/1.1\r\nHost: nvod\r\n")
        .unwrap();
    half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    let n = half.read(&mut buf).unwrap_or(0);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "closed after {took:?}"
    );
    assert!(
        n == 0 || String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    // A header, then a body that stalls: 408 once the idle timeout passes.
    let (status, body, took) = exchange(
        &nvod.socket,
        b"POST /v1/networks HTTP/1.1\r\nHost: nvod\r\nContent-Length: 100\r\n\r\n{\"vni\":",
    );
    assert!(status.starts_with("HTTP/1.1 408"), "{status} {body}");
    assert!(body.contains("api_idle_timeout_s"), "{body}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let _: Value = nvod.get("/v1/node");
}

/// nvod's pid: the process whose command line names this test's config file.
fn nvod_pid(dir: &Path) -> u32 {
    let config = dir.join("nvod.toml");
    let config = config.to_string_lossy();
    for entry in fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first().is_some_and(|a| a.ends_with("/nvod")) && args.iter().any(|a| *a == config) {
            return pid;
        }
    }
    panic!("no nvod process with {config}");
}

/// VmRSS of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Open descriptors of `pid`.
fn fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

/// The slowest of `n` `GET /v1/node` calls, each on a new connection.
fn slowest_node_get(nvod: &Nvod, n: usize) -> Duration {
    (0..n)
        .map(|_| {
            let start = Instant::now();
            let _: Value = nvod.get("/v1/node");
            start.elapsed()
        })
        .max()
        .unwrap()
}

const HALF_OPEN: usize = 20_000;

/// Holds `n` connections to `socket` open (each with half a header when `partial`) until its
/// stdin closes; a separate process, so that the 20 000 descriptors fit the hard limit.
const HOLDER: &str = r#"
import socket, sys
path, n, partial = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
held = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if partial:
        try:
            s.send(b"GET /v1/node HTTP/1.1\r\nHost: nv")
        except OSError:
            pass  # closed by nvod to make room: that is the point
    held.append(s)
print("ready", flush=True)
sys.stdin.read()
"#;

/// Starts a holder of `n` connections and waits until they are all open.
fn hold(socket: &Path, n: usize, partial: bool) -> std::process::Child {
    use std::io::BufRead;
    let mut child = Command::new("python3")
        .args(["-c", HOLDER])
        .arg(socket)
        .arg(n.to_string())
        .arg(if partial { "1" } else { "0" })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "holder did not open its connections");
    child
}

#[test]
fn half_open_connections_leave_the_api_answering_and_memory_returned() {
    let ns = host("flood");
    let dir = Scratch::new("nvoza-flood");
    let nvod = Nvod::start(ns.name(), &dir.0, LOCATOR, "");
    let pid = nvod_pid(&dir.0);
    for vni in 1..=20 {
        let _: Value = nvod.post("/v1/networks", &json!({"vni": vni}));
    }
    slowest_node_get(&nvod, 20);
    let idle = rss_kib(pid);
    let idle_fds = fds(pid);
    // Open them all: half send nothing, half a partial header, none a whole request.
    let start = Instant::now();
    let silent = hold(&nvod.socket, HALF_OPEN / 2, false);
    let partial = hold(&nvod.socket, HALF_OPEN / 2, true);
    let opened = start.elapsed();
    // The holders are "ready" once their connections are queued; nvod may still be taking
    // the last of them off the listen backlog (a new client queues behind them): wait until
    // it has (its descriptors back under the cap), then measure while they are all held.
    let mut peak = rss_kib(pid);
    let mut peak_fds = fds(pid);
    let first = slowest_node_get(&nvod, 1);
    let settled = common::wait_for(Duration::from_secs(20), || {
        peak = peak.max(rss_kib(pid));
        let now = fds(pid);
        peak_fds = peak_fds.max(now);
        now < idle_fds + 300
    });
    assert!(settled, "nvod still holds {} descriptors", fds(pid));
    let held_fds = fds(pid);
    let slowest = slowest_node_get(&nvod, 50);
    peak = peak.max(rss_kib(pid));
    eprintln!(
        "{HALF_OPEN} half-open connections queued in {opened:?}, all taken by nvod after \
         {:?}; first GET /v1/node {first:?}; nvod RSS idle {idle} KiB, peak {peak} KiB; fds \
         idle {idle_fds}, peak {peak_fds}, held {held_fds}; slowest of 50 GET /v1/node while \
         held {slowest:?}",
        start.elapsed()
    );
    for mut holder in [silent, partial] {
        drop(holder.stdin.take());
        holder.wait().unwrap();
    }
    assert!(
        slowest < Duration::from_millis(100),
        "GET /v1/node took {slowest:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    slowest_node_get(&nvod, 5);
    let after = rss_kib(pid);
    eprintln!("nvod RSS after release {after} KiB (idle {idle} KiB)");
    assert!(
        after < idle + 20 * 1024,
        "RSS after the burst {after} KiB, idle {idle} KiB"
    );
    let networks: Vec<Value> = nvod.get("/v1/networks");
    assert_eq!(networks.len(), 20);
}
