//! The system side of a lab: running `ip`, `bridge`, `ethtool` and `sysctl` (no netlink
//! library: the commands are what an operator would type to reproduce a step), and finding,
//! checking and stopping processes through /proc and `kill`.
//!
//! A process is named by its pid *and* its start time (field 22 of /proc/PID/stat), so a pid
//! that the kernel reused for something else after nvod died is never signalled.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::LabError;

/// How long a process gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// The command line as a person would type it, for error messages.
fn command_line<S: AsRef<OsStr>>(program: &str, args: &[S]) -> String {
    let mut line = program.to_owned();
    for a in args {
        line.push(' ');
        line.push_str(&a.as_ref().to_string_lossy());
    }
    line
}

/// Runs a command to completion; its stdout is returned, its stderr becomes the error message.
pub fn output<S: AsRef<OsStr>>(program: &str, args: &[S]) -> Result<String, LabError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LabError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut message: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    message.truncate(3);
    let message = if message.is_empty() {
        out.status.to_string()
    } else {
        message.join("; ")
    };
    Err(LabError::Command {
        command: command_line(program, args),
        message,
    })
}

/// Runs a command to completion, discarding its output.
pub fn run<S: AsRef<OsStr>>(program: &str, args: &[S]) -> Result<(), LabError> {
    output(program, args).map(|_| ())
}

/// `ip -n NS LINE`: one `ip` command inside a namespace, written as an operator would type it.
/// The line is split on whitespace: every value put in it is a checked name, an address or a
/// number, none of which holds a space.
pub fn ip(ns: &str, line: &str) -> Result<(), LabError> {
    let mut args = vec!["-n", ns];
    args.extend(line.split_whitespace());
    run("ip", &args)
}

/// `bridge -n NS LINE`, split like [`ip`].
pub fn bridge(ns: &str, line: &str) -> Result<(), LabError> {
    let mut args = vec!["-n", ns];
    args.extend(line.split_whitespace());
    run("bridge", &args)
}

/// `ip netns exec NS LINE`, for tools without a namespace option (split like [`ip`]).
pub fn exec_in(ns: &str, line: &str) -> Result<(), LabError> {
    let mut args = vec!["netns", "exec", ns];
    args.extend(line.split_whitespace());
    run("ip", &args)
}

/// Whether a named network namespace exists (`ip netns add` binds it under /run/netns).
pub fn netns_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

/// The pids of every process in a namespace.
pub fn netns_pids(ns: &str) -> Vec<u32> {
    output("ip", &["netns", "pids", ns])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A process's state letter and start time (clock ticks after boot), from /proc/PID/stat.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the fields after it start
    // after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// The start time of a live process, to record beside its pid.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// Whether `pid` is still the process that started at `start` (any start when `None`) and has
/// not exited (a zombie has).
pub fn alive(pid: u32, start: Option<u64>) -> bool {
    match stat(pid) {
        Some((state, started)) => state != 'Z' && start.is_none_or(|s| s == started),
        None => false,
    }
}

fn signal(pid: u32, name: &str) {
    // A process that exits between the check and the signal makes kill fail: that is fine.
    let _ = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stops processes: SIGTERM, then SIGKILL for those still there after [`GRACE`]. Returns how
/// many were running.
pub fn terminate(procs: &[(u32, Option<u64>)]) -> usize {
    let running: Vec<(u32, Option<u64>)> = procs
        .iter()
        .copied()
        .filter(|(pid, start)| alive(*pid, *start))
        .collect();
    for (pid, _) in &running {
        signal(*pid, "TERM");
    }
    let wait_gone = |limit: Duration| {
        let deadline = Instant::now() + limit;
        while running.iter().any(|(p, s)| alive(*p, *s)) && Instant::now() < deadline {
            sleep(Duration::from_millis(50));
        }
    };
    wait_gone(GRACE);
    let stubborn: Vec<_> = running.iter().filter(|(p, s)| alive(*p, *s)).collect();
    for (pid, _) in &stubborn {
        signal(*pid, "KILL");
    }
    if !stubborn.is_empty() {
        wait_gone(Duration::from_secs(1));
    }
    running.len()
}

/// Whether this process runs as root (uid 0), from /proc/self/status.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2).map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// A program's path on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The last `n` lines of a file, for showing why a daemon did not start.
pub fn tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(alive(me, Some(start)));
        assert!(alive(me, None));
        assert!(
            !alive(me, Some(start + 1)),
            "a reused pid is not the recorded process"
        );
        assert!(!alive(u32::MAX, None));
    }

    #[test]
    fn terminate_stops_a_child_that_ignores_nothing() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        // A zombie is not alive: reap in the background so the check sees it exit.
        let reaper = std::thread::spawn(move || child.wait());
        assert_eq!(terminate(&[(pid, start)]), 1);
        assert!(reaper.join().unwrap().is_ok());
        assert!(!alive(pid, start));
        assert_eq!(terminate(&[(pid, start)]), 0, "nothing left to stop");
    }

    #[test]
    fn failed_commands_say_what_ran_and_why_on_one_line() {
        let err = run("ls", &["/nonexistent/nvo-lab-test"])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("`ls /nonexistent/nvo-lab-test` failed: "),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
        let err = run("nvo-no-such-program", &["x"]).unwrap_err().to_string();
        assert!(err.contains("cannot run nvo-no-such-program"), "{err}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let path = std::env::temp_dir().join(format!("nvo-tail-{}", std::process::id()));
        std::fs::write(&path, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&path, 2), ["b", "c"]);
        assert_eq!(tail(&path, 10).len(), 3);
        let _ = std::fs::remove_file(&path);
        assert!(tail(&path, 2).is_empty());
    }
}
