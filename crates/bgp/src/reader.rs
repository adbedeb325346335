//! A bounds-checked cursor over untrusted bytes: every read either succeeds or returns
//! [`Error::Truncated`](crate::Error::Truncated), so no parser in this crate can index out of range.

use crate::{Error, Result};

#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(Error::truncated(what, n, self.buf.len()));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.buf)
    }

    pub(crate) fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u24(&mut self, what: &'static str) -> Result<u32> {
        let [a, b, c] = self.array(what)?;
        Ok(u32::from_be_bytes([0, a, b, c]))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }
}

/// Appends the low 24 bits of `value`.
pub(crate) fn put_u24(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_be_bytes()[1..]);
}

/// Overwrites a 2-byte big-endian length at `at`, which the caller reserved earlier.
pub(crate) fn patch_u16(out: &mut [u8], at: usize, value: u16) {
    if let Some(slot) = out.get_mut(at..at + 2) {
        slot.copy_from_slice(&value.to_be_bytes());
    }
}

/// The length of `out` after `start`, as a length field of at most `max`.
pub(crate) fn len_since(out: &[u8], start: usize, max: usize, what: &'static str) -> Result<u16> {
    let len = out.len().saturating_sub(start);
    if len > max {
        return Err(Error::Emit { what, value: len });
    }
    u16::try_from(len).map_err(|_| Error::Emit { what, value: len })
}
