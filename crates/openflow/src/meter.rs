//! METER_MOD (OpenFlow 1.3.5 §7.3.4.4): adding and deleting meters, as `ovs-ofctl -O OpenFlow13
//! add-meter|del-meter` send them. nvo's meters are single-rate policers with a drop action,
//! so only what maps onto one is taken: one band of type DROP, a rate in kbit/s (OFPMF_KBPS),
//! an optional burst in kilobits (OFPMF_BURST), OFPMF_STATS (counters are always kept).
//! Packets per second, DSCP_REMARK or experimenter bands, several bands, MODIFY and the
//! virtual meters (OFPM_SLOWPATH, OFPM_CONTROLLER, OFPM_ALL) are answered with
//! OFPET_METER_MOD_FAILED errors.
//!
//! ```text
//!  struct ofp_meter_mod {            struct ofp_meter_band_drop {
//!      ofp_header header;                uint16_t type;        /* OFPMBT_DROP = 1 */
//!      uint16_t command;  /* ADD 0,      uint16_t len;         /* 16 */
//!          MODIFY 1, DELETE 2 */          uint32_t rate;        /* kbit/s with OFPMF_KBPS */
//!      uint16_t flags;    /* KBPS 1,     uint32_t burst_size;  /* kilobits, with OFPMF_BURST */
//!          PKTPS 2, BURST 4, STATS 8 */   uint8_t pad[4];
//!      uint32_t meter_id;                };
//!      struct ofp_meter_band_header bands[0];
//!  };
//! ```

use crate::wire::{OfError, Reader};

/// The last meter number a switch may give (OFPM_MAX); above it are the virtual meters.
pub const METER_MAX: u32 = 0xffff_0000;

const ADD: u16 = 0;
const MODIFY: u16 = 1;
const DELETE: u16 = 2;
const KBPS: u16 = 1;
const PKTPS: u16 = 2;
const BURST: u16 = 4;
const STATS: u16 = 8;
const BAND_DROP: u16 = 1;

impl OfError {
    pub const METER_MOD_UNKNOWN: OfError = OfError::new(12, 0);
    pub const METER_EXISTS: OfError = OfError::new(12, 1);
    pub const METER_INVALID: OfError = OfError::new(12, 2);
    pub const METER_UNKNOWN: OfError = OfError::new(12, 3);
    pub const METER_BAD_COMMAND: OfError = OfError::new(12, 4);
    pub const METER_BAD_FLAGS: OfError = OfError::new(12, 5);
    pub const METER_BAD_RATE: OfError = OfError::new(12, 6);
    pub const METER_BAD_BURST: OfError = OfError::new(12, 7);
    pub const METER_BAD_BAND: OfError = OfError::new(12, 8);
    pub const METER_OUT_OF_METERS: OfError = OfError::new(12, 10);
    pub const METER_OUT_OF_BANDS: OfError = OfError::new(12, 11);
}

/// A METER_MOD nvo carries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterMod {
    /// Add meter `id`: `rate` bit/s, `burst` bytes (`None`: the switch chooses).
    Add {
        /// The meter's number.
        id: u32,
        /// Its rate in bit/s.
        rate: u64,
        /// Its burst in bytes, if the controller gave one.
        burst: Option<u64>,
    },
    /// Delete meter `id`.
    Delete {
        /// The meter's number.
        id: u32,
    },
}

