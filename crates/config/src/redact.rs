//! A URL as the crawl shows it (errors, logs): its password hidden — also in a URL the `url`
//! crate cannot read, such as a Redis Cluster's list of nodes
//! (`redis+cluster://user:pw@a:7000,b:7001`).

use url::Url;

/// A URL with its password hidden.
pub fn redact(url: &str) -> String {
    let url = url.trim();
    match Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(_) => url.to_owned(),
        Err(_) => by_hand(url),
    }
}

/// The password of `scheme://user:password@rest` hidden without parsing the rest: the
/// credentials end at the last `@` (a password may hold one).
fn by_hand(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, hosts)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{hosts}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_every_url_form() {
        assert_eq!(
            redact("redis://u:secret@h:6379/0"),
            "redis://u:***@h:6379/0"
        );
        assert_eq!(redact(" redis://h:6379/0 "), "redis://h:6379/0");
        assert_eq!(redact("http://h:1"), "http://h:1");
        assert_eq!(
            redact("redis+cluster://u:se@c,r@a:7000,b:7001"),
            "redis+cluster://u:***@a:7000,b:7001"
        );
        assert_eq!(
            redact("redis+cluster://a:7000,b:7001"),
            "redis+cluster://a:7000,b:7001"
        );
        assert_eq!(
            redact("redis+cluster://u@a:1,b:2"),
            "redis+cluster://u@a:1,b:2"
        );
        assert!(!redact("rediss+cluster://:pw@a:1,b:2").contains("pw"));
    }
}
