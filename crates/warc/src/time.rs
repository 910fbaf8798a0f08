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
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }

    /// Digits only, to the millisecond: `20261125154000123` (file names sort by time).
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
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
}
