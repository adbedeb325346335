//! The plugin binary called as a runtime calls it, without root and without nvod: VERSION, and
//! the error answers (spec error object, code, exit status) for bad environments, bad
//! configurations and an nvod that is not there. tests/e2e/test_cni.py drives real attachments.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const GOOD: &str = r#"{"cniVersion": "1.0.0", "name": "red", "type": "nvo-cni", "vni": 100,
    "socket": "/nonexistent/nvo-cni-test.sock",
    "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"}}"#;

/// Runs nvo-cni with `env` and `stdin`; returns (exit success, decoded stdout).
fn call(env: &[(&str, &str)], stdin: &str) -> (bool, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvo-cni"))
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Without CNI_COMMAND the plugin answers without reading: a broken pipe is expected then.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout {text:?} is not JSON: {e}"))
    };
    (out.status.success(), value)
}

/// Asserts `v` is a spec error object with `code`.
fn assert_error(ok: bool, v: &Value, code: u64) {
    assert!(!ok, "exit status 0 with an error: {v}");
    assert_eq!(v["code"], code, "{v}");
    assert!(v["msg"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(v["cniVersion"].is_string(), "{v}");
}

fn add_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "calls-test"),
        ("CNI_NETNS", "/proc/self/ns/net"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/usr/lib/cni"),
    ]
}

#[test]
fn version_lists_1_0_and_1_1() {
    let (ok, v) = call(&[("CNI_COMMAND", "VERSION")], r#"{"cniVersion": "1.0.0"}"#);
    assert!(ok);
    assert_eq!(v["cniVersion"], "1.0.0");
    assert_eq!(
        v["supportedVersions"],
        serde_json::json!(["1.0.0", "1.1.0"])
    );
}

#[test]
fn bad_environment_is_code_4() {
    let (ok, v) = call(&[], GOOD);
    assert_error(ok, &v, 4);
    let mut env = add_env();
    env.retain(|(k, _)| *k != "CNI_IFNAME");
    let (ok, v) = call(&env, GOOD);
    assert_error(ok, &v, 4);
    assert!(v["msg"].as_str().unwrap().contains("CNI_IFNAME"), "{v}");
}

#[test]
fn bad_configurations_get_their_codes() {
    let env = add_env();
    let (ok, v) = call(&env, "{not json");
    assert_error(ok, &v, 6);
    let (ok, v) = call(&env, &GOOD.replace("\"vni\": 100,", ""));
    assert_error(ok, &v, 7);
    assert!(v["msg"].as_str().unwrap().contains("vni"), "{v}");
    let (ok, v) = call(&env, &GOOD.replace("1.0.0", "0.2.0"));
    assert_error(ok, &v, 1);
}

#[test]
fn missing_namespace_is_code_3_and_unreachable_nvod_is_code_11() {
    let mut env = add_env();
    let (ok, v) = call(&env, GOOD);
    assert_error(ok, &v, 11);
    assert!(
        v["details"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/nvo-cni-test.sock"),
        "{v}"
    );
    env.retain(|(k, _)| *k != "CNI_NETNS");
    env.push(("CNI_NETNS", "/nonexistent/netns"));
    let (ok, v) = call(&env, GOOD);
    assert_error(ok, &v, 3);
}

#[test]
fn status_without_nvod_is_code_50() {
    let (ok, v) = call(
        &[("CNI_COMMAND", "STATUS"), ("CNI_PATH", "/usr/lib/cni")],
        GOOD,
    );
    assert_error(ok, &v, 50);
}
