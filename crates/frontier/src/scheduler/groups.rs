//! Politeness per address: hosts on one address group ([`AddressKey`]) share
//! `politeness.ip_delay` (the gap between any two fetch starts to it) and `max_per_ip` (its
//! fetches in flight), on top of each host's own limits.
//!
//! The ready heap keeps its meaning, "hosts whose turn may come". A host whose turn comes
//! while its group holds it (full, or its gap not passed) waits in the group instead
//! (`parked`, in the group's FIFO), and one waiting host at most is the group's
//! representative on the heap, at the group's time: BUbiNG's workbench, where an address's
//! entry is ordered by the later of its own and its top host's time. So a group of 1,000
//! hosts costs the heap one entry, not 1,000 that wake together, and its hosts take turns.
//! A host is placed in a group by the fetcher that resolved it ([`Scheduler::place`]);
//! until then it is in none, and a host that moves takes its fetches in flight along.

use std::collections::{HashMap, VecDeque};

use tokio::time::Instant;

use super::Scheduler;
use crate::AddressKey;

/// One address group.
#[derive(Debug)]
pub(super) struct IpGroup {
    pub(super) key: AddressKey,
    /// Hosts placed in it.
    pub(super) members: u32,
    /// Fetches in flight to it (its hosts' leases out).
    pub(super) in_flight: u32,
    /// No fetch to it starts before then.
    pub(super) next_allowed: Instant,
    /// Hosts whose turn came while the group held them, in order.
    waiting: VecDeque<u32>,
    /// The waiting host on the ready heap for the group, if any.
    rep: Option<u32>,
}

/// The groups and their index by key.
#[derive(Debug, Default)]
pub(super) struct Groups {
    pub(super) all: Vec<IpGroup>,
    ids: HashMap<AddressKey, u32>,
}

impl Scheduler {
    /// Whether politeness per address is on.
    fn per_ip(&self) -> bool {
        !self.politeness.ip_delay.is_zero() || self.politeness.max_per_ip > 0
    }

    /// Whether group `g` can take no fetch at `now`: full, or its gap not passed.
    fn group_holds(&self, g: u32, now: Instant) -> bool {
        let grp = &self.groups.all[g as usize];
        self.group_full(g) || grp.next_allowed > now
    }

    fn group_full(&self, g: u32) -> bool {
        let max = self.politeness.max_per_ip;
        max > 0 && self.groups.all[g as usize].in_flight >= max
    }

    /// `host` is fetched at address group `key` (its fetcher resolved it): it joins the
    /// group, taking its fetches in flight along. Returns whether the lease of it in hand
    /// may be fetched now — a lease handed out under this group (`handed_in_group`) was
    /// counted by its rules; any other must be within the group's limit (itself counted)
    /// and gap —, and whether a waiting host was put on the heap (consumers should be
    /// woken). `false`: give the lease back.
    pub(crate) fn place(
        &mut self,
        host: &str,
        key: AddressKey,
        handed_in_group: bool,
        now: Instant,
    ) -> (bool, bool) {
        if !self.per_ip() {
            return (true, false);
        }
        let id = self.host_id(host);
        let g = match self.groups.ids.get(&key) {
            Some(&g) => g,
            None => {
                let g = self.groups.all.len() as u32;
                self.groups.all.push(IpGroup {
                    key,
                    members: 0,
                    in_flight: 0,
                    next_allowed: now,
                    waiting: VecDeque::new(),
                    rep: None,
                });
                self.groups.ids.insert(key, g);
                g
            }
        };
        let old = self.hosts[id as usize].group;
        if old == Some(g) && handed_in_group {
            return (true, false);
        }
        let mut woke = false;
        if old != Some(g) {
            if let Some(o) = old {
                woke = self.leave(id, o);
            }
            let in_flight = self.hosts[id as usize].in_flight;
            let grp = &mut self.groups.all[g as usize];
            grp.members += 1;
            grp.in_flight += in_flight;
            self.hosts[id as usize].group = Some(g);
            woke |= self.schedule(id);
        }
        let max = self.politeness.max_per_ip;
        let grp = &mut self.groups.all[g as usize];
        let go = (max == 0 || grp.in_flight <= max) && grp.next_allowed <= now;
        if go {
            grp.next_allowed = now + self.politeness.ip_delay;
        }
        (go, woke)
    }

    /// Host `id` leaves group `o` (it moved): its fetches in flight and its turn go with it.
    /// Returns whether a waiting host of `o` was put on the heap.
    fn leave(&mut self, id: u32, o: u32) -> bool {
        let in_flight = self.hosts[id as usize].in_flight;
        let parked = std::mem::take(&mut self.hosts[id as usize].parked);
        let grp = &mut self.groups.all[o as usize];
        grp.members = grp.members.saturating_sub(1);
        grp.in_flight = grp.in_flight.saturating_sub(in_flight);
        if parked {
            grp.waiting.retain(|&h| h != id);
        }
        if grp.rep == Some(id) {
            grp.rep = None;
        }
        self.hosts[id as usize].group = None;
        self.promote(o)
    }

