//! Independent check of the encoder: OPEN, KEEPALIVE and EVPN UPDATEs emitted by nvo-bgp are
//! written into a pcap as TCP payload to port 179, and Wireshark's BGP dissector (tshark) must
//! decode the fields we meant to send. Skips, saying so, only when tshark is not installed.
//!
//! ```text
//!  192.0.2.1:40000 (nvo, Ethernet 02:00:00:00:00:01)
//!        | TCP, one BGP message per segment, PSH|ACK
//!        v
//!  192.0.2.254:179 (route reflector, Ethernet 02:00:00:00:00:02)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use nvo_bgp::Message;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpAddress, IpProtocol,
    Ipv4Address, Ipv4Packet, Ipv4Repr, TcpPacket, TcpSeqNumber,
};

const SRC: Ipv4Address = Ipv4Address::new(192, 0, 2, 1);
const DST: Ipv4Address = Ipv4Address::new(192, 0, 2, 254);

/// Ethernet/IPv4/TCP around one BGP message.
fn frame(payload: &[u8], seq: i32) -> Vec<u8> {
    let tcp_len = 20 + payload.len();
    let ip = Ipv4Repr {
        src_addr: SRC,
        dst_addr: DST,
        next_header: IpProtocol::Tcp,
        payload_len: tcp_len,
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut buf = vec![0u8; 14 + 20 + tcp_len];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
    ip.emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[14..]),
        &ChecksumCapabilities::default(),
    );
    let mut tcp = TcpPacket::new_unchecked(&mut buf[34..]);
    tcp.set_src_port(40000);
    tcp.set_dst_port(179);
    tcp.set_seq_number(TcpSeqNumber(seq));
    tcp.set_ack_number(TcpSeqNumber(1));
    tcp.set_header_len(20);
    tcp.clear_flags();
    tcp.set_psh(true);
    tcp.set_ack(true);
    tcp.set_window_len(65535);
    tcp.set_urgent_at(0);
    tcp.payload_mut().copy_from_slice(payload);
    tcp.fill_checksum(&IpAddress::Ipv4(SRC), &IpAddress::Ipv4(DST));
    buf
}

/// Writes the messages and returns their lengths.
fn write_pcap(path: &Path, messages: &[Message]) -> Vec<String> {
    let mut writer = PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    let mut seq = 1i32;
    let mut lengths = Vec::new();
    for (i, msg) in messages.iter().enumerate() {
        let bytes = emit(msg);
        lengths.push(bytes.len().to_string());
        let data = frame(&bytes, seq);
        seq += bytes.len() as i32;
        let packet = PcapPacket::new(Duration::from_millis(i as u64), data.len() as u32, &data);
        writer.write_packet(&packet).unwrap();
    }
    lengths
}

/// Every value tshark shows for `field`, across all packets.
fn tshark_values(pcap: &Path, field: &str) -> Vec<String> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(pcap)
        .args([
            "-o",
            "tcp.desegment_tcp_streams:FALSE",
            "-d",
            "tcp.port==179,bgp",
            "-T",
            "fields",
        ])
        .args(["-E", "occurrence=a", "-E", "aggregator=|", "-e", field])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .flat_map(|l| l.split('|').map(str::to_owned).collect::<Vec<_>>())
        .filter(|v| !v.is_empty())
        .collect()
}

#[test]
fn tshark_decodes_what_we_emit() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipping: tshark is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("nvo-bgp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("bgp.pcap");
    let lengths = write_pcap(
        &pcap,
        &[
            open(),
            Message::Keepalive,
            Message::Update(evpn_update(&[mac_ip_route(), multicast_route()])),
            Message::Update(withdraw_update()),
        ],
    );
    let check = |field: &str, want: &[&str]| {
        let got = tshark_values(&pcap, field);
        assert_eq!(got, want, "tshark field {field}");
    };
    check("bgp.type", &["1", "4", "2", "2"]);
    // tshark found each message where our length field said it ends.
    assert_eq!(tshark_values(&pcap, "bgp.length"), lengths);
    check("bgp.open.myas", &["65001"]);
    check("bgp.open.holdtime", &["90"]);
    check("bgp.open.identifier", &["192.0.2.1"]);
    check("bgp.cap.mp.afi", &["25"]);
    check("bgp.cap.mp.safi", &["70"]);
    check("bgp.cap.4as", &["65001"]);
    check("bgp.cap.gr.timers.restart_time", &["120"]);
    check("bgp.cap.gr.afi", &["25"]);
    check("bgp.update.path_attribute.mp_reach_nlri.afi", &["25"]);
    check("bgp.update.path_attribute.mp_reach_nlri.safi", &["70"]);
    check(
        "bgp.update.path_attribute.mp_reach_nlri.next_hop.ipv4",
        &["192.0.2.1"],
    );
    check("bgp.update.path_attribute.mp_unreach_nlri.afi", &["25"]);
    check("bgp.evpn.nlri.rt", &["2", "3", "2"]);
    check(
        "bgp.evpn.nlri.mac_addr",
        &["02:00:5e:00:53:01", "02:00:5e:00:53:01"],
    );
    // tshark shows the type 3 originating router under the same field.
    check(
        "bgp.evpn.nlri.ip.addr",
        &["10.0.0.1", "192.0.2.1", "10.0.0.1"],
    );
    // The label field carries VNI 10100 (RFC 8365 §5.1.3); tshark reads it as a 20-bit MPLS
    // label, 10100 >> 4 = 631, and names the PMSI label a VNI.
    check("bgp.evpn.nlri.mpls_ls1", &["631", "631"]);
    check("bgp.evpn.nlri.vni", &["10100"]);
    check("bgp.evpn.nlri.rd", &["0001c00002010002"; 3]);
    check("bgp.evpn.nlri.etag", &["0"; 3]);
    check(
        "bgp.update.path_attribute.as_path_segment.as4",
        &["65001", "4200000000"],
    );
    check("bgp.update.path_attribute.local_pref", &["100"]);
    check("bgp.update.path_attribute.originator_id", &["192.0.2.1"]);
    check("bgp.update.path_attribute.origin", &["0"]);
    check("bgp.ext_com.value_as2", &["65001"]);
    check("bgp.ext_com.value_an4", &["10100"]);
    check("bgp.ext_com.tunnel_type", &["8"]);
    check("bgp.ext_com_evpn.mmac.seq", &["5"]);
    check("bgp.update.path_attribute.pmsi.tunnel.type", &["6"]);
    check(
        "bgp.update.path_attribute.pmsi.ingress_rep_ip",
        &["192.0.2.1"],
    );
    if std::env::var_os("NVO_KEEP_PCAP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
