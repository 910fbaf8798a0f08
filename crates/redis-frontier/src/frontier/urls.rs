//! The shared frontier's work on single URLs — an operator's recrawl, a deleted queue's
//! asleep URLs — and its answers about them ([`frontier::Found`], [`UrlPage`]): read
//! from the queue lists (`q:KEY`) and the due lists (`due:SECOND`, elements `KEY\nENTRY`) a
//! page of [`READ_AT_ONCE`] elements per call, nothing moved. Without a filter a listing
//! reads the lists' lengths first and passes over whole lists before its page.

use frontier::{Entry, Found, FrontierError, Pager, Recrawled, UrlPage, UrlQuery};
use url::Url;

use super::Shared;

/// Elements read per LRANGE.
const READ_AT_ONCE: usize = 1000;

/// Lengths asked per pipeline.
const LENGTHS_AT_ONCE: usize = 1000;

/// The entry of a queue list's element.
fn queued(element: &[u8]) -> Option<Entry> {
    Entry::decode_all(element, 1).and_then(|mut v| v.pop())
}

/// The queue key and entry of a due list's element.
fn asleep(element: &[u8]) -> Option<(String, Entry)> {
    let nl = element.iter().position(|b| *b == b'\n')?;
    let key = std::str::from_utf8(&element[..nl]).ok()?.to_owned();
    Some((key, queued(&element[nl + 1..])?))
}

impl Shared {
    /// Calls `f` with each element of the list `key`, in order, until it answers `false`.
    async fn read_list(
        &self,
        key: &str,
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<(), FrontierError> {
        let mut conn = self.conn.clone();
        let mut start = 0usize;
        loop {
            let page: Vec<Vec<u8>> = redis::cmd("LRANGE")
                .arg(key)
                .arg(start)
                .arg(start + READ_AT_ONCE - 1)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.failed(e))?;
            if !page.iter().all(|el| f(el)) || page.len() < READ_AT_ONCE {
                return Ok(());
            }
            start += READ_AT_ONCE;
        }
    }

