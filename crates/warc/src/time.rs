//! UTC timestamps without a calendar crate: days since 1970 to a civil date (Howard
//! Hinnant's algorithm), as WARC-Date wants them and as file names want them.

use std::time::{SystemTime, UNIX_EPOCH};

/// A moment in UTC, broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

impl Utc {
    /// `at`, in UTC (the epoch for a time before it).
    pub fn of(at: SystemTime) -> Self {
        let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = d.as_secs();
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Self {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
            millis: d.subsec_millis(),
        }
    }

    /// Now, in UTC.
    pub fn now() -> Self {
        Self::of(SystemTime::now())
    }

    /// RFC 3339 with milliseconds: `2026-11-25T15:40:00.123Z` (a WARC 1.1 `WARC-Date`).
    /// Written digit by digit: `format!` with padding cost about 1% of a crawl's CPU, one
    /// timestamp per record.
    pub fn rfc3339(&self) -> String {
        let Ok(year @ 0..=9999) = u32::try_from(self.year) else {
            return format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
            );
        };
        let mut out = String::with_capacity(24);
        for (value, digits, after) in [
            (year, 4, '-'),
            (self.month, 2, '-'),
            (self.day, 2, 'T'),
            (self.hour, 2, ':'),
            (self.minute, 2, ':'),
            (self.second, 2, '.'),
            (self.millis, 3, 'Z'),
        ] {
            push_digits(&mut out, value, digits);
            out.push(after);
        }
        out
    }

    /// The moment an RFC 3339 UTC time names, as records and WARC-Date write it
    /// (`2026-11-25T15:40:00.123Z`; fractions optional, to the millisecond); `None` for text
    /// that is not one or a time before 1970.
    pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
        let b = text.as_bytes();
        let shape = b.len() >= 20
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && b[b.len() - 1] == b'Z';
        if !shape {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let t = text.get(r)?;
            t.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| t.parse().ok())?
        };
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
            return None;
        }
        let millis = match &text[19..text.len() - 1] {
            "" => 0,
            f if f.len() >= 2
                && f.starts_with('.')
                && f[1..].bytes().all(|c| c.is_ascii_digit()) =>
            {
                let digits = &f[1..f.len().min(4)];
                digits.parse::<u64>().ok()? * 10u64.pow(3 - digits.len() as u32)
            }
            _ => return None,
        };
        // Days from the civil date (Howard Hinnant's algorithm, the inverse of `of`).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
        let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
        Some(UNIX_EPOCH + std::time::Duration::from_millis(secs * 1000 + millis))
    }

    /// Digits only, to the millisecond: `20261125154000123` (file names sort by time).
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }
}

/// `value`'s last `digits` decimal digits, zero-padded.
fn push_digits(out: &mut String, value: u32, digits: u32) {
    for place in (0..digits).rev() {
        let digit = value / 10u32.pow(place) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn civil_dates() {
        let at = |s| Utc::of(UNIX_EPOCH + Duration::from_millis(s));
        assert_eq!(at(0).rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_000).rfc3339(), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_795_621_200_123).rfc3339(), "2026-11-25T15:40:00.123Z");
        assert_eq!(at(1_795_621_200_123).compact(), "20261125154000123");
    }

    #[test]
    fn rfc3339_reads_back_what_it_writes() {
        let mut ms: u64 = 1;
        for _ in 0..5_000 {
            let at = UNIX_EPOCH + Duration::from_millis(ms);
            assert_eq!(Utc::parse_rfc3339(&Utc::of(at).rfc3339()), Some(at));
            ms = ms.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) % 253_402_300_800_000;
        }
        let secs = |t: &str| {
            Utc::parse_rfc3339(t).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_millis())
        };
        assert_eq!(secs("2026-11-25T15:40:00Z"), Some(1_795_621_200_000));
        assert_eq!(secs("2026-11-25T15:40:00.1Z"), Some(1_795_621_200_100));
        assert_eq!(secs("2026-11-25T15:40:00.123456Z"), Some(1_795_621_200_123));
        for bad in [
            "",
            "2026-11-25 15:40:00Z",
            "2026-13-25T15:40:00Z",
            "2026-11-25T15:40:00",
            "2026-11-25T15:40:00.Z",
            "2026-11-25T15:40:00+01:00",
            "+026-11-25T15:40:00Z",
            "1969-12-31T23:59:59Z",
            "2026-11-25T15:40:00.1é2Z",
        ] {
            assert_eq!(Utc::parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    /// The digits written one by one are what the padded format gives, at any moment.
    #[test]
    fn rfc3339_matches_the_padded_format() {
        let mut ms: u64 = 1;
        for _ in 0..20_000 {
            let t = Utc::of(UNIX_EPOCH + Duration::from_millis(ms));
            let padded = format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
            );
            assert_eq!(t.rfc3339(), padded);
            ms = ms.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) % 253_402_300_800_000;
        }
        let far = Utc::of(UNIX_EPOCH + Duration::from_secs(300_000_000_000));
        assert!(far.rfc3339().starts_with(&far.year.to_string()), "{far:?}");
    }
}
