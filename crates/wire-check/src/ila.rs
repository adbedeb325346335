//! ILA translation of arbitrary addresses and mappings: 16 bytes of address, an 8-byte SIR
//! prefix, an 8-byte locator and a mode byte. Both directions either fail cleanly (wrong prefix,
//! C bit already set) or translate back to where they started, keeping the one's complement sum
//! of the address in the checksum-neutral modes.

use nvo_wire::ila::{ila_to_sir, sir_to_ila, ChecksumMode, IlaAddress};
use nvo_wire::std_wire::checksum;

const MODES: [ChecksumMode; 4] = [
    ChecksumMode::NoAction,
    ChecksumMode::NeutralMap,
    ChecksumMode::NeutralMapAuto,
    ChecksumMode::AdjustTransport,
];

fn neutral(mode: ChecksumMode) -> bool {
    matches!(
        mode,
        ChecksumMode::NeutralMap | ChecksumMode::NeutralMapAuto
    )
}

fn same_ones(a: &IlaAddress, b: &IlaAddress) -> bool {
    let (a, b) = (checksum::data(&a.0), checksum::data(&b.0));
    u32::from(a) % 0xffff == u32::from(b) % 0xffff
}

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    if data.len() < 33 {
        return;
    }
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&data[..16]);
    let prefix = u64::from_be_bytes(data[16..24].try_into().expect("8 bytes"));
    let locator = u64::from_be_bytes(data[24..32].try_into().expect("8 bytes"));
    let mode = MODES[usize::from(data[32] & 3)];
    let mut addr = IlaAddress(octets);
    // Most random addresses do not carry the prefix: let the fuzzer choose to make it match.
    if data[32] & 0x80 != 0 {
        addr.set_locator(prefix);
    }
    let _ = (
        addr.to_string(),
        addr.identifier().kind(),
        addr.identifier().value(),
    );

    // SIR -> ILA -> SIR.
    match sir_to_ila(addr.address(), prefix, locator, mode) {
        Err(_) => assert!(
            addr.locator() != prefix
                || (mode == ChecksumMode::NeutralMap && addr.identifier().checksum_neutral())
        ),
        Ok(ila) => {
            assert_eq!(ila.locator(), locator);
            if neutral(mode) {
                assert!(same_ones(&addr, &ila), "sum changed: {addr} -> {ila}");
            }
            let back =
                IlaAddress::from(ila_to_sir(ila, locator, prefix, mode).expect("translates back"));
            let mut expected = addr;
            if neutral(mode) && addr.identifier().adjustment() == 0xffff {
                expected.set_identifier(addr.identifier().with_adjustment(0)); // -0 comes back +0
            }
            assert_eq!(back, expected, "{addr} -> {ila} -> {back}");
        }
    }

    // ILA -> SIR -> ILA, for the same bytes seen as an ILA address of `locator`.
    let mut ila = IlaAddress(octets);
    if data[32] & 0x40 != 0 {
        ila.set_locator(locator);
    }
    match ila_to_sir(ila, locator, prefix, mode) {
        Err(_) => assert!(ila.locator() != locator),
        Ok(sir) => {
            let sir = IlaAddress::from(sir);
            assert_eq!(sir.locator(), prefix);
            let id = ila.identifier();
            // NeutralMap leaves an address whose C bit is clear unmapped: sir_to_ila would
            // then map it, so neither the sum nor the way back can be compared.
            let mapped =
                neutral(mode) && (mode != ChecksumMode::NeutralMap || id.checksum_neutral());
            if mapped {
                assert!(same_ones(&ila, &sir), "sum changed: {ila} -> {sir}");
            }
            let again = sir_to_ila(sir.address(), prefix, locator, mode).expect("translates again");
            // sir_to_ila writes a zero adjustment as 0xffff, never 0x0000.
            if !neutral(mode) || (mapped && id.adjustment() != 0) {
                assert_eq!(again, ila, "{ila} -> {sir} -> {again}");
            }
        }
    }
}
