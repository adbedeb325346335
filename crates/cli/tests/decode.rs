//! `nvo decode` as a user runs it: the binary on captures written by scapy and converted by
//! Wireshark's editcap, checked against the values scapy was given (tests/vectors/*.json).

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn nvo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvo"))
        .args(args)
        .output()
        .expect("run nvo")
}

fn decode_json(path: &Path) -> Value {
    let out = nvo(&["-o", "json", "decode", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "nvo decode failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("nvo -o json prints JSON")
}

struct Scratch(PathBuf);
impl Scratch {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("nvo-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for v in [i as u32, 0, f.len() as u32, f.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors(proto: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root().join(format!("tests/vectors/{proto}.json"))).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["vectors"].as_array().unwrap().clone()
}

fn layer<'a>(packet: &'a Value, name: &str) -> &'a Value {
    packet["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == name)
        .unwrap_or_else(|| panic!("no {name} layer in {packet}"))
}

/// Decodes every vector of `proto` in one capture and hands each (vector, decoded packet) to `check`.
fn each_vector(proto: &str, check: impl Fn(&Value, &Value)) {
    let vs = vectors(proto);
    let dir = Scratch::new(proto);
    let pcap = dir.0.join("v.pcap");
    write_pcap(
        &pcap,
        &vs.iter()
            .map(|v| unhex(v["frame"].as_str().unwrap()))
            .collect::<Vec<_>>(),
    );
    let out = decode_json(&pcap);
    let packets = out["packets"].as_array().unwrap();
    assert_eq!(packets.len(), vs.len());
    for (v, p) in vs.iter().zip(packets) {
        assert!(p.get("malformed").is_none(), "{}: {p}", v["name"]);
        check(&v["fields"], p);
    }
}

#[test]
fn vxlan_vectors_decode_to_scapy_values() {
    each_vector("vxlan", |f, p| {
        let l = layer(p, "vxlan");
        assert_eq!(l["vni"], f["vni"], "{p}");
        if f["gbp"] == true {
            assert_eq!(l["group_policy_id"], f["group_policy_id"], "{p}");
            assert_eq!(
                l.get("dont_learn").is_some(),
                f["dont_learn"] == true,
                "{p}"
            );
        } else {
            assert!(l.get("group_policy_id").is_none(), "{p}");
        }
        // The inner Ethernet frame: the second ethernet layer.
        let eths: Vec<&Value> = p["layers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["layer"] == "ethernet")
            .collect();
        assert_eq!(eths.len(), 2, "{p}");
        assert_eq!(eths[1]["src"], f["inner_src"]);
        assert_eq!(eths[1]["dst"], f["inner_dst"]);
    });
}

#[test]
fn vxlan_gpe_vectors_decode_to_scapy_values() {
    let names = ["", "ipv4", "ipv6", "ethernet", "nsh"];
    each_vector("vxlan_gpe", |f, p| {
        let l = layer(p, "vxlan_gpe");
        assert_eq!(l["vni"], f["vni"], "{p}");
        assert_eq!(l["oam"], f["oam"], "{p}");
        assert_eq!(
            l["next_protocol"],
            names[f["next_protocol"].as_u64().unwrap() as usize],
            "{p}"
        );
    });
}

#[test]
fn nsh_vectors_decode_to_scapy_values() {
    each_vector("nsh", |f, p| {
        let l = layer(p, "nsh");
        for k in ["spi", "si", "ttl", "md_type", "oam"] {
            assert_eq!(l[k], f[k], "{k}: {p}");
        }
    });
}

#[test]
fn geneve_vectors_decode_to_scapy_values() {
    each_vector("geneve", |f, p| {
        let l = layer(p, "geneve");
        for k in ["vni", "protocol", "oam", "critical"] {
            assert_eq!(l[k], f[k], "{k}: {p}");
        }
        let opts = l["options"].as_array().unwrap();
        let want = f["options"].as_array().unwrap();
        assert_eq!(opts.len(), want.len(), "{p}");
        for (o, w) in opts.iter().zip(want) {
            assert_eq!(o["class"], w["class"]);
            assert_eq!(o["type"], w["type"]);
            assert_eq!(
                o["len"].as_u64().unwrap() as usize * 2,
                w["data"].as_str().unwrap().len()
            );
        }
    });
}

#[test]
fn gre_vectors_decode_to_scapy_values() {
    each_vector("nvgre", |f, p| {
        if f["key_present"] == true && f["protocol"] == 0x6558 {
            let l = layer(p, "nvgre");
            assert_eq!(l["vsid"], f["vsid"], "{p}");
            assert_eq!(l["flow_id"], f["flow_id"], "{p}");
        } else {
            let l = layer(p, "gre");
            assert_eq!(l["protocol"], f["protocol"], "{p}");
        }
    });
}

#[test]
fn sample_capture_has_every_tunnel_and_reports_the_malformed_packet() {
    let out = decode_json(&root().join("samples/tunnels.pcap"));
    let packets = out["packets"].as_array().unwrap();
    let has = |name: &str| {
        packets.iter().any(|p| {
            p["layers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["layer"] == name)
        })
    };
    for t in [
        "vxlan",
        "vxlan_gpe",
        "nsh",
        "geneve",
        "nvgre",
        "stt",
        "overlay",
        "arp",
    ] {
        assert!(has(t), "no {t} packet decoded in samples/tunnels.pcap");
    }
    let stt = packets
        .iter()
        .find_map(|p| {
            p["layers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["layer"] == "stt")
        })
        .unwrap();
    assert_eq!(stt["context_id"], 0x1122334455667788u64);
    let ov = packets
        .iter()
        .find_map(|p| {
            p["layers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["layer"] == "overlay")
        })
        .unwrap();
    assert_eq!(
        (
            ov["vni"].as_u64(),
            ov["dst_node"].as_u64(),
            ov["src_node"].as_u64(),
            ov["ttl"].as_u64()
        ),
        (Some(1000), Some(3), Some(1), Some(16))
    );
    let bad: Vec<&Value> = packets
        .iter()
        .filter(|p| p.get("malformed").is_some())
        .collect();
    assert_eq!(
        bad.len(),
        1,
        "exactly the truncated VXLAN packet is malformed"
    );
    assert_eq!(bad[0]["malformed"]["layer"], "vxlan");
    assert!(bad[0]["malformed"]["reason"]
        .as_str()
        .unwrap()
        .contains("truncated"));
    // Decoding went on after the malformed packet: the ARP after it is there.
    assert!(packets.last().unwrap()["layers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["layer"] == "arp"));
    assert_eq!(
        out["summary"]["packets"].as_u64().unwrap() as usize,
        packets.len()
    );
    assert_eq!(out["summary"]["malformed"], 1);
}

#[test]
fn text_output_names_layers_and_ids() {
    let out = nvo(&[
        "decode",
        root().join("samples/tunnels.pcap").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "vxlan vni 1 /",
        "nvgre vsid 1 flow 255",
        "context 0x1122334455667788",
        "node 1 > 3 ttl 16",
        "MALFORMED vxlan: truncated",
        "eth 52:54:00:aa:bb:01 > 52:54:00:aa:bb:02",
    ] {
        assert!(
            text.contains(needle),
            "text output lacks {needle:?}:\n{text}"
        );
    }
    assert!(
        text.lines().last().unwrap().contains("1 malformed"),
        "{text}"
    );
}

#[test]
fn pcapng_written_by_editcap_decodes_like_pcap() {
    let dir = Scratch::new("pcapng");
    let ng = dir.0.join("t.pcapng");
    let st = Command::new("editcap")
        .args(["-F", "pcapng"])
        .arg(root().join("samples/tunnels.pcap"))
        .arg(&ng)
        .status()
        .expect("editcap (Wireshark) is installed by scripts/setup.sh");
    assert!(st.success());
    let a = decode_json(&root().join("samples/tunnels.pcap"));
    let b = decode_json(&ng);
    assert_eq!(a["packets"], b["packets"]);
}

#[test]
fn bad_files_fail_with_one_clear_line() {
    let out = nvo(&["decode", "/nonexistent/x.pcap"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/x.pcap"), "{err}");

    let dir = Scratch::new("bad");
    let not = dir.0.join("not.pcap");
    std::fs::write(&not, b"hello, this is not a capture").unwrap();
    let out = nvo(&["decode", not.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("not a pcap or pcapng capture"));

    // A capture cut in the middle of a packet: the packets before the cut are still shown.
    let whole = std::fs::read(root().join("samples/tunnels.pcap")).unwrap();
    let cut = dir.0.join("cut.pcap");
    std::fs::write(&cut, &whole[..whole.len() - 20]).unwrap();
    let out = nvo(&["-o", "json", "decode", cut.to_str().unwrap()]);
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["packets"].as_array().unwrap().len() >= 10);
    assert!(
        v["error"].as_str().unwrap().contains("broken capture"),
        "{v}"
    );
}