    /// The lengths of the lists `keys`, in order: one pipeline per hash tag (a partition;
    /// a cluster refuses a pipeline across slots) and [`LENGTHS_AT_ONCE`] keys.
    async fn lengths(&self, keys: &[String]) -> Result<Vec<u64>, FrontierError> {
        let tag = |k: &str| k.split('}').next().unwrap_or_default().to_owned();
        let mut by_tag: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (i, k) in keys.iter().enumerate() {
            by_tag.entry(tag(k)).or_default().push(i);
        }
        let mut out = vec![0; keys.len()];
        for indices in by_tag.values() {
            for group in indices.chunks(LENGTHS_AT_ONCE) {
                let mut pipe = redis::pipe();
                for i in group {
                    pipe.cmd("LLEN").arg(&keys[*i]);
                }
                let lens: Vec<u64> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| self.failed(e))?;
                for (i, n) in group.iter().zip(lens) {
                    out[*i] = n;
                }
            }
        }
        Ok(out)
    }

    /// An operator's recrawl (see [`Frontier::recrawl`]): sleeping URLs are moved in Redis;
    /// the others are told apart by the visited set (queued or in flight, or never seen).
    pub(super) async fn recrawl(
        &self,
        urls: Vec<Url>,
        at: Option<u64>,
    ) -> Result<Vec<Recrawled>, FrontierError> {
        // Without a schedule only URLs a client gave a date sleep; they move all the same.
        // A URL is looked for in every partition: one queued under a client's key is in
        // that key's partition, not its host's.
        let mut moved = vec![0i64; urls.len()];
        let mut seen = vec![false; urls.len()];
        for p in 0..self.parts() {
            let mut call = self.invoke_on(p, &self.scripts.recrawl);
            call.arg(at.unwrap_or(0));
            for u in &urls {
                let (bucket, field) = self.due_index(frontier::fingerprint(u.as_str()));
                call.arg(bucket).arg(field.as_slice()).arg(u.as_str());
            }
            let here: Vec<i64> = call
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            for (m, h) in moved.iter_mut().zip(here) {
                *m = (*m).max(h);
            }
            let visited = &self.parts[p];
            let mut pipe = redis::pipe();
            for u in &urls {
                let mut cmd = redis::cmd("BITFIELD_RO");
                cmd.arg(visited.bits_key());
                for i in visited.indices(u.as_str()) {
                    cmd.arg("GET").arg("u1").arg(i);
                }
                pipe.add_command(cmd);
            }
            let bits: Vec<Vec<i64>> = pipe
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            for (s, b) in seen.iter_mut().zip(&bits) {
                *s |= b.iter().all(|x| *x == 1);
            }
        }
        self.wake.notify_waiters();
        Ok(moved
            .iter()
            .zip(&seen)
            .map(|(m, seen)| match (m, seen) {
                (1, _) => Recrawled::Scheduled,
                (_, true) => Recrawled::Queued,
                _ => Recrawled::NeverSeen,
            })
            .collect())
    }

    /// Drops every URL of the queue `key` asleep until a date — admitted before `cutoff`
    /// only, when given ([`frontier::Entry::purge_cutoff`]) — one due list per call: how
    /// many.
    pub(super) async fn drop_asleep(
        &self,
        key: &str,
        cutoff: Option<u32>,
    ) -> Result<u64, FrontierError> {
        let p = self.part_of(key);
        let seconds: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{}duez", self.prefix(p)))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let mut dropped = 0;
        for second in seconds {
            let mut call = self.invoke_on(p, &self.scripts.drop_asleep);
            call.arg(key).arg(second).arg(cutoff.unwrap_or(0));
            let n: u64 = call
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            dropped += n;
        }
        Ok(dropped)
    }

    /// Where the canonical `url` is: asleep (found by the `dueat` index), queued for `key`,
    /// or only in the visited set — asked first: a URL it never saw is in no queue. With
    /// several partitions, `key`'s is asked first, then the URL's host's, then the others (a
    /// URL asleep is found whatever key is asked; one a client keyed is in its key's).
    pub(super) async fn find_url(&self, url: &Url, key: &str) -> Result<Found, FrontierError> {
        let own = self.part_of(key);
        let mut order = vec![own];
        let host = self.part_of(frontier::host_key(url));
        if host != own {
            order.push(host);
        }
        order.extend((0..self.parts()).filter(|p| *p != own && *p != host));
        let mut seen = false;
        for part in order {
            if !self.seen_in(part, url).await? {
                continue;
            }
            seen = true;
            if let Some(entry) = self.asleep_in(part, url).await? {
                return Ok(Found::Asleep(entry));
            }
            if part == own {
                let mut found = None;
                self.read_list(&format!("{}q:{key}", self.prefix(part)), |el| {
                    found = queued(el).filter(|e| e.url == url.as_str());
                    found.is_none()
                })
                .await?;
                if let Some(entry) = found {
                    return Ok(Found::Queued(entry));
                }
            }
        }
        Ok(if seen { Found::Seen } else { Found::Unseen })
    }

    /// Whether partition `part`'s visited set has `url`.
    async fn seen_in(&self, part: usize, url: &Url) -> Result<bool, FrontierError> {
        let visited = &self.parts[part];
        let mut cmd = redis::cmd("BITFIELD_RO");
        cmd.arg(visited.bits_key());
        for i in visited.indices(url.as_str()) {
            cmd.arg("GET").arg("u1").arg(i);
        }
        let bits: Vec<i64> = cmd
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        Ok(bits.iter().all(|b| *b == 1))
    }

    /// `url`'s entry when it sleeps in partition `part` (found by the `dueat` index).
    async fn asleep_in(&self, part: usize, url: &Url) -> Result<Option<Entry>, FrontierError> {
        let p = self.prefix(part);
        let (bucket, field) = self.due_index(frontier::fingerprint(url.as_str()));
        let second: Option<String> = redis::cmd("HGET")
            .arg(format!("{p}dueat:{bucket}"))
            .arg(&field[..])
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let mut found = None;
        if let Some(second) = second {
            self.read_list(&format!("{p}due:{second}"), |el| {
                found = asleep(el).map(|(_, e)| e).filter(|e| e.url == url.as_str());
                found.is_none()
            })
            .await?;
        }
        Ok(found)
    }

    /// A page of the URLs queued (each queue in key order) then asleep (earliest second
    /// first), over every partition.
    pub(super) async fn list_urls(&self, query: &UrlQuery) -> Result<UrlPage, FrontierError> {
        let mut pager = Pager::new(query);
        // Every queue as (key, its list), in key order.
        let mut queues: Vec<(String, String)> = Vec::new();
        match &query.key {
            Some(k) => queues.push((k.clone(), format!("{}q:{k}", self.prefix(self.part_of(k))))),
            None => {
                for p in 0..self.parts() {
                    let prefix = self.prefix(p);
                    let keys: Vec<String> = redis::cmd("SMEMBERS")
                        .arg(format!("{prefix}hosts"))
                        .query_async(&mut self.conn.clone())
                        .await
                        .map_err(|e| self.failed(e))?;
                    queues.extend(keys.into_iter().map(|k| {
                        let list = format!("{prefix}q:{k}");
                        (k, list)
                    }));
                }
            }
        }
        queues.sort_unstable();
        let lists: Vec<String> = queues.iter().map(|(_, l)| l.clone()).collect();
        let lens = self.lengths(&lists).await?;
        for ((key, list), n) in queues.iter().zip(lens) {
            if !pager.must_read(n) {
                pager.count(n);
                continue;
            }
            self.read_list(list, |el| {
                if let Some(e) = queued(el) {
                    pager.push(key, &e, false);
                }
                true
            })
            .await?;
        }
        // Every due list as (second, its list), earliest first.
        let mut due: Vec<(u64, String)> = Vec::new();
        for p in 0..self.parts() {
            let prefix = self.prefix(p);
            let seconds: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("{prefix}duez"))
                .arg(0)
                .arg(-1)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            due.extend(
                seconds
                    .into_iter()
                    .map(|s| (s.parse().unwrap_or(u64::MAX), format!("{prefix}due:{s}"))),
            );
        }
        due.sort_unstable();
        let lists: Vec<String> = due.into_iter().map(|(_, l)| l).collect();
        // A list mixes queues: with one asked for, every list is read.
        let lens = match query.key {
            Some(_) => vec![u64::MAX; lists.len()],
            None => self.lengths(&lists).await?,
        };
        for (list, n) in lists.iter().zip(lens) {
            if n != u64::MAX && !pager.must_read(n) {
                pager.count(n);
                continue;
            }
            self.read_list(list, |el| {
                if let Some((key, e)) = asleep(el) {
                    if pager.wants_key(&key) {
                        pager.push(&key, &e, true);
                    }
                }
                true
            })
            .await?;
        }
        Ok(pager.finish())
    }
}