/// Parses a METER_MOD's body (after the header).
pub fn parse_meter_mod(body: &[u8]) -> Result<MeterMod, OfError> {
    let mut r = Reader::new(body);
    let (Some(command), Some(flags), Some(id)) = (r.u16(), r.u16(), r.u32()) else {
        return Err(OfError::BAD_LEN);
    };
    if id == 0 || id > METER_MAX {
        return Err(OfError::METER_INVALID);
    }
    match command {
        DELETE => return Ok(MeterMod::Delete { id }),
        ADD => {}
        MODIFY => return Err(OfError::METER_BAD_COMMAND),
        _ => return Err(OfError::METER_BAD_COMMAND),
    }
    if flags & PKTPS != 0 || flags & KBPS == 0 || flags & !(KBPS | BURST | STATS) != 0 {
        return Err(OfError::METER_BAD_FLAGS);
    }
    let (Some(kind), Some(len)) = (r.u16(), r.u16()) else {
        return Err(OfError::METER_BAD_BAND);
    };
    if kind != BAND_DROP {
        return Err(OfError::METER_BAD_BAND);
    }
    if len != 16 {
        return Err(OfError::BAD_LEN);
    }
    let (Some(rate), Some(burst), Some(_)) = (r.u32(), r.u32(), r.skip(4)) else {
        return Err(OfError::BAD_LEN);
    };
    if r.left() > 0 {
        return Err(OfError::METER_OUT_OF_BANDS);
    }
    if rate == 0 {
        return Err(OfError::METER_BAD_RATE);
    }
    let burst = match flags & BURST {
        0 => None,
        _ if burst == 0 => return Err(OfError::METER_BAD_BURST),
        // Kilobits (§7.3.4.4: burst_size in the rate's unit, kilobits for kbps) → bytes.
        _ => Some(u64::from(burst) * 1000 / 8),
    };
    Ok(MeterMod::Add {
        id,
        rate: u64::from(rate) * 1000,
        burst,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `meter=1,kbps,band=type=drop,rate=100000` laid out by §7.3.4.4 (after the header):
    /// ADD, KBPS, meter 1, one drop band of 100000 kbit/s and no burst (tests/ovs_ofctl.rs has
    /// what ovs-ofctl itself sends).
    const ADD_METER_1: [u8; 24] = [
        0, 0, 0, 1, 0, 0, 0, 1, // command ADD, flags KBPS, meter_id 1
        0, 1, 0, 16, 0, 1, 0x86, 0xa0, // DROP band, len 16, rate 100000
        0, 0, 0, 0, 0, 0, 0, 0, // burst_size 0, pad
    ];

    #[test]
    fn an_add_with_one_drop_band_in_kbps_is_a_meter() {
        assert_eq!(
            parse_meter_mod(&ADD_METER_1),
            Ok(MeterMod::Add {
                id: 1,
                rate: 100_000_000,
                burst: None
            })
        );
        let mut with_burst = ADD_METER_1;
        with_burst[3] = (KBPS | BURST | STATS) as u8;
        with_burst[19] = 0x08; // 8 kilobits
        with_burst[18] = 0x02; // 520 kilobits in all
        assert_eq!(
            parse_meter_mod(&with_burst),
            Ok(MeterMod::Add {
                id: 1,
                rate: 100_000_000,
                burst: Some(520 * 1000 / 8)
            })
        );
    }

    #[test]
    fn what_nvo_has_no_meter_for_is_refused_with_its_error() {
        let delete = [0, 2, 0, 0, 0, 0, 0, 7];
        assert_eq!(parse_meter_mod(&delete), Ok(MeterMod::Delete { id: 7 }));
        let mut m = ADD_METER_1;
        m[1] = MODIFY as u8;
        assert_eq!(parse_meter_mod(&m), Err(OfError::METER_BAD_COMMAND));
        let mut m = ADD_METER_1;
        m[3] = PKTPS as u8;
        assert_eq!(parse_meter_mod(&m), Err(OfError::METER_BAD_FLAGS));
        let mut m = ADD_METER_1;
        m[9] = 2; // DSCP_REMARK
        assert_eq!(parse_meter_mod(&m), Err(OfError::METER_BAD_BAND));
        let mut m = ADD_METER_1;
        m[4..8].copy_from_slice(&0xffff_fffdu32.to_be_bytes()); // OFPM_CONTROLLER
        assert_eq!(parse_meter_mod(&m), Err(OfError::METER_INVALID));
        let mut two = ADD_METER_1.to_vec();
        two.extend_from_slice(&ADD_METER_1[8..]);
        assert_eq!(parse_meter_mod(&two), Err(OfError::METER_OUT_OF_BANDS));
        let mut m = ADD_METER_1;
        m[12..16].copy_from_slice(&[0; 4]);
        assert_eq!(parse_meter_mod(&m), Err(OfError::METER_BAD_RATE));
        assert_eq!(parse_meter_mod(&ADD_METER_1[..6]), Err(OfError::BAD_LEN));
        assert_eq!(parse_meter_mod(&ADD_METER_1[..20]), Err(OfError::BAD_LEN));
    }
}
