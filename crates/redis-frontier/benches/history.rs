//! What a URL's fetch history (the recrawl codec, `crates/recrawl`) costs in Redis in the
//! layout the recrawl design plans for it: hashes `crawl:{ID}:hist:<b>`, `b` = the URL's
//! fingerprint's low 64 bits mod B (B = the power of two nearest above `urls / 256`, so a bucket
//! holds about 256 fields and stays in the compact listpack encoding, whose limits are 512
//! fields and 64-byte values), field = 6 bytes of the fingerprint's high 64 bits (with the
//! bucket's bits, 60 of the fingerprint tell URLs apart), value = the codec's bytes (37 + the
//! ETag's stored form); spilled ETags in hashes bucketed the same way.
//!
//! `cargo bench -p redis-frontier --bench history -- [--urls N]`
//!
//! For each ETag mix — none, nginx's (`"5c11a604-eba"`), Apache's (`"2aa6-531e1d5a8d440"`),
//! and a mix with S3's, weak and opaque tags — the server's `used_memory` before and after, per
//! URL, with the buckets' encodings and the largest bucket.

use recrawl::{Etag, History};
use test_support::redis_server::RedisServer;

mod common;
use common::arg;

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// URL `i`'s ETag header under `mix`.
fn etag(mix: &str, i: u64) -> Option<String> {
    let r = splitmix(i ^ 0xe7a6);
    let nginx = format!("\"{:x}-{:x}\"", 0x5c00_0000 + (r & 0xff_ffff), r >> 52);
    let apache = format!("\"{:x}-{:x}\"", r & 0xffff, r >> 12);
    match mix {
        "none" => None,
        "nginx" => Some(nginx),
        "apache" => Some(apache),
        // 20% none, 30% nginx, 20% Apache, 10% weak nginx, 10% S3's (an MD5), 10% an opaque
        // 30-character tag that is not hex (it spills).
        _ => Some(match r % 10 {
            0 | 1 => return None,
            2..=4 => nginx,
            5 | 6 => apache,
            7 => format!("W/{nginx}"),
            8 => format!("\"{:016x}{:016x}\"", splitmix(r), splitmix(!r)),
            _ => format!("\"x{:016x}{:013x}\"", splitmix(r), r >> 12),
        }),
    }
}

fn used_memory(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn main() {
    let urls = arg("--urls", 1_000_000);
    let Some(server) = RedisServer::for_test(&[]) else {
        eprintln!("no redis-server: install it (scripts/test.sh does)");
        std::process::exit(1);
    };
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let buckets = (urls / 256).max(1).next_power_of_two();
    println!(
        "{urls} URLs in {buckets} hashes (about {} fields each)",
        urls / buckets
    );
    println!("| ETags | value B (mean) | spilled | used_memory B/URL | encodings | largest hash |");
    println!("|---|---|---|---|---|---|");
    for mix in ["none", "nginx", "apache", "mix"] {
        let _: () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
        let before = used_memory(&mut conn);
        let (mut value_bytes, mut spilled) = (0u64, 0u64);
        let mut pipe = redis::pipe();
        for i in 0..urls {
            let (hi, lo) = (splitmix(i), splitmix(i ^ 0x5555_5555));
            let h = History {
                status: 200,
                last_fetch: 1_795_000_000 + (i % 86_400) as u32,
                interval: 86_400,
                last_modified: Some(1_790_000_000 + (hi % 1_000_000) as u32),
                captured_at: (1_795_000_000, (lo % 1000) as u16),
                digest: lo.to_le_bytes(),
                body_bytes: (lo % 200_000) as u32,
                fetches: 3,
                changes: 1,
                etag: etag(mix, i).and_then(|e| Etag::from_header(&e)),
                ..History::default()
            };
            let e = h.encode();
            value_bytes += e.value.len() as u64;
            let key = format!("crawl:{{bench}}:hist:{}", lo % buckets);
            let field = &hi.to_le_bytes()[..6];
            pipe.cmd("HSET").arg(key).arg(field).arg(e.value).ignore();
            if let Some(s) = e.spill {
                spilled += 1;
                let key = format!("crawl:{{bench}}:etag:{}", lo % buckets);
                pipe.cmd("HSET").arg(key).arg(field).arg(s).ignore();
            }
            if i % 2_000 == 1_999 || i + 1 == urls {
                let _: () = pipe.query(&mut conn).unwrap();
                pipe = redis::pipe();
            }
        }
        let after = used_memory(&mut conn);
        let mut encodings = std::collections::BTreeMap::new();
        let mut largest = 0u64;
        for b in (0..buckets).step_by((buckets / 64).max(1) as usize) {
            let key = format!("crawl:{{bench}}:hist:{b}");
            let enc: String = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&key)
                .query(&mut conn)
                .unwrap();
            *encodings.entry(enc).or_insert(0u32) += 1;
            let n: u64 = redis::cmd("HLEN").arg(&key).query(&mut conn).unwrap();
            largest = largest.max(n);
        }
        println!(
            "| {mix} | {:.1} | {:.1}% | {:.1} | {:?} (of 64 sampled) | {largest} fields |",
            value_bytes as f64 / urls as f64,
            100.0 * spilled as f64 / urls as f64,
            (after - before) as f64 / urls as f64,
            encodings,
        );
    }
}
