//! Reassembly buffers, reused: one free list per size class (2 KiB to 64 KiB, powers of two).
//!
//! A frame takes a buffer of the smallest class that holds it and gives it back when it
//! completes or is dropped, so a steady mix of frame sizes stops allocating once every class
//! it uses has warmed up. Idle buffers are capped at `max_idle_bytes` (the reassembler passes
//! its `max_bytes`): past that a returned buffer is freed, so memory held idle stays bounded.

/// Smallest buffer handed out; smaller frames share it.
const MIN_CLASS: usize = 2048;
/// Classes 2 KiB, 4 KiB, … 64 KiB: the last holds the largest STT frame (65535 bytes).
const CLASSES: usize = 6;

/// Reusable frame buffers.
#[derive(Debug)]
pub struct Pool {
    free: [Vec<Vec<u8>>; CLASSES],
    idle_bytes: usize,
    max_idle_bytes: usize,
}

fn class_of(len: usize) -> usize {
    let mut class = 0;
    while class + 1 < CLASSES && (MIN_CLASS << class) < len {
        class += 1;
    }
    class
}

impl Pool {
    /// An empty pool keeping at most `max_idle_bytes` of idle buffers.
    pub fn new(max_idle_bytes: usize) -> Self {
        Pool {
            free: Default::default(),
            idle_bytes: 0,
            max_idle_bytes,
        }
    }

    /// A buffer of at least `len` bytes (contents unspecified), `len` ≤ 65536.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        let class = class_of(len);
        match self.free.get_mut(class).and_then(Vec::pop) {
            Some(buf) => {
                self.idle_bytes = self.idle_bytes.saturating_sub(buf.len());
                buf
            }
            None => vec![0; (MIN_CLASS << class).max(len)],
        }
    }

    /// Takes back a buffer from [`Self::take`], keeping it for reuse if the idle cap allows.
    pub fn give(&mut self, buf: Vec<u8>) {
        let size = buf.len();
        if size == 0 || self.idle_bytes + size > self.max_idle_bytes {
            return;
        }
        if let Some(list) = self.free.get_mut(class_of(size)) {
            self.idle_bytes += size;
            list.push(buf);
        }
    }

    /// Bytes held in idle buffers.
    #[cfg(test)]
    pub fn idle_bytes(&self) -> usize {
        self.idle_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_by_class_and_caps_idle_memory() {
        let mut pool = Pool::new(8192);
        let a = pool.take(100);
        assert_eq!(a.len(), 2048);
        let b = pool.take(65535);
        assert_eq!(b.len(), 65536);
        let a_ptr = a.as_ptr();
        pool.give(a);
        pool.give(b); // over the cap: freed
        assert_eq!(pool.idle_bytes(), 2048);
        let c = pool.take(2000);
        assert_eq!(c.as_ptr(), a_ptr);
        assert_eq!(pool.idle_bytes(), 0);
        assert_eq!(pool.take(2049).len(), 4096);
    }
}
