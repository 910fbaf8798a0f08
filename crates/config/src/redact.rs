//! A URL as the crawl shows it (errors, logs): its password hidden.

use url::Url;

/// A URL with its password hidden.
pub fn redact(url: &str) -> String {
    match Url::parse(url.trim()) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.trim().to_owned(),
    }
}
