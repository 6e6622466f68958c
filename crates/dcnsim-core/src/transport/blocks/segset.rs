//! A set of packet indices kept as a window from the lowest missing one: what a sender or a
//! receiver of a long-lived flow needs to remember about which packets arrived, in memory that
//! follows the flight, not the flow's size (pFabric's and PASE's end hosts use it).

use std::collections::VecDeque;

/// A set of packet indices held as a window: every index below `base` is in the set, and
/// `flags[i]` says whether `base + i` is. Memory follows the span between the lowest missing
/// index and the highest flagged one (the flight), not the flow's size, so a long-lived flow
/// costs no more than a short one.
#[derive(Clone, Debug, Default)]
pub struct SegSet {
    base: u64,
    flags: VecDeque<bool>,
}

impl SegSet {
    /// The lowest index not in the set.
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Indices remembered individually above the base (the memory the set holds).
    pub fn held(&self) -> usize {
        self.flags.len()
    }
    pub fn has(&self, s: u64) -> bool {
        s < self.base || self.flags.get((s - self.base) as usize).copied().unwrap_or(false)
    }
    /// Add `s`; true if it was not in the set. Callers add only indices of packets in flight.
    pub fn insert(&mut self, s: u64) -> bool {
        if self.has(s) {
            return false;
        }
        let i = (s - self.base) as usize;
        if i >= self.flags.len() {
            self.flags.resize(i + 1, false);
        }
        self.flags[i] = true;
        while self.flags.front() == Some(&true) {
            self.flags.pop_front();
            self.base += 1;
        }
        true
    }
}