    /// Host `id` left the heap other than through [`held_by_group`](Self::held_by_group)
    /// (emptied, handed out alone, blocked by an operator, its hand-out failed): if it was
    /// its group's representative, the next waiting host takes its place. Returns whether
    /// one was put on the heap.
    pub(super) fn release_rep(&mut self, id: u32) -> bool {
        let Some(g) = self.hosts[id as usize].group else {
            return false;
        };
        let grp = &mut self.groups.all[g as usize];
        if grp.rep == Some(id) {
            grp.rep = None;
        }
        self.promote(g)
    }

    /// Host `id`'s turn came at `now` (it is off the heap): whether its group holds it, in
    /// which case it waits in the group. Its group's representative, it no longer is.
    pub(super) fn held_by_group(&mut self, id: u32, now: Instant) -> bool {
        let Some(g) = self.hosts[id as usize].group else {
            return false;
        };
        let grp = &mut self.groups.all[g as usize];
        if grp.rep == Some(id) {
            grp.rep = None;
        }
        if !self.group_holds(g, now) {
            return false;
        }
        self.hosts[id as usize].parked = true;
        self.groups.all[g as usize].waiting.push_back(id);
        self.promote(g);
        true
    }

    /// Whether host `id` may be handed out at `now` as far as its group goes (for a lease of
    /// one host, which does not pass through the heap). A host waiting in its group that
    /// may go leaves the group's line: it is about to be handed out.
    pub(super) fn group_allows(&mut self, id: u32, now: Instant) -> bool {
        let Some(g) = self.hosts[id as usize].group else {
            return true;
        };
        if self.group_holds(g, now) {
            return false;
        }
        if std::mem::take(&mut self.hosts[id as usize].parked) {
            self.groups.all[g as usize].waiting.retain(|&h| h != id);
        }
        true
    }

    /// A fetch of host `id` was handed out at `now`: it counts in its group.
    pub(super) fn group_started(&mut self, id: u32, now: Instant) {
        if let Some(g) = self.hosts[id as usize].group {
            let grp = &mut self.groups.all[g as usize];
            grp.in_flight += 1;
            grp.next_allowed = grp.next_allowed.max(now + self.politeness.ip_delay);
            self.promote(g);
        }
    }

    /// A request to host `id`'s address started at `now` outside a hand-out (its
    /// robots.txt): the group's gap counts from it.
    pub(super) fn group_contacted(&mut self, id: u32, now: Instant) {
        if let Some(g) = self.hosts[id as usize].group {
            let grp = &mut self.groups.all[g as usize];
            grp.next_allowed = grp.next_allowed.max(now + self.politeness.ip_delay);
        }
    }

    /// A fetch of host `id` ended: its group has room again. Returns whether a waiting host
    /// was put on the heap (consumers should be woken).
    pub(super) fn group_done(&mut self, id: u32) -> bool {
        let Some(g) = self.hosts[id as usize].group else {
            return false;
        };
        let grp = &mut self.groups.all[g as usize];
        grp.in_flight = grp.in_flight.saturating_sub(1);
        self.promote(g)
    }

    /// Puts group `g`'s first waiting host that can take a fetch on the heap at the group's
    /// time, unless one is there already or the group is full. Returns whether it did.
    fn promote(&mut self, g: u32) -> bool {
        if self.groups.all[g as usize].rep.is_some() || self.group_full(g) {
            return false;
        }
        while let Some(id) = self.groups.all[g as usize].waiting.pop_front() {
            let q = &mut self.hosts[id as usize];
            q.parked = false;
            // Emptied, at its own limit, or moved meanwhile: it is scheduled again as its
            // own queue changes, and meets the group then.
            if q.group != Some(g) || q.is_idle(&self.politeness) || q.in_heap {
                continue;
            }
            let at = self.groups.all[g as usize].next_allowed;
            if q.ready_at() > at {
                // Its own time comes later (an operator's block): it waits for that off the
                // group's turn, and meets the group then.
                self.schedule(id);
                continue;
            }
            self.groups.all[g as usize].rep = Some(id);
            self.push_ready_at(id, at);
            return true;
        }
        false
    }

    /// Host `id`'s group as the listing shows it: its key, hosts and fetches in flight.
    pub(super) fn group_of(&self, id: u32) -> Option<(String, u32, u32)> {
        let g = self.hosts[id as usize].group?;
        let grp = &self.groups.all[g as usize];
        Some((grp.key.to_string(), grp.members, grp.in_flight))
    }

    /// The groups as metrics show them: how many, how many hold more than one host, the
    /// most hosts in one, and the hosts waiting for their group's turn.
    pub(crate) fn group_counts(&self) -> [u64; 4] {
        let all = &self.groups.all;
        let shared = all.iter().filter(|g| g.members > 1).count();
        let most = all.iter().map(|g| g.members).max().unwrap_or(0);
        let waiting: usize = all.iter().map(|g| g.waiting.len()).sum();
        [
            all.len() as u64,
            shared as u64,
            u64::from(most),
            waiting as u64,
        ]
    }
}
