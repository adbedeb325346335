//! Shared by the wire crate's integration tests: scapy vectors, outer frames, pcap files and tshark.
//!
//! Each test binary includes this module and uses only part of it.
#![allow(dead_code, clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use nvo_wire::std_wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpProtocol, Ipv4Address,
    Ipv4Packet, Ipv4Repr, UdpPacket,
};
use serde::Deserialize;

/// One vector written by tests/vectors/gen_scapy.py.
#[derive(Debug, Deserialize)]
pub struct Vector {
    pub name: String,
    frame: String,
    pub header_offset: usize,
    pub fields: serde_json::Value,
}

impl Vector {
    /// The whole Ethernet frame as scapy built it.
    pub fn frame(&self) -> Vec<u8> {
        unhex(&self.frame)
    }

    /// The tunnel header and everything after it.
    pub fn header(&self) -> Vec<u8> {
        self.frame()[self.header_offset..].to_vec()
    }

    pub fn u64(&self, field: &str) -> u64 {
        self.fields[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: field {field} missing or not a number", self.name))
    }

    pub fn bool(&self, field: &str) -> bool {
        self.fields[field]
            .as_bool()
            .unwrap_or_else(|| panic!("{}: field {field} missing or not a bool", self.name))
    }

    pub fn hex(&self, field: &str) -> Vec<u8> {
        unhex(
            self.fields[field]
                .as_str()
                .unwrap_or_else(|| panic!("{}: field {field} missing or not a string", self.name)),
        )
    }
}

#[derive(Debug, Deserialize)]
struct VectorFile {
    source: String,
    vectors: Vec<Vector>,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Loads tests/vectors/`proto`.json; panics (failing the test) if it is missing or empty.
pub fn scapy_vectors(proto: &str) -> Vec<Vector> {
    let path = repo_root()
        .join("tests/vectors")
        .join(format!("{proto}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file: VectorFile = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
    assert!(
        file.source.starts_with("scapy "),
        "{}: vectors not from scapy",
        path.display()
    );
    assert!(!file.vectors.is_empty(), "{}: no vectors", path.display());
    file.vectors
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex string {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

pub const OUTER_SRC: Ipv4Address = Ipv4Address::new(192, 0, 2, 1);
pub const OUTER_DST: Ipv4Address = Ipv4Address::new(192, 0, 2, 2);

/// Wraps `payload` in Ethernet + IPv4 (protocol `proto`) with a valid header checksum.
pub fn ipv4_frame(proto: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let ip = Ipv4Repr {
        src_addr: OUTER_SRC,
        dst_addr: OUTER_DST,
        next_header: proto,
        payload_len: payload.len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut buf = vec![0u8; eth.buffer_len() + ip.buffer_len() + payload.len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut frame);
    let mut packet = Ipv4Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut packet, &Default::default());
    packet.payload_mut().copy_from_slice(payload);
    packet.fill_checksum();
    buf
}

/// Wraps `payload` in Ethernet + IPv4 + UDP to `dport` (UDP checksum zero, as RFC 768 allows
/// over IPv4 and tunnel RFCs recommend).
pub fn udp_frame(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8 + payload.len()];
    let mut packet = UdpPacket::new_unchecked(&mut udp[..]);
    packet.set_src_port(sport);
    packet.set_dst_port(dport);
    packet.set_len((8 + payload.len()) as u16);
    packet.set_checksum(0);
    packet.payload_mut().copy_from_slice(payload);
    ipv4_frame(IpProtocol::Udp, &udp)
}

/// An inner tenant Ethernet frame with the given addresses and a short payload.
pub fn inner_frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + 46);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]); // local experimental ethertype
    f.extend_from_slice(&[0u8; 46]);
    f
}

/// Writes Ethernet frames as a classic pcap file (LINKTYPE_ETHERNET).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Reads the frames of a classic little-endian pcap file, as scapy and [`write_pcap`] write it.
pub fn read_pcap(path: &std::path::Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(&data[..4], &0xa1b2_c3d4u32.to_le_bytes(), "pcap magic");
    let u32_at = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= data.len() {
        let len = u32_at(at + 8) as usize;
        frames.push(data[at + 16..at + 16 + len].to_vec());
        at += 16 + len;
    }
    frames
}

/// A scratch directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("nvo-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The Lua dissector for the overlay header shipped in the repo.
pub fn overlay_dissector() -> PathBuf {
    repo_root().join("dissectors/nvo_overlay.lua")
}

/// Runs tshark on `frames` and returns, per packet, the values of `fields` (each a list of
/// occurrences, comma-separated by tshark). `extra` are more tshark arguments (`-d`, `-o`, `-X`).
///
/// tshark is a required test dependency (scripts/setup.sh installs it): if it is missing the
/// test fails, it is never skipped.
pub fn tshark_fields(
    tag: &str,
    frames: &[Vec<u8>],
    fields: &[&str],
    extra: &[&str],
) -> Vec<Vec<String>> {
    let dir = TempDir::new(tag);
    let pcap = dir.0.join("emitted.pcap");
    write_pcap(&pcap, frames);
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(&pcap).args([
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
    ]);
    cmd.args(extra);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark (install it with scripts/setup.sh): {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    // tshark warns about running as root and still succeeds; anything about fields is an error.
    assert!(
        !stderr.contains("aren't valid") && !stderr.contains("isn't a valid"),
        "tshark rejected a field name: {stderr}"
    );
    let text = String::from_utf8(out.stdout).expect("tshark prints UTF-8");
    let rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert_eq!(
        rows.len(),
        frames.len(),
        "tshark printed one line per packet:\n{text}"
    );
    rows
}

/// Parses a number as tshark prints it: decimal, or hex with 0x.
pub fn tshark_num(s: &str) -> u64 {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).unwrap_or_else(|e| panic!("tshark value {s:?}: {e}"))
    } else {
        s.parse()
            .unwrap_or_else(|e| panic!("tshark value {s:?}: {e}"))
    }
}

/// Parses a boolean as tshark prints it (`1`/`0`, `True`/`False`).
pub fn tshark_bool(s: &str) -> bool {
    match s.trim() {
        "1" | "True" | "true" => true,
        "0" | "False" | "false" | "" => false,
        other => panic!("tshark boolean {other:?}"),
    }
}
