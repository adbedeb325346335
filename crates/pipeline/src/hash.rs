//! The flow hash that picks a VXLAN packet's outer UDP source port.
//!
//! RFC 7348 §5 asks for a source port computed from a hash of the inner frame's headers so that
//! the underlay's ECMP spreads flows. The hash only has to be fast, spread well and be the same
//! for every packet of a flow; it need not resist an adversary (a chosen collision only puts two
//! flows on one path). It is therefore a fixed-seed multiply-rotate hash over 64-bit words (the
//! FxHash step) with the MurmurHash3 64-bit finaliser, folded to 16 bits. No state is random, so
//! the value is the same in every process and on every run: tests and other datapaths can
//! reproduce it.

/// FxHash's multiplier (from Firefox's hasher, as used by rustc).
const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
/// An arbitrary odd starting value, so that an all-zero input does not hash to zero.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The flow hash of a run of bytes (header fields already laid out one after another), for
/// callers outside the pipeline that pick a source port for packets it does not parse, such as
/// relayed tunnel packets.
pub fn flow_hash16(bytes: &[u8]) -> u16 {
    let mut h = FlowHasher::new();
    h.bytes(bytes);
    h.finish16()
}

/// Accumulates the fields of a flow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlowHasher {
    state: u64,
}

impl FlowHasher {
    pub(crate) const fn new() -> FlowHasher {
        FlowHasher { state: SEED }
    }

    /// Adds one 64-bit word.
    pub(crate) fn word(&mut self, w: u64) {
        self.state = (self.state.rotate_left(5) ^ w).wrapping_mul(K);
    }

    /// Adds bytes, eight at a time; a short tail is zero-padded and tagged with its length so
    /// that `[1]` and `[1, 0]` differ.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            self.word(u64::from_le_bytes(w));
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let mut w = [0u8; 8];
            w[..tail.len()].copy_from_slice(tail);
            // The length goes in the top byte, which a tail of at most seven bytes never fills.
            w[7] = tail.len() as u8;
            self.word(u64::from_le_bytes(w));
        }
    }

    /// The 16-bit result: MurmurHash3's fmix64 so every input bit reaches every output bit, then
    /// the four 16-bit lanes folded together.
    pub(crate) fn finish16(self) -> u16 {
        let mut h = self.state;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        (h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(bytes: &[u8]) -> u16 {
        let mut h = FlowHasher::new();
        h.bytes(bytes);
        h.finish16()
    }

    #[test]
    fn deterministic_and_length_sensitive() {
        assert_eq!(hash(b"flow one"), hash(b"flow one"));
        assert_ne!(hash(&[1]), hash(&[1, 0]));
        assert_ne!(hash(&[]), hash(&[0]));
    }

    #[test]
    fn spreads_over_buckets() {
        // 4096 flows differing only in the source port, over 16 buckets (the default entropy port
        // pool): each bucket should get roughly 256. A hash that ignored the varying bytes or
        // lost bits in folding would put them all in one or a few buckets.
        let mut buckets = [0u32; 16];
        for port in 0u16..4096 {
            let mut key = [0u8; 16];
            key[..4].copy_from_slice(&[10, 0, 0, 1]);
            key[4..8].copy_from_slice(&[10, 0, 0, 2]);
            key[8..10].copy_from_slice(&port.to_be_bytes());
            key[10..12].copy_from_slice(&80u16.to_be_bytes());
            buckets[usize::from(hash(&key) % 16)] += 1;
        }
        for (i, n) in buckets.iter().enumerate() {
            assert!((160..=352).contains(n), "bucket {i} has {n} of 4096");
        }
    }
}
