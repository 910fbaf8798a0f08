//! [`LocalFrontier::stats`]: the figures of a local frontier, read from its striped counters,
//! its scheduler and its recrawl schedule (each lock held only to copy its numbers).

use std::sync::atomic::Ordering;

use bloom::StripedCounter;

use super::sleeping::unix_now;
use super::LocalFrontier;
use crate::api::Stats;
use crate::scope::OutOfScope;

impl LocalFrontier {
    /// Counters, queue sizes and filter fill. `extra` holds `queued_memory`, `queued_disk`,
    /// `max_queued_memory`, `memory_capacity`, `spill_bytes`, `spill_errors`,
    /// `filter_slices`, `filter_bytes`, and the recrawl schedule's `scheduled` (URLs waiting to
    /// be due again), `next_due` (the earliest due time, Unix seconds; 0 with none) and
    /// `due_next_hour` (to the minute).
    pub fn stats(&self) -> Stats {
        let (q, capacity, sleeping, next_due, due_next_hour, groups) = {
            let s = self.sched();
            let sleeping = self.sleeping();
            let hour = sleeping.due_by(unix_now() + 3_600);
            (
                s.counts(),
                s.capacity(),
                sleeping.len(),
                sleeping.next_due(),
                hour,
                s.group_counts(),
            )
        };
        let [address_groups, shared, most, waiting] = groups;
        let out_of_scope = OutOfScope::ALL
            .iter()
            .map(|r| (*r, self.counters.out_of_scope[r.index()].sum()))
            .filter(|(_, n)| *n > 0)
            .collect();
        let duplicates = self.counters.duplicate.sum();
        let admitted = self.counters.admitted.sum();
        let rejected: u64 = self
            .counters
            .out_of_scope
            .iter()
            .map(StripedCounter::sum)
            .sum();
        Stats {
            offered: duplicates + admitted + rejected,
            admitted,
            duplicates,
            out_of_scope,
            queued: q.memory + q.disk,
            in_flight: q.in_flight,
            hosts: q.hosts,
            pages: self.pages.load(Ordering::Relaxed),
            filter_bits: self.filter.bit_size(),
            filter_bits_set: self.filter.bit_count(),
            filter_fpp: self.filter.expected_fpp(),
            extra: [
                ("queued_memory", q.memory),
                ("queued_disk", q.disk),
                ("max_queued_memory", q.max_memory),
                ("memory_capacity", capacity as u64),
                ("spill_bytes", q.spill_bytes),
                ("spill_errors", q.spill_errors),
                ("filter_slices", self.filter.slice_count() as u64),
                ("filter_bytes", self.filter.heap_bytes() as u64),
                ("scheduled", sleeping as u64),
                ("next_due", next_due.unwrap_or(0)),
                ("due_next_hour", due_next_hour),
                ("address_groups", address_groups),
                ("address_groups_shared", shared),
                ("address_group_hosts_max", most),
                ("address_waiting_hosts", waiting),
            ]
            .into_iter()
            .collect(),
        }
    }
}
