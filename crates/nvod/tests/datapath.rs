//! Choosing the datapath: `datapath = "auto" | "ebpf" | "userspace"`, what `GET /v1/node` says
//! of it, the fallback when the kernel refuses the programs, and no program left behind by a
//! killed nvod.
//!
//! ```text
//!   namespace nvo-dpN-PID:  u0 10.77.0.1/24 ── u1      (the locator's interface)
//!                           p0 ── p0c                  (a port, for the port program)
//! ```
//!
//! The kernel refusing is real, not simulated: nvod runs under `setpriv` with CAP_BPF,
//! CAP_SYS_ADMIN and CAP_PERFMON out of its bounding set, so bpf() answers EPERM.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{host, Nvod, Scratch};

const WITHOUT_BPF: [&str; 3] = ["setpriv", "--bounding-set", "-bpf,-sys_admin,-perfmon"];

/// The tests of this file one at a time (several nvods starting at once load a shared machine).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn node(nvod: &Nvod) -> nvo_api::NodeInfo {
    nvod.get("/v1/node")
}

/// The ids of the programs loaded on the machine now.
fn loaded_ids() -> Vec<u64> {
    let out = Command::new("bpftool")
        .args(["-j", "prog", "show"])
        .output()
        .expect("bpftool (scripts/setup.sh installs it)");
    let progs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    progs.iter().filter_map(|p| p["id"].as_u64()).collect()
}

/// The programs the nvod running in namespace `ns` attached, as (name, program id): the
/// program of each BPF link its process holds (a link's /proc/PID/fdinfo entry has `link_id`
/// and `prog_id`; a TCX link lives as long as its descriptor). Only this nvod's, so other
/// labs and tests loading nvo's programs at the same time do not count.
fn attached(ns: &str) -> Vec<(String, u64)> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    let mut found = Vec::new();
    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
            continue;
        };
        for fd in fds.flatten() {
            let info = std::fs::read_to_string(fd.path()).unwrap_or_default();
            let field = |key: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let (Some(_), Some(id)) = (field("link_id:"), field("prog_id:")) {
                let out = Command::new("bpftool")
                    .args(["-j", "prog", "show", "id", &id.to_string()])
                    .output()
                    .unwrap();
                let prog: serde_json::Value =
                    serde_json::from_slice(&out.stdout).unwrap_or_default();
                let name = prog["name"].as_str().unwrap_or("").to_owned();
                found.push((name, id));
            }
        }
    }
    found.sort();
    found
}

/// The names of `programs`.
fn names(programs: &[(String, u64)]) -> Vec<&str> {
    programs.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn ebpf_auto_and_userspace_say_what_runs() {
    let _serial = serial();
    let ns = host("dpa", "10.77.0.1/24");
    let scratch = Scratch::new("dpa");
    for (setting, expect) in [
        ("ebpf", "ebpf"),
        ("auto", "ebpf"),
        ("userspace", "userspace"),
    ] {
        let dir = scratch.0.join(setting);
        std::fs::create_dir_all(&dir).unwrap();
        let mut nvod = Nvod::start(
            ns.name(),
            &dir,
            "10.77.0.1",
            &format!("datapath = \"{setting}\"\n"),
        );
        let n = node(&nvod);
        assert_eq!(n.datapath, expect, "datapath = {setting}: {n:?}");
        assert!(
            n.datapath_reason.starts_with(if setting == "auto" {
                "auto"
            } else {
                "configured"
            }),
            "{n:?}"
        );
        nvod.kill();
    }
}

#[test]
fn auto_falls_back_with_the_kernels_reason() {
    let _serial = serial();
    let ns = host("dpf", "10.77.0.1/24");
    let scratch = Scratch::new("dpf");
    let mut nvod = Nvod::prepare(ns.name(), &scratch.0, "10.77.0.1", "datapath = \"auto\"\n");
    nvod.spawn_under(&WITHOUT_BPF);
    let n = node(&nvod);
    assert_eq!(n.datapath, "userspace", "{n:?}");
    assert!(
        n.datapath_reason.starts_with("auto:") && n.datapath_reason.contains("not permitted"),
        "the reason names what the kernel said: {n:?}"
    );
    let log = nvod.log_text();
    assert_eq!(
        log.matches("the eBPF datapath is not available").count(),
        1,
        "one log line:\n{log}"
    );
    nvod.kill();
}

#[test]
fn ebpf_refuses_to_start_without_the_kernel() {
    let _serial = serial();
    let ns = host("dpr", "10.77.0.1/24");
    let scratch = Scratch::new("dpr");
    let (status, log) = Nvod::start_failing(
        ns.name(),
        &scratch.0,
        "10.77.0.1",
        "datapath = \"ebpf\"\n",
        &WITHOUT_BPF,
    );
    assert!(
        !status.success(),
        "nvod started without the kernel's programs:\n{log}"
    );
    assert!(
        log.contains("datapath = \"ebpf\"")
            && log.contains("not permitted")
            && log.contains("auto"),
        "the error names the setting, the kernel's reason and the way out:\n{log}"
    );
}

#[test]
fn a_killed_nvod_leaves_no_program_and_the_next_one_takes_over() {
    let _serial = serial();
    let ns = host("dpk", "10.77.0.1/24");
    ns.ip(&["link", "add", "p0", "type", "veth", "peer", "name", "p0c"])
        .unwrap();
    ns.ip(&["link", "set", "p0", "up"]).unwrap();
    ns.ip(&["link", "set", "p0c", "up"]).unwrap();
    let scratch = Scratch::new("dpk");
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.77.0.1", "datapath = \"ebpf\"\n");
    let _: serde_json::Value = nvod.post("/v1/networks", &serde_json::json!({"vni": 100}));
    let _: serde_json::Value =
        nvod.post("/v1/ports", &serde_json::json!({"name": "p0", "vni": 100}));
    let ours = attached(ns.name());
    assert_eq!(names(&ours), ["nvo_port", "nvo_underlay"], "{ours:?}");
    nvod.kill();
    // The links died with the process's descriptors, and the programs with them.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let loaded = loaded_ids();
        let left: Vec<_> = ours.iter().filter(|(_, id)| loaded.contains(id)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "programs left loaded after kill -9: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A new nvod restores the state and attaches again.
    nvod.spawn();
    assert_eq!(node(&nvod).datapath, "ebpf");
    let again = attached(ns.name());
    assert_eq!(names(&again), ["nvo_port", "nvo_underlay"], "{again:?}");
    nvod.kill();
}
