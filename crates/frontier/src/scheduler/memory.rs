//! The scheduler's memory bound: a host's tail written to disk as one chunk, heads evicted
//! when memory is full, and chunks read back in order.

use super::Scheduler;
use crate::entry::Entry;
use crate::spill::ChunkRef;

impl Scheduler {
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Changes how many entries memory holds (the memory governor's lever, at least 2): when
    /// lowered, the largest tails and then heads are written out at once; when raised, later
    /// admissions stay in memory. Chunks keep the size the first capacity gave them.
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(2);
        self.head_capacity = self.capacity / 2;
        if !self.hosts.is_empty() {
            self.enforce_capacity(0);
        }
    }

    /// Writes host `id`'s tail to disk as one chunk. On an I/O error the entries stay in
    /// memory (over capacity, but never lost) and the error is counted.
    pub(super) fn flush_tail(&mut self, id: u32) -> bool {
        let q = &mut self.hosts[id as usize];
        if q.tail.is_empty() {
            return false;
        }
        match self.spill.write(&q.tail) {
            Ok(chunk) => {
                let n = q.tail.len();
                q.tail.clear();
                q.chunks.push_back(chunk);
                q.spilled += n as u64;
                self.spilled += n as u64;
                self.tails -= n;
                true
            }
            Err(_) => {
                self.spill_errors += 1;
                false
            }
        }
    }

    /// Moves the newest part of host `id`'s head — `n` entries, at most a chunk's worth, so
    /// that a chunk read back is never larger than one written by the tails — back to the
    /// front of its disk backlog. (A capacity lowered at run time leaves many entries to
    /// evict: they go a chunk at a time, in order.)
    pub(super) fn evict_head(&mut self, id: u32, n: usize) -> bool {
        let chunk = self.chunk_size.max(1);
        let q = &mut self.hosts[id as usize];
        let n = n.min(q.head.len()).min(chunk);
        if n == 0 {
            return false;
        }
        let at = q.head.len() - n;
        let moved: Vec<Entry> = q.head.drain(at..).collect();
        match self.spill.write(&moved) {
            Ok(chunk) => {
                q.chunks.push_front(chunk);
                q.spilled += n as u64;
                self.spilled += n as u64;
                self.heads -= n;
                true
            }
            Err(_) => {
                q.head.extend(moved);
                self.spill_errors += 1;
                false
            }
        }
    }

    /// Restores `heads + tails ≤ capacity` by writing out the largest tails, then (only if no
    /// tail is left) parts of `preferred`'s head.
    ///
    /// Tails are written largest first until an eighth of the capacity is free again: one
    /// pass over the hosts with tails (a sort) pays for that many admissions. Writing only
    /// the one largest tail each time the capacity was passed cost a pass per admission —
    /// with 10^5 hosts over the capacity, 3,790 admissions/s instead of 10^5 (BENCHMARKS §6).
    pub(super) fn enforce_capacity(&mut self, preferred: u32) {
        while self.heads + self.tails > self.capacity || self.heads > self.head_capacity {
            if self.heads + self.tails > self.capacity {
                self.tail_hosts
                    .retain(|&h| !self.hosts[h as usize].tail.is_empty());
                if !self.tail_hosts.is_empty() {
                    let mut largest = self.tail_hosts.clone();
                    largest.sort_unstable_by_key(|&h| {
                        (std::cmp::Reverse(self.hosts[h as usize].tail.len()), h)
                    });
                    largest.dedup();
                    let target = self.capacity - self.capacity / 8;
                    for h in largest {
                        if self.heads + self.tails <= target {
                            break;
                        }
                        if !self.flush_tail(h) {
                            // The disk refuses: keep everything in memory.
                            self.max_memory = self.max_memory.max(self.heads + self.tails);
                            return;
                        }
                    }
                    continue;
                }
            }
            let excess = (self.heads + self.tails)
                .saturating_sub(self.capacity)
                .max(self.heads.saturating_sub(self.head_capacity));
            let victim = if self.hosts[preferred as usize].head.is_empty() {
                (0..self.hosts.len() as u32).max_by_key(|&h| self.hosts[h as usize].head.len())
            } else {
                Some(preferred)
            };
            match victim {
                Some(h) if self.evict_head(h, excess) => {}
                _ => break,
            }
        }
        self.max_memory = self.max_memory.max(self.heads + self.tails);
    }

    pub(super) fn load_chunk(&mut self, id: u32, chunk: ChunkRef) -> Option<Vec<Entry>> {
        match self.spill.take(chunk) {
            Ok(entries) => {
                let q = &mut self.hosts[id as usize];
                q.spilled -= entries.len() as u64;
                self.spilled -= entries.len() as u64;
                Some(entries)
            }
            Err(_) => {
                // Unreadable scratch space: there is nothing left to serve from this chunk.
                self.spill_errors += 1;
                let q = &mut self.hosts[id as usize];
                q.spilled -= u64::from(chunk.count);
                self.spilled -= u64::from(chunk.count);
                self.queued -= u64::from(chunk.count);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Order, Politeness};
    use crate::spill::Spill;

    #[test]
    fn a_capacity_lowered_at_run_time_spills_a_chunk_at_a_time_in_order() {
        let spill = Spill::new(None).unwrap();
        let mut s = Scheduler::new(4096, spill, Order::BreadthFirst, Politeness::default());
        for i in 0..3000u64 {
            let mut e = Entry::new(format!("http://a.test/{i}"), 0, None);
            e.id = i;
            s.push("a.test", e);
        }
        assert!(s.heads > 1000, "most of it in memory: {}", s.heads);
        s.set_capacity(2);
        assert!(s.heads + s.tails <= 2, "{} + {}", s.heads, s.tails);
        let id = s.ids["a.test"];
        let chunks = &s.hosts[id as usize].chunks;
        assert!(chunks.len() >= 3000 / 512);
        assert!(
            chunks.iter().all(|c| c.count as usize <= s.chunk_size),
            "no chunk larger than the tails write"
        );
        let mut order = Vec::new();
        while let Some(e) = s.pop(id) {
            order.push(e.id);
        }
        assert_eq!(order, (0..3000).collect::<Vec<_>>());
    }
}
