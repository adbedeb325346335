//! A rule's match: a value and a mask over the key's words. A packet matches when its key,
//! masked, equals the value; a field whose mask is 0 is a wildcard. The value is always kept
//! masked, so two matches that accept the same packets compare equal.

use crate::key::{Field, Key, WORDS};

/// A masked match over a [`Key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Match {
    value: Key,
    mask: Key,
}

impl Match {
    /// The match that every packet matches.
    pub fn any() -> Match {
        Match::default()
    }

    /// This match with `field` equal to `value` (exactly).
    pub fn with(self, field: Field, value: u128) -> Match {
        self.with_masked(field, value, u128::MAX)
    }

    /// This match with `field` AND `mask` equal to `value` AND `mask`.
    pub fn with_masked(mut self, field: Field, value: u128, mask: u128) -> Match {
        self.mask.set(field, mask);
        let mask = self.mask.get(field);
        self.value.set(field, value & mask);
        self
    }

    /// This match with `field`'s top `len` bits equal to `value`'s (an address prefix;
    /// `len` beyond the field's width is its width). For [`Field::IpSrc`]/[`Field::IpDst`],
    /// `v4` says the address is IPv4 (its 32 bits are the low ones of the field).
    pub fn with_prefix(self, field: Field, value: u128, len: u32, v4: bool) -> Match {
        let width = if v4 { 32 } else { field.bits() };
        let len = len.min(width);
        let mask = if len == 0 {
            0
        } else {
            (u128::MAX << (128 - len)) >> (128 - width)
        };
        self.with_masked(field, value, mask)
    }

    /// Whether `key` matches.
    pub fn matches(&self, key: &Key) -> bool {
        (0..WORDS).all(|i| key.0[i] & self.mask.0[i] == self.value.0[i])
    }

    /// The value (masked).
    pub fn value(&self) -> &Key {
        &self.value
    }

    /// The mask.
    pub fn mask(&self) -> &Key {
        &self.mask
    }

    /// `field`'s value and mask.
    pub fn field(&self, field: Field) -> (u128, u128) {
        (self.value.get(field), self.mask.get(field))
    }

    /// Whether every packet this match accepts is accepted by `wider` too: `wider`
    /// constrains only bits this match constrains, to the same values (OpenFlow's "loose"
    /// matching of a delete or a stats request against installed rules).
    pub fn within(&self, wider: &Match) -> bool {
        (0..WORDS).all(|i| {
            let wm = wider.mask.0[i];
            wm & self.mask.0[i] == wm && self.value.0[i] & wm == wider.value.0[i]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_wildcards() {
        let m = Match::any().with(Field::EthType, 0x0800).with_prefix(
            Field::IpDst,
            0x0a01_0000,
            16,
            true,
        );
        let mut k = Key::default();
        k.set(Field::EthType, 0x0800);
        k.set(Field::IpDst, 0x0a01_0203);
        assert!(m.matches(&k));
        k.set(Field::IpDst, 0x0a02_0203);
        assert!(!m.matches(&k));
        assert_eq!(m.field(Field::IpDst), (0x0a01_0000, 0xffff_0000));
        let v6 = Match::any().with_prefix(Field::IpSrc, 0x2001_0db8 << 96, 32, false);
        assert_eq!(v6.field(Field::IpSrc).1, 0xffff_ffff << 96);
        assert!(Match::any().matches(&k));
    }

    #[test]
    fn values_are_kept_masked() {
        let a = Match::any().with_masked(Field::TpDst, 0x1234, 0xff00);
        let b = Match::any().with_masked(Field::TpDst, 0x12ff, 0xff00);
        assert_eq!(a, b);
    }

    #[test]
    fn within_is_loose_matching() {
        let narrow = Match::any()
            .with(Field::EthType, 0x0800)
            .with(Field::IpProto, 6)
            .with(Field::TpDst, 22);
        let wide = Match::any().with(Field::EthType, 0x0800);
        assert!(narrow.within(&wide));
        assert!(narrow.within(&Match::any()));
        assert!(!wide.within(&narrow));
        let other = Match::any().with(Field::EthType, 0x86dd);
        assert!(!narrow.within(&other));
    }
}
