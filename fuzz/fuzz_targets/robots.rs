//! robots.txt: a body as fetched (through the record the crawl state keeps of it), and any
//! bytes as a stored record: never panics.
#![no_main]

use engine::robots::RobotsCache;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cache = RobotsCache::new("crawler/0.1");
    // Any bytes as a stored record (version, kind, expiry, body).
    let _ = cache.restore("http://any.example", data);
    // The same bytes as the body of a parsed robots.txt that expires far in the future.
    let mut record = vec![1u8, 2];
    record.extend_from_slice(&u64::MAX.to_le_bytes());
    record.extend_from_slice(data);
    if cache.restore("http://robots.example", &record) {
        let _ = cache.state_of("robots.example");
    }
});
