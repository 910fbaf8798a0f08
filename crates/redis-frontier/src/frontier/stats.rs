//! The crawl's figures for `Frontier::stats`: the counters the scripts keep, read in one
//! pipeline (a scrape runs no script unless a recrawl schedule asks for its figures), plus
//! what only this process knows (offers its near cache answered, leases it lost).

use std::sync::atomic::Ordering;

use frontier::{FrontierError, OutOfScope, Stats};

use super::Shared;

impl Shared {
    pub(super) async fn stats(&self) -> Result<Stats, FrontierError> {
        let p = self.visited.prefix();
        let (counters, leases, hosts, set): (Vec<(String, i64)>, u64, u64, u64) = redis::pipe()
            .cmd("HGETALL")
            .arg(format!("{p}stats"))
            .cmd("ZCARD")
            .arg(format!("{p}leases"))
            .cmd("SCARD")
            .arg(format!("{p}hosts"))
            .cmd("BITCOUNT")
            .arg(format!("{p}visited"))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let get = |k: &str| {
            counters
                .iter()
                .find(|(n, _)| n == k)
                .map_or(0, |(_, v)| u64::try_from(*v).unwrap_or(0))
        };
        let out_of_scope = OutOfScope::ALL
            .iter()
            .map(|r| (*r, get(&format!("oos:{}", r.name()))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let bits = self.visited.bit_size();
        let fill = set as f64 / bits.max(1) as f64;
        let mut stats = Stats {
            offered: get("offered"),
            admitted: get("admitted"),
            duplicates: get("duplicates"),
            out_of_scope,
            queued: get("queued"),
            in_flight: leases,
            hosts,
            pages: get("pages"),
            filter_bits: bits,
            filter_bits_set: set,
            filter_fpp: fill.powi(self.visited.hashes() as i32),
            extra: Default::default(),
        };
        let pending = self.near_dups.load(Ordering::Relaxed);
        stats.offered += pending;
        stats.duplicates += pending;
        stats.extra.insert("leases_expired", get("expired"));
        // Address groups (politeness per address), as the local scheduler counts them.
        for (ours, theirs) in [
            ("address_groups", "ip_groups"),
            ("address_groups_shared", "ip_groups_shared"),
            ("address_group_hosts_max", "ip_group_hosts_max"),
            ("address_waiting_hosts", "ip_waiting"),
        ] {
            stats.extra.insert(ours, get(theirs));
        }
        if self.cfg.recrawl.schedule != recrawl::Schedule::None {
            let (scheduled, next_due, hour): (u64, u64, u64) = self
                .invoke(&self.scripts.schedule)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            stats.extra.insert("scheduled", scheduled);
            stats.extra.insert("next_due", next_due);
            stats.extra.insert("due_next_hour", hour);
        } else {
            // Only URLs a client gave a date sleep: the counter alone, no script.
            stats.extra.insert("scheduled", get("scheduled"));
        }
        stats
            .extra
            .insert("leases_lost_here", self.lost.load(Ordering::Relaxed));
        Ok(stats)
    }
}
