//! Intrusive doubly linked lists over slot indices, for the reassembler's two orders: least
//! recently touched first (eviction) and oldest first (expiry). Links live in a slice parallel
//! to the slots, so moving a frame to the back of a list is O(1) and never allocates.

const NIL: u32 = u32::MAX;

/// One slot's neighbours in one list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Links {
    prev: u32,
    next: u32,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            prev: NIL,
            next: NIL,
        }
    }
}

/// A list of slot indices; the links are passed in by the owner.
#[derive(Debug, Clone, Copy)]
pub struct List {
    head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
        }
    }
}

impl List {
    /// The first slot (least recently touched or oldest).
    pub fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head as usize)
    }

    /// Appends slot `i`, which must not be on the list.
    pub fn push_back(&mut self, links: &mut [Links], i: usize) {
        let Ok(index) = u32::try_from(i) else {
            return;
        };
        if let Some(l) = links.get_mut(i) {
            *l = Links {
                prev: self.tail,
                next: NIL,
            };
        }
        match links.get_mut(self.tail as usize) {
            Some(tail) if self.tail != NIL => tail.next = index,
            _ => self.head = index,
        }
        self.tail = index;
    }

    /// Unlinks slot `i`, which must be on the list.
    pub fn remove(&mut self, links: &mut [Links], i: usize) {
        let Some(&Links { prev, next }) = links.get(i) else {
            return;
        };
        match links.get_mut(prev as usize) {
            Some(p) if prev != NIL => p.next = next,
            _ => self.head = next,
        }
        match links.get_mut(next as usize) {
            Some(n) if next != NIL => n.prev = prev,
            _ => self.tail = prev,
        }
        if let Some(l) = links.get_mut(i) {
            *l = Links::default();
        }
    }

    /// Moves slot `i`, which must be on the list, to the back.
    pub fn move_to_back(&mut self, links: &mut [Links], i: usize) {
        if self.tail as usize != i {
            self.remove(links, i);
            self.push_back(links, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(list: &mut List, links: &mut [Links]) -> Vec<usize> {
        let mut out = Vec::new();
        while let Some(i) = list.front() {
            list.remove(links, i);
            out.push(i);
        }
        out
    }

    #[test]
    fn keeps_order_through_moves_and_removals() {
        let mut links = vec![Links::default(); 5];
        let mut list = List::default();
        for i in 0..5 {
            list.push_back(&mut links, i);
        }
        list.move_to_back(&mut links, 0);
        list.move_to_back(&mut links, 2);
        list.remove(&mut links, 3);
        list.move_to_back(&mut links, 2);
        assert_eq!(drain(&mut list, &mut links), [1, 4, 0, 2]);
        assert_eq!(list.front(), None);
        list.push_back(&mut links, 3);
        assert_eq!(drain(&mut list, &mut links), [3]);
    }
}
