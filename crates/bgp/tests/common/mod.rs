//! Sample messages shaped like what nvo will advertise to an EVPN route reflector.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::net::{IpAddr, Ipv4Addr};

use nvo_bgp::attribute::{AsPathSegment, Origin, PMSI_INGRESS_REPLICATION};
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::open::GracefulRestartFamily;
use nvo_bgp::*;

pub const VTEP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x00, 0x53, 0x01];
pub const VNI: u32 = 10100;
pub const ASN: u32 = 65001;

pub fn open() -> Message {
    Message::Open(OpenRepr::new(
        ASN,
        90,
        VTEP,
        vec![
            Capability::Multiprotocol { afi: 25, safi: 70 },
            Capability::RouteRefresh,
            Capability::GracefulRestart {
                flags: 0x8,
                restart_time: 120,
                families: vec![GracefulRestartFamily {
                    afi: 25,
                    safi: 70,
                    flags: 0x80,
                }],
            },
        ],
    ))
}

pub fn rd() -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 {
        addr: VTEP,
        value: 2,
    }
}

pub fn mac_ip_route() -> EvpnRoute {
    EvpnRoute::MacIp(MacIpRoute {
        rd: rd(),
        esi: [0; 10],
        ethernet_tag: 0,
        mac: MAC,
        ip: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        label1: VNI,
        label2: None,
    })
}

pub fn multicast_route() -> EvpnRoute {
    EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
        rd: rd(),
        ethernet_tag: 0,
        originator: IpAddr::V4(VTEP),
    })
}

pub fn evpn_update(routes: &[EvpnRoute]) -> UpdateRepr {
    let mp = MpReach::evpn(IpAddr::V4(VTEP), routes).unwrap();
    let attrs = vec![
        AttributeValue::MpReach(mp),
        AttributeValue::Origin(Origin::Igp),
        AttributeValue::AsPath(vec![AsPathSegment {
            kind: 2,
            asns: vec![ASN, 4_200_000_000],
        }]),
        AttributeValue::LocalPref(100),
        AttributeValue::OriginatorId(VTEP),
        AttributeValue::ClusterList(vec![Ipv4Addr::new(192, 0, 2, 254)]),
        AttributeValue::ExtendedCommunities(vec![
            ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
                asn: 65001,
                value: VNI,
            }),
            ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN),
            ExtendedCommunity::MacMobility {
                flags: 0,
                sequence: 5,
            },
        ]),
        AttributeValue::PmsiTunnel(PmsiTunnel {
            flags: 0,
            tunnel_type: PMSI_INGRESS_REPLICATION,
            label: VNI,
            tunnel_id: VTEP.octets().to_vec(),
        }),
    ];
    UpdateRepr {
        withdrawn: vec![],
        attributes: attrs.into_iter().map(PathAttribute::new).collect(),
        nlri: vec![],
    }
}

pub fn withdraw_update() -> UpdateRepr {
    let mut withdrawn = Vec::new();
    EvpnRoute::emit_all(&[mac_ip_route()], &mut withdrawn).unwrap();
    let mp = MpUnreach {
        afi: 25,
        safi: 70,
        withdrawn,
    };
    UpdateRepr {
        withdrawn: vec![],
        attributes: vec![PathAttribute::new(AttributeValue::MpUnreach(mp))],
        nlri: vec![],
    }
}

pub fn emit(msg: &Message) -> Vec<u8> {
    let mut out = Vec::new();
    msg.emit(&mut out).unwrap();
    out
}
