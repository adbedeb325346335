//! The NSH-over-VXLAN-GPE built-in: the header it pushes is what nvo_wire's NSH and VXLAN-GPE
//! parsers (checked against scapy and tshark) read, the SPI/SI key finds the next hop, and a
//! relay decrements SI until it runs out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;

use nvo_encap::builtin::{ids, names};
use nvo_encap::engine::{Engine, RelayError, Target};
use nvo_encap::profile::{Payload, Transport};
use nvo_wire::nsh::{MdType, NshPacket};
use nvo_wire::ports;
use nvo_wire::vxlan_gpe::{NextProtocol, VxlanGpePacket};

fn remote() -> IpAddr {
    "192.0.2.9".parse().unwrap()
}

#[test]
fn header_parses_as_gpe_then_nsh_with_the_params() {
    let mut e = Engine::new(Default::default());
    assert_eq!(e.id(names::VXLAN_GPE_NSH), Some(ids::VXLAN_GPE_NSH));
    let params = [("spi".to_owned(), 0x00_0abc), ("si".to_owned(), 200)];
    e.set_params(ids::VXLAN_GPE_NSH, 77, None, &params).unwrap();
    let header = e
        .header(ids::VXLAN_GPE_NSH, 77, remote(), 0x1234, 60)
        .unwrap()
        .to_vec();
    assert_eq!(header.len(), 16);
    let gpe = VxlanGpePacket::new_checked(&header[..]).unwrap();
    assert_eq!(gpe.vni(), 77);
    assert_eq!(gpe.next_protocol(), NextProtocol::Nsh);
    let nsh = NshPacket::new_checked(&header[8..]).unwrap();
    assert_eq!(nsh.version(), 0);
    assert_eq!(nsh.md_type(), MdType::Type2);
    assert_eq!(nsh.header_len(), 8);
    assert_eq!(nsh.next_protocol(), NextProtocol::Ethernet);
    assert_eq!((nsh.spi(), nsh.si()), (0xabc, 200));
    assert_eq!(nsh.ttl(), 63);
}

#[test]
fn spi_si_key_finds_next_hop_and_relay_decrements_si() {
    let mut e = Engine::new(Default::default());
    let params = [("spi".to_owned(), 10), ("si".to_owned(), 255)];
    e.set_params(ids::VXLAN_GPE_NSH, 5, None, &params).unwrap();
    let mut packet = e
        .header(ids::VXLAN_GPE_NSH, 5, remote(), 1, 14)
        .unwrap()
        .to_vec();
    packet.extend_from_slice(&[0u8; 14]);
    let next: IpAddr = "192.0.2.3".parse().unwrap();
    e.bind_key(
        ids::VXLAN_GPE_NSH,
        &[0, 0, 10, 255],
        Target::Forward { remote: next },
    )
    .unwrap();
    e.bind_key(
        ids::VXLAN_GPE_NSH,
        &[0, 0, 10, 254],
        Target::Local { vni: 5 },
    )
    .unwrap();
    let transport = Transport::Udp(ports::VXLAN_GPE);
    let d = e.decap(transport, &packet).unwrap();
    assert_eq!(d.profile, ids::VXLAN_GPE_NSH);
    assert_eq!(d.target, Target::Forward { remote: next });
    assert_eq!((d.header_len, d.payload), (16, Payload::Ethernet));
    e.relay(d.profile, &mut packet).unwrap();
    assert_eq!(NshPacket::new_checked(&packet[8..]).unwrap().si(), 254);
    // At the next hop the decremented SI is the key of the local delivery.
    let d = e.decap(transport, &packet).unwrap();
    assert_eq!(d.target, Target::Local { vni: 5 });
    // SI 1 cannot be relayed: it would leave with 0.
    packet[15] = 1;
    assert_eq!(e.relay(d.profile, &mut packet), Err(RelayError::HopExpired));
    // A plain GPE packet on the same port is not taken for NSH.
    let mut gpe = e
        .header(ids::VXLAN_GPE, 5, remote(), 1, 14)
        .unwrap()
        .to_vec();
    gpe.extend_from_slice(&[0u8; 14]);
    e.bind_local(ids::VXLAN_GPE, 6, &[]).unwrap();
    gpe[6] = 6;
    assert_eq!(e.decap(transport, &gpe).unwrap().profile, ids::VXLAN_GPE);
}
