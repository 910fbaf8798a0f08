//! Scope rules on any canonical URL, with patterns and trap guards: never panics.
#![no_main]

use frontier::{CanonConfig, Canonicalizer, HostScope, Scope, ScopeConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let canon = Canonicalizer::new(CanonConfig::default());
    let Ok(url) = canon.canonicalize(text, None) else {
        return;
    };
    let seeds = [url::Url::parse("http://www.example.co.uk/").unwrap()];
    for hosts in [HostScope::SameHost, HostScope::SameDomain, HostScope::Any] {
        let cfg = ScopeConfig {
            hosts,
            include: vec![r"^https?://[^/]+/(docs|blog)/".into()],
            exclude: vec![r"\.(pdf|zip)$".into(), r"[?&]page=\d{3,}".into()],
            max_depth: Some(5),
            ..ScopeConfig::default()
        };
        let scope = Scope::new(cfg, &seeds).expect("the patterns compile");
        let _ = scope.check(&url, (data.len() % 8) as u32);
    }
});
