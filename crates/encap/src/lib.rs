//! nvo's protocol-independent encapsulation engine (docs/design/encap.md).
//!
//! Every tunnel protocol finds a destination from an identifier inside the packet and pushes
//! outer headers. Here both are driven by data: a [`profile::Profile`] says where the
//! identifier, the VNI and the flow entropy sit (as offset and length), what must hold for a
//! received header to be this protocol, and what header to push; the [`engine::Engine`] keeps
//! the profiles, the key table and one header template per destination, patched per packet.
//! Adding a protocol is adding a profile, built in ([`builtin`]) or user-defined ([`spec`]).
//! STT's segmentation and reassembly are in [`stt`]. No I/O, no clock: time is passed in.

pub mod builtin;
pub mod engine;
pub mod keys;
pub mod profile;
pub mod spec;
pub mod stt;
pub mod template;
