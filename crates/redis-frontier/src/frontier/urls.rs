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

    /// The lengths of the lists `keys`, in order.
    async fn lengths(&self, keys: &[String]) -> Result<Vec<u64>, FrontierError> {
        let mut out = Vec::with_capacity(keys.len());
        for group in keys.chunks(LENGTHS_AT_ONCE) {
            let mut pipe = redis::pipe();
            for k in group {
                pipe.cmd("LLEN").arg(k);
            }
            let lens: Vec<u64> = pipe
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            out.extend(lens);
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
        let mut call = self.invoke(&self.scripts.recrawl);
        call.arg(at.unwrap_or(0));
        for u in &urls {
            let (bucket, field) = self.due_index(frontier::fingerprint(u.as_str()));
            call.arg(bucket).arg(field.as_slice()).arg(u.as_str());
        }
        let moved: Vec<i64> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let mut pipe = redis::pipe();
        for u in &urls {
            let mut cmd = redis::cmd("BITFIELD_RO");
            cmd.arg(self.visited.bits_key());
            for i in self.visited.indices(u.as_str()) {
                cmd.arg("GET").arg("u1").arg(i);
            }
            pipe.add_command(cmd);
        }
        let bits: Vec<Vec<i64>> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        self.wake.notify_waiters();
        Ok(moved
            .iter()
            .zip(&bits)
            .map(|(m, b)| match (m, b.iter().all(|x| *x == 1)) {
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
        let seconds: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{}duez", self.visited.prefix()))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let mut dropped = 0;
        for second in seconds {
            let mut call = self.invoke(&self.scripts.drop_asleep);
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
    /// or only in the visited set — asked first: a URL it never saw is in no queue.
    pub(super) async fn find_url(&self, url: &Url, key: &str) -> Result<Found, FrontierError> {
        let mut cmd = redis::cmd("BITFIELD_RO");
        cmd.arg(self.visited.bits_key());
        for i in self.visited.indices(url.as_str()) {
            cmd.arg("GET").arg("u1").arg(i);
        }
        let bits: Vec<i64> = cmd
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        if !bits.iter().all(|b| *b == 1) {
            return Ok(Found::Unseen);
        }
        let p = self.visited.prefix();
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
        if let Some(entry) = found {
            return Ok(Found::Asleep(entry));
        }
        self.read_list(&format!("{p}q:{key}"), |el| {
            found = queued(el).filter(|e| e.url == url.as_str());
            found.is_none()
        })
        .await?;
        Ok(match found {
            Some(entry) => Found::Queued(entry),
            None => Found::Seen,
        })
    }

    /// A page of the URLs queued (each queue in key order) then asleep (earliest second
    /// first).
    pub(super) async fn list_urls(&self, query: &UrlQuery) -> Result<UrlPage, FrontierError> {
        let p = self.visited.prefix();
        let mut pager = Pager::new(query);
        let mut keys: Vec<String> = match &query.key {
            Some(k) => vec![k.clone()],
            None => redis::cmd("SMEMBERS")
                .arg(format!("{p}hosts"))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?,
        };
        keys.sort_unstable();
        let lists: Vec<String> = keys.iter().map(|k| format!("{p}q:{k}")).collect();
        let lens = self.lengths(&lists).await?;
        for ((key, list), n) in keys.iter().zip(&lists).zip(lens) {
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
        let seconds: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{p}duez"))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let lists: Vec<String> = seconds.iter().map(|s| format!("{p}due:{s}")).collect();
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
