//! "Did you mean": the setting closest to a misspelt one, by edit distance — a key of the same
//! section, else the same key under another section (a key put under the wrong one).

use super::schema::SCHEMA;

/// The candidate closest to `word` by edit distance, if close enough to be a slip of the
/// keyboard (at most a third of its length, and at least one edit).
pub(super) fn did_you_mean<S: AsRef<str>>(
    word: &str,
    candidates: impl IntoIterator<Item = S>,
) -> Option<S> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c.as_ref()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `section.key`?` for an unknown `section.key`: the closest key of the
/// same section, else of any section (a key put under the wrong one).
pub(super) fn did_you_mean_key(section: &str, key: &str) -> String {
    let same = SCHEMA
        .iter()
        .filter(|(s, _, _)| *s == section)
        .map(|(s, k, _)| (*s, *k));
    if let Some((s, k)) = did_you_mean_pair(key, same) {
        return format!("; did you mean `{s}.{k}`?");
    }
    let anywhere = SCHEMA
        .iter()
        .filter(|(s, k, _)| *s != section && *k == key)
        .map(|(s, k, _)| (*s, *k))
        .next();
    match anywhere {
        Some((s, k)) => format!("; `{k}` belongs under [{s}]: did you mean `{s}.{k}`?"),
        None => String::new(),
    }
}

fn did_you_mean_pair<'a>(
    key: &str,
    candidates: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<(&'a str, &'a str)> {
    let pairs: Vec<_> = candidates.collect();
    let best = did_you_mean(key, pairs.iter().map(|(_, k)| *k))?;
    pairs.into_iter().find(|(_, k)| *k == best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_of_the_keyboard_get_a_suggestion_and_strangers_none() {
        assert_eq!(
            did_you_mean_key("crawl", "concurency"),
            "; did you mean `crawl.concurrency`?"
        );
        assert_eq!(
            did_you_mean_key("crawl", "max_page"),
            "; did you mean `crawl.max_pages`?"
        );
        assert_eq!(
            did_you_mean_key("crawl", "delay_ms"),
            "; `delay_ms` belongs under [politeness]: did you mean `politeness.delay_ms`?"
        );
        assert_eq!(did_you_mean_key("crawl", "bogus"), "");
        assert_eq!(did_you_mean("polite", ["politeness", "crawl"]), None);
        assert_eq!(
            did_you_mean("politenes", ["politeness", "crawl"]),
            Some("politeness")
        );
    }
}
