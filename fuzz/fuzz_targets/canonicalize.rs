//! URL canonicalisation: never panics; what it returns parses, and canonicalising it again
//! changes nothing (idempotence), with and without a base.
#![no_main]

use frontier::{CanonConfig, Canonicalizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let canon = Canonicalizer::new(CanonConfig {
        sort_query: true,
        drop_params: vec!["utm_*".into(), "sessionid".into()],
        strip_www: true,
        ..CanonConfig::default()
    });
    let base = url::Url::parse("http://example.com/a/b?c=d").unwrap();
    for got in [
        canon.canonicalize(text, None),
        canon.canonicalize(text, Some(&base)),
    ] {
        if let Ok(u) = got {
            let again = url::Url::parse(u.as_str()).expect("canonical output parses");
            let twice = canon
                .canonicalize(again.as_str(), None)
                .expect("canonical output stays valid");
            assert_eq!(twice.as_str(), u.as_str(), "canonicalisation is idempotent");
        }
    }
});
