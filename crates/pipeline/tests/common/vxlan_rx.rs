//! A VXLAN packet from the underlay into the pipeline, as a datapath hands it over: the header
//! checked and taken off here (what the encapsulation engine does for every profile), then
//! `Pipeline::from_decapsulated`, the pipeline's one entry point from the underlay. The tests
//! and the benchmarks share this file.

use std::net::IpAddr;
use std::time::Instant;

use nvo_pipeline::{Actions, Decapsulated, DropReason, Pipeline, ProfileTag, Vni};
use nvo_wire::vxlan::VxlanPacket;

/// `receive_vxlan`: the VXLAN receive path over [`Pipeline`]'s public entry points.
pub trait ReceiveVxlan {
    /// Decides what happens to a VXLAN packet's UDP payload received from `src` at `now`:
    /// `malformed_vxlan` when shorter than the header, `vxlan_flags` when the I flag is clear
    /// (RFC 7348 §5), else the inner frame, which `Deliver` actions then refer to
    /// (`&udp_payload[nvo_wire::vxlan::HEADER_LEN..]`). GBP's D bit means "do not learn".
    fn receive_vxlan(
        &mut self,
        src: IpAddr,
        udp_payload: &[u8],
        now: Instant,
        actions: &mut Actions,
    );
}

impl ReceiveVxlan for Pipeline {
    fn receive_vxlan(
        &mut self,
        src: IpAddr,
        udp_payload: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) {
        let Ok(vxlan) = VxlanPacket::new_checked(udp_payload) else {
            return self.drop_underlay(udp_payload.len(), DropReason::MalformedVxlan, actions);
        };
        if !vxlan.vni_valid() {
            return self.drop_underlay(udp_payload.len(), DropReason::VxlanFlags, actions);
        }
        let decap = Decapsulated {
            src,
            vni: Vni(vxlan.vni()),
            profile: ProfileTag::VXLAN,
            dont_learn: vxlan.gbp() && vxlan.dont_learn(),
            src_node: None,
        };
        self.from_decapsulated(decap, udp_payload.len(), vxlan.payload(), now, actions);
    }
}
