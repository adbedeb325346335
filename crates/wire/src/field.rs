//! Where header fields sit, and the big-endian accessors every header shares.
//!
//! A [`FieldSpec`] names one field of a header: its byte offset, how many bytes hold it and which
//! bits of those bytes are its own. Each header module declares its fields once, with
//! `header!` (in `header.rs`), as `pub const` specs in its `layout` module; the `XPacket` getters
//! and setters are generated from them, and a C header for the eBPF programs can be generated
//! from the same constants (see docs/design/wire-headers.md). Accessors take slices that
//! `check_len` has already proven long enough; this module is the only place that turns bytes
//! into integers, so no header module repeats the shifting.

/// A range of bytes inside a header.
pub type Field = core::ops::Range<usize>;
/// From a byte offset to the end of the buffer.
pub type Rest = core::ops::RangeFrom<usize>;

/// One field of a header: bytes `offset..offset + len`, read big-endian, then masked and shifted.
///
/// Specs are `const` data. The generated accessors call [`FieldSpec::read`] and
/// [`FieldSpec::write`] on a constant, so after inlining each is the plain load, mask and shift
/// it would be written by hand: nothing walks a table at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    /// The field's name in its header's `layout` module (as in the specification).
    pub name: &'static str,
    /// Offset of the first byte, from the start of the header.
    pub offset: usize,
    /// Bytes that hold the field: 1, 2, 3, 4 or 8.
    pub len: usize,
    /// The field's bits within those bytes, read as one big-endian integer.
    pub mask: u64,
}

/// The bits of a `len`-byte integer.
const fn ones(len: usize) -> u64 {
    if len >= 8 {
        u64::MAX
    } else {
        (1 << (8 * len)) - 1
    }
}

impl FieldSpec {
    /// The field in bytes `start..end`, limited to the bits of `mask` (`u64::MAX`: all of them).
    ///
    /// Only called in constants, where a width other than 1, 2, 3, 4 or 8 bytes, or a mask with
    /// no bit inside them, fails the build.
    pub const fn new(name: &'static str, start: usize, end: usize, mask: u64) -> Self {
        let len = end - start;
        assert!(
            matches!(len, 1..=4 | 8),
            "a field spans 1, 2, 3, 4 or 8 bytes"
        );
        let mask = mask & ones(len);
        assert!(mask != 0, "a field has at least one bit");
        FieldSpec {
            name,
            offset: start,
            len,
            mask,
        }
    }

    /// Where the field's value starts: the number of bits below its mask.
    pub const fn shift(&self) -> u32 {
        self.mask.trailing_zeros()
    }

    /// The byte just past the field.
    pub const fn end(&self) -> usize {
        self.offset + self.len
    }

    /// Whether the field owns every bit of its bytes (no neighbour shares them).
    pub const fn is_whole(&self) -> bool {
        self.mask == ones(self.len)
    }

    #[inline]
    fn read_raw(&self, b: &[u8]) -> u64 {
        match self.len {
            1 => u64::from(b[0]),
            2 => u64::from(read_u16(b)),
            3 => u64::from(read_u24(b)),
            4 => u64::from(read_u32(b)),
            _ => read_u64(b),
        }
    }

    /// The field's value in `header` (the header's first byte at index 0).
    #[inline]
    pub fn read(&self, header: &[u8]) -> u64 {
        let raw = self.read_raw(&header[self.offset..self.end()]);
        (raw & self.mask) >> self.shift()
    }

    /// Stores the low bits of `value` in the field, leaving every other bit of `header` alone.
    #[inline]
    pub fn write(&self, header: &mut [u8], value: u64) {
        let b = &mut header[self.offset..self.offset + self.len];
        let bits = (value << self.shift()) & self.mask;
        let raw = if self.is_whole() {
            bits
        } else {
            (self.read_raw(b) & !self.mask) | bits
        };
        match self.len {
            1 => b[0] = raw as u8,
            2 => write_u16(b, raw as u16),
            3 => write_u24(b, raw as u32),
            4 => write_u32(b, raw as u32),
            _ => write_u64(b, raw),
        }
    }
}

