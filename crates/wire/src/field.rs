//! Byte ranges of header fields, and the big-endian accessors every header shares.
//!
//! Accessors take slices that `check_len` has already proven long enough; they are the only place
//! that turns bytes into integers, so no header module repeats the shifting.

/// A range of bytes inside a header.
pub type Field = core::ops::Range<usize>;
/// From a byte offset to the end of the buffer.
pub type Rest = core::ops::RangeFrom<usize>;

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
