//! Which bytes of an STT frame have arrived: a short sorted list of disjoint byte ranges,
//! adjacent ranges merged, in a fixed array so that tracking never allocates.
//!
//! In-order segments keep a single range; each hole left by reordering or loss costs one more.
//! [`MAX_SPANS`] bounds the holes a frame may have at once, which also bounds the work an
//! attacker can cause per segment (one binary search and a shift of at most that many ranges).

/// Most disjoint ranges one frame may have at once. A 64 KiB frame over a 1500-byte underlay
/// has 47 segments, so even a complete reversal stays within the limit.
pub const MAX_SPANS: usize = 64;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

/// Where a new range `[start, end)` falls against what has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Entirely inside one received range: a duplicate if the bytes are the same.
    Covered,
    /// Partly over received bytes.
    Overlap,
    /// Only over bytes still missing; insert before range `at`.
    Missing { at: usize },
}

/// The received ranges of one frame.
#[derive(Debug, Clone)]
pub struct Coverage {
    spans: [Span; MAX_SPANS],
    len: usize,
}

impl Default for Coverage {
    fn default() -> Self {
        Coverage {
            spans: [Span::default(); MAX_SPANS],
            len: 0,
        }
    }
}

impl Coverage {
    /// Forgets every range (the slot starts a new frame).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    fn spans(&self) -> &[Span] {
        self.spans.get(..self.len).unwrap_or(&[])
    }

    /// Whether `[0, frame_len)` has arrived, in one range.
    pub fn complete(&self, frame_len: u32) -> bool {
        self.spans()
            == [Span {
                start: 0,
                end: frame_len,
            }]
    }

    /// Classifies the non-empty range `[start, end)`.
    pub fn place(&self, start: u32, end: u32) -> Place {
        let spans = self.spans();
        // Ranges before `at` start before `start`; the one at `at` starts at or after it.
        let at = spans.partition_point(|s| s.start < start);
        let before = at.checked_sub(1).and_then(|i| spans.get(i));
        let after = spans.get(at);
        let covered_by = |s: &Span| s.start <= start && end <= s.end;
        if before.is_some_and(covered_by) || after.is_some_and(covered_by) {
            return Place::Covered;
        }
        if before.is_some_and(|s| s.end > start) || after.is_some_and(|s| s.start < end) {
            return Place::Overlap;
        }
        Place::Missing { at }
    }

    /// Records `[start, end)`, which [`Self::place`] found `Missing { at }`, merging it with
    /// the ranges it touches. Returns false, recording nothing, when it would be one range too
    /// many.
    pub fn insert(&mut self, start: u32, end: u32, at: usize) -> bool {
        let len = self.len;
        if at > len {
            return false;
        }
        let joins_before = at > 0 && self.spans.get(at - 1).is_some_and(|s| s.end == start);
        let joins_after = at < len && self.spans.get(at).is_some_and(|s| s.start == end);
        match (joins_before, joins_after) {
            (true, true) => {
                let after_end = self.spans[at].end;
                self.spans[at - 1].end = after_end;
                self.spans.copy_within(at + 1..len, at);
                self.len -= 1;
            }
            (true, false) => self.spans[at - 1].end = end,
            (false, true) => self.spans[at].start = start,
            (false, false) => {
                if len == MAX_SPANS {
                    return false;
                }
                self.spans.copy_within(at..len, at + 1);
                self.spans[at] = Span { start, end };
                self.len += 1;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(c: &mut Coverage, start: u32, end: u32) -> bool {
        match c.place(start, end) {
            Place::Missing { at } => c.insert(start, end, at),
            other => panic!("{start}..{end} is {other:?}"),
        }
    }

    #[test]
    fn merges_in_any_order() {
        let mut c = Coverage::default();
        assert!(add(&mut c, 20, 30));
        assert!(add(&mut c, 0, 10));
        assert!(!c.complete(30));
        assert!(add(&mut c, 10, 20));
        assert!(c.complete(30));
        assert!(!c.complete(31));
    }

    #[test]
    fn classifies_duplicates_and_overlaps() {
        let mut c = Coverage::default();
        add(&mut c, 10, 20);
        add(&mut c, 30, 40);
        assert_eq!(c.place(10, 20), Place::Covered);
        assert_eq!(c.place(12, 15), Place::Covered);
        assert_eq!(c.place(5, 11), Place::Overlap);
        assert_eq!(c.place(19, 25), Place::Overlap);
        assert_eq!(c.place(20, 31), Place::Overlap);
        assert_eq!(c.place(0, 50), Place::Overlap);
        assert_eq!(c.place(20, 30), Place::Missing { at: 1 });
        assert_eq!(c.place(0, 10), Place::Missing { at: 0 });
        assert_eq!(c.place(40, 41), Place::Missing { at: 2 });
    }

    #[test]
    fn refuses_one_hole_too_many() {
        let mut c = Coverage::default();
        for i in 0..MAX_SPANS as u32 {
            assert!(add(&mut c, i * 2, i * 2 + 1));
        }
        let last = MAX_SPANS as u32 * 2;
        assert!(!add(&mut c, last + 1, last + 2));
        // Filling a hole still works: it merges rather than adding a range.
        assert!(add(&mut c, 1, 2));
    }
}