/// What a field reads as: an integer, a flag, or a numbered enum (see
/// `numbered!` in `header.rs`). The conversions are the identity, a comparison, or the enum's
/// `From<u8>`.
pub trait FieldValue: Copy {
    /// The value of a field whose bits, shifted down, are `bits`.
    fn from_bits(bits: u64) -> Self;
    /// The bits that store `self`.
    fn into_bits(self) -> u64;
}

macro_rules! integer_values {
    ($($int:ty),*) => {$(
        impl FieldValue for $int {
            #[inline]
            fn from_bits(bits: u64) -> Self {
                // The mask of the field's spec bounds `bits` to the type's width.
                bits as $int
            }
            #[inline]
            fn into_bits(self) -> u64 {
                self.into()
            }
        }
    )*};
}
integer_values!(u8, u16, u32, u64);

impl FieldValue for bool {
    #[inline]
    fn from_bits(bits: u64) -> Self {
        bits != 0
    }
    #[inline]
    fn into_bits(self) -> u64 {
        self.into()
    }
}

/// Reads a 24-bit big-endian integer from the first three bytes.
#[inline]
pub fn read_u24(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

/// Writes the low 24 bits of `v` big-endian into the first three bytes.
#[inline]
pub fn write_u24(b: &mut [u8], v: u32) {
    b[0] = (v >> 16) as u8;
    b[1] = (v >> 8) as u8;
    b[2] = v as u8;
}

/// Reads a 16-bit big-endian integer from the first two bytes.
#[inline]
pub fn read_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Writes `v` big-endian into the first two bytes.
#[inline]
pub fn write_u16(b: &mut [u8], v: u16) {
    b[..2].copy_from_slice(&v.to_be_bytes());
}

/// Reads a 32-bit big-endian integer from the first four bytes.
#[inline]
pub fn read_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Writes `v` big-endian into the first four bytes.
#[inline]
pub fn write_u32(b: &mut [u8], v: u32) {
    b[..4].copy_from_slice(&v.to_be_bytes());
}

/// Reads a 64-bit big-endian integer from the first eight bytes.
#[inline]
pub fn read_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Writes `v` big-endian into the first eight bytes.
#[inline]
pub fn write_u64(b: &mut [u8], v: u64) {
    b[..8].copy_from_slice(&v.to_be_bytes());
}

/// Largest value a 24-bit field (VNI, VSID, SPI) can hold.
pub const U24_MAX: u32 = 0x00ff_ffff;

/// Fails with `field` unless `value` fits in 24 bits: what every `emit` checks of a VNI, VSID
/// or SPI rather than truncate it.
pub(crate) fn check_u24(field: &'static str, value: u32) -> crate::Result<()> {
    if value > U24_MAX {
        return Err(crate::Error::invalid(field, value.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORD: FieldSpec = FieldSpec::new("WORD", 1, 3, u64::MAX);
    const MID: FieldSpec = FieldSpec::new("MID", 1, 3, 0x0ff0);
    const LONG: FieldSpec = FieldSpec::new("LONG", 0, 8, u64::MAX);

    #[test]
    fn specs_read_and_write_only_their_bits() {
        let mut b = [0x11, 0x23, 0x45, 0x67, 0, 0, 0, 0];
        assert_eq!((WORD.len, WORD.mask, WORD.is_whole()), (2, 0xffff, true));
        assert_eq!(
            (WORD.read(&b), MID.read(&b), MID.shift()),
            (0x2345, 0x34, 4)
        );
        MID.write(&mut b, 0xabc); // the high nibble does not fit
        assert_eq!(b[..4], [0x11, 0x2b, 0xc5, 0x67]);
        WORD.write(&mut b, 0x1_beef);
        assert_eq!(b[..4], [0x11, 0xbe, 0xef, 0x67]);
        LONG.write(&mut b, u64::MAX - 1);
        assert_eq!((LONG.read(&b), LONG.end()), (u64::MAX - 1, 8));
        assert_eq!((bool::from_bits(4), u8::from_bits(0x1ff)), (true, 0xff));
        assert!(check_u24("vni", U24_MAX).is_ok() && check_u24("vni", 1 << 24).is_err());
    }
}
