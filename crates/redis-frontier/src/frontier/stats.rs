//! The crawl's figures for `Frontier::stats`: the counters the scripts keep, read in one
//! pipeline per partition (a scrape runs no script unless a recrawl schedule asks for its figures), plus
//! what only this process knows (offers its near cache answered, leases it lost).

use std::sync::atomic::Ordering;

use frontier::{FrontierError, OutOfScope, Stats};

use super::Shared;

/// One partition's counters, leases out, hosts and visited bits set.
type PartFigures = (Vec<(String, i64)>, u64, u64, u64);

impl Shared {
    /// Partition `p`'s figures, in one pipeline.
    async fn part_figures(&self, p: usize) -> Result<PartFigures, FrontierError> {
        let p = self.prefix(p);
        redis::pipe()
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
            .map_err(|e| self.failed(e))
    }

    /// The crawl's figures: every partition's summed (asked together); the filter's FPP is
    /// the worst partition's.
    pub(super) async fn stats(&self) -> Result<Stats, FrontierError> {
        let figures =
            super::parts::join_all((0..self.parts()).map(|p| self.part_figures(p)).collect()).await;
        let mut counters: std::collections::HashMap<String, i64> = Default::default();
        let (mut leases, mut hosts, mut set, mut worst) = (0u64, 0u64, 0u64, 0f64);
        let part_bits = self.parts[0].bit_size();
        for f in figures {
            let (c, l, h, s) = f?;
            for (k, v) in c {
                let n = counters.entry(k.clone()).or_default();
                // A group lives in one partition: the most hosts of any is the largest.
                if k == "ip_group_hosts_max" {
                    *n = (*n).max(v);
                } else {
                    *n += v;
                }
            }
            leases += l;
            hosts += h;
            set += s;
            worst = worst.max(s as f64 / part_bits.max(1) as f64);
        }
        let get = |k: &str| {
            counters
                .get(k)
                .map_or(0, |v| u64::try_from(*v).unwrap_or(0))
        };
        let out_of_scope = OutOfScope::ALL
            .iter()
            .map(|r| (*r, get(&format!("oos:{}", r.name()))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let bits = part_bits * self.parts() as u64;
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
            filter_fpp: worst.powi(self.parts[0].hashes() as i32),
            extra: Default::default(),
        };
        let pending = self.near_dups.load(Ordering::Relaxed);
        stats.offered += pending;
        stats.duplicates += pending;
        stats.extra.insert("leases_expired", get("expired"));
        if self.conn.is_cluster() {
            stats
                .extra
                .insert("wait_skipped", self.wait_skipped.load(Ordering::Relaxed));
            stats
                .extra
                .insert("wait_retried", self.wait_retried.load(Ordering::Relaxed));
        }
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
            let (mut scheduled, mut next_due, mut hour) = (0u64, 0u64, 0u64);
            for p in 0..self.parts() {
                let (n, due, h): (u64, u64, u64) = self
                    .invoke_on(p, &self.scripts.schedule)
                    .invoke_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| self.failed(e))?;
                scheduled += n;
                hour += h;
                if due > 0 && (next_due == 0 || due < next_due) {
                    next_due = due;
                }
            }
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
