//! Replays every committed fuzz corpus (fuzz/corpus/TARGET/*) and every scapy vector through the
//! round-trip checks, so that CI re-checks on stable Rust what the fuzzer found interesting.

use std::path::Path;

use nvo_wire_check::CHECKS;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn every_corpus_replays_clean() {
    for (name, check) in CHECKS {
        let dir = root().join("fuzz/corpus").join(name);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut n = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| check(&data));
            assert!(
                result.is_ok(),
                "{name}: corpus input {} fails its check",
                path.display()
            );
            n += 1;
        }
        assert!(n > 0, "{name}: empty corpus; run scripts/fuzz.sh");
    }
}

/// The header bytes of every scapy vector, and every prefix of them (truncations are the most
/// common malformation on the wire).
#[test]
fn scapy_vectors_and_their_truncations_pass_the_checks() {
    let dir = root().join("tests/vectors");
    let for_proto = [
        ("vxlan", "vxlan"),
        ("vxlan_gpe", "vxlan_gpe"),
        ("nsh", "nsh"),
        ("geneve", "geneve"),
        ("nvgre", "gre"),
    ];
    for (file, check_name) in for_proto {
        let check = CHECKS.iter().find(|(n, _)| *n == check_name).unwrap().1;
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let mut checked = 0;
        // The files are JSON; the only fields needed are "frame" and "header_offset".
        for chunk in text.split("\"frame\": \"").skip(1) {
            let hex = &chunk[..chunk.find('"').unwrap()];
            let frame: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let off_at = chunk.find("\"header_offset\": ").unwrap() + "\"header_offset\": ".len();
            let off: usize = chunk[off_at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let header = &frame[off..];
            for len in 0..=header.len() {
                check(&header[..len]);
            }
            checked += 1;
        }
        assert!(checked > 0, "no vectors read from {file}.json");
    }
}
