//! Parsing of the `Retry-After` response header field.
//!
//! A server uses `Retry-After` (RFC 9110 §10.2.3) to tell a client how long
//! to wait before retrying, typically with `503 Service Unavailable` or
//! `429 Too Many Requests`. The field value is either
//!
//! * `delay-seconds` (`1*DIGIT`): a non-negative number of seconds, or
//! * an `HTTP-date`: an absolute point in time.
//!
//! RFC 9110 §5.6.7 requires a recipient to accept all three HTTP-date
//! formats, even though senders must only generate the first one:
//!
//! * IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
//! * obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`, whose two-digit year
//!   is read as the year with those last two digits that lies between 49
//!   years before and 50 years after the current year (anything that would
//!   seem to be more than 50 years in the future is in the past instead);
//! * ANSI C `asctime()`: `Sun Nov  6 08:49:37 1994`.
//!
//! The grammar is case-sensitive and matched exactly; only optional
//! whitespace (SP / HTAB) around the value is removed. The weekday must agree
//! with the date, otherwise the value is rejected. A `second` of `60` (leap
//! second) is accepted and counts as the first second of the next minute.
//!
//! RFC 9111 §1.2.2 says that a delta-seconds value too large to be
//! represented must be treated as 2^31 seconds, so any larger `delay-seconds`
//! value (including ones that do not fit in a `u64`) saturates to
//! [`RETRY_AFTER_SATURATION`] instead of being rejected or overflowing.
//!
//! The parser works on bytes, never allocates, never panics, and returns
//! `None` for anything that is not a valid `Retry-After` value.

use std::time::Duration;

use crate::clock::{SystemTime, UNIX_EPOCH};

/// The value used when delay-seconds is larger than can be represented
/// (RFC 9111 §1.2.2: 2^31 seconds).
pub const RETRY_AFTER_SATURATION: Duration = Duration::from_secs(SATURATION_SECS);

const SATURATION_SECS: u64 = 2_147_483_648;
const NANOS_PER_SEC: i128 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

const SHORT_DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Parses a `Retry-After` field value into the time to wait from `now`.
///
/// `delay-seconds` yields `min(value, 2^31)` seconds. An HTTP-date yields the
/// exact time between `now` and that date, or [`Duration::ZERO`] if the date
/// is not after `now`. `now` may lie before the Unix epoch. Returns `None` if
/// the value is not valid.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    parse_retry_after_bytes(value.as_bytes(), now)
}

/// Like [`parse_retry_after`], for raw header bytes.
///
/// The grammar is pure ASCII, so any non-ASCII byte (and therefore any
/// invalid UTF-8) yields `None`.
pub fn parse_retry_after_bytes(value: &[u8], now: SystemTime) -> Option<Duration> {
    let value = trim_ows(value);
    if value.is_empty() || !value.is_ascii() {
        return None;
    }
    if value.iter().all(u8::is_ascii_digit) {
        return Some(delay_seconds(value));
    }
    let now_nanos = nanos_since_epoch(now);
    let date_secs = parse_imf_fixdate(value)
        .or_else(|| parse_rfc850_date(value, now_nanos))
        .or_else(|| parse_asctime_date(value))?;
    let diff = date_secs
        .checked_mul(NANOS_PER_SEC)?
        .checked_sub(now_nanos)?;
    if diff <= 0 {
        return Some(Duration::ZERO);
    }
    let secs = u64::try_from(diff / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let nanos = u32::try_from(diff % NANOS_PER_SEC).unwrap_or(0);
    Some(Duration::new(secs, nanos))
}

/// The longest valid `Retry-After` among a response's fields, measured from `now`
/// (never come back earlier than any of them asked); malformed fields are ignored.
pub fn retry_after_of(headers: &http::HeaderMap, now: SystemTime) -> Option<Duration> {
    headers
        .get_all(http::header::RETRY_AFTER)
        .iter()
        .filter_map(|value| parse_retry_after_bytes(value.as_bytes(), now))
        .max()
}

/// Formats `t` as an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// Sub-second precision is truncated; times before the epoch format as the
/// epoch.
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
pub(crate) fn format_imf_fixdate(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let tod = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        SHORT_DAYS[weekday(days)],
        day,
        MONTHS[(month - 1) as usize],
        year,
        tod / 3600,
        tod / 60 % 60,
        tod % 60
    )
}

/// Removes leading and trailing OWS (SP / HTAB only).
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Converts an all-digit string to seconds, saturating at 2^31.
fn delay_seconds(digits: &[u8]) -> Duration {
    let n = digits.iter().fold(0u64, |acc, &b| {
        acc.saturating_mul(10)
            .saturating_add(u64::from(b.wrapping_sub(b'0') % 10))
    });
    Duration::from_secs(n.min(SATURATION_SECS))
}

/// Signed nanoseconds between the Unix epoch and `t`.
fn nanos_since_epoch(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(e) => i128::try_from(e.duration().as_nanos()).map_or(i128::MIN, |n| -n),
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn parse_imf_fixdate(s: &[u8]) -> Option<i128> {
    let s: &[u8; 29] = s.try_into().ok()?;
    if s[3..5] != *b", " || s[7] != b' ' || s[11] != b' ' || s[16] != b' ' || s[25..] != *b" GMT" {
        return None;
    }
    let wday = lookup(&SHORT_DAYS, &s[0..3])?;
    let day = two_digits(&s[5..7])?;
    let month = lookup(&MONTHS, &s[8..11])? + 1;
    let year = i64::from(two_digits(&s[12..14])? * 100 + two_digits(&s[14..16])?);
    epoch_seconds(year, month, day, time_of_day(&s[17..25])?, wday)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn parse_rfc850_date(s: &[u8], now_nanos: i128) -> Option<i128> {
    let comma = s.iter().position(|&b| b == b',')?;
    let (name, rest) = s.split_at(comma);
    let wday = lookup(&LONG_DAYS, name)?;
    // ", 06-Nov-94 08:49:37 GMT"
    let r: &[u8; 24] = rest.try_into().ok()?;
    if r[1] != b' ' || r[4] != b'-' || r[8] != b'-' || r[11] != b' ' || r[20..] != *b" GMT" {
        return None;
    }
    let day = two_digits(&r[2..4])?;
    let month = lookup(&MONTHS, &r[5..8])? + 1;
    let yy = i64::from(two_digits(&r[9..11])?);
    let now_days = i64::try_from(now_nanos.div_euclid(NANOS_PER_SEC * i128::from(SECS_PER_DAY)));
    let lowest = civil_from_days(now_days.ok()?).0 - 49;
    let year = lowest + (yy - lowest).rem_euclid(100);
    epoch_seconds(year, month, day, time_of_day(&r[12..20])?, wday)
}

/// `Sun Nov  6 08:49:37 1994`
fn parse_asctime_date(s: &[u8]) -> Option<i128> {
    let s: &[u8; 24] = s.try_into().ok()?;
    if s[3] != b' ' || s[7] != b' ' || s[10] != b' ' || s[19] != b' ' {
        return None;
    }
    let wday = lookup(&SHORT_DAYS, &s[0..3])?;
    let month = lookup(&MONTHS, &s[4..7])? + 1;
    let day = match s[8..10] {
        [b' ', d @ b'0'..=b'9'] => u32::from(d - b'0'),
        _ => two_digits(&s[8..10])?,
    };
    let year = i64::from(two_digits(&s[20..22])? * 100 + two_digits(&s[22..24])?);
    epoch_seconds(year, month, day, time_of_day(&s[11..19])?, wday)
}

/// Position of `s` in `names` (exact, case-sensitive match).
fn lookup(names: &[&str], s: &[u8]) -> Option<u32> {
    let i = names.iter().position(|n| n.as_bytes() == s)?;
    u32::try_from(i).ok()
}

fn two_digits(s: &[u8]) -> Option<u32> {
    match *s {
        [a @ b'0'..=b'9', b @ b'0'..=b'9'] => Some(u32::from(a - b'0') * 10 + u32::from(b - b'0')),
        _ => None,
    }
}

/// `hh:mm:ss` as seconds since midnight; second 60 (leap second) allowed.
fn time_of_day(s: &[u8]) -> Option<u32> {
    match *s {
        [h1, h2, b':', m1, m2, b':', s1, s2] => {
            let h = two_digits(&[h1, h2])?;
            let m = two_digits(&[m1, m2])?;
            let sec = two_digits(&[s1, s2])?;
            (h <= 23 && m <= 59 && sec <= 60).then_some(h * 3600 + m * 60 + sec)
        }
        _ => None,
    }
}

/// Validates the date and weekday (`0` = Monday) and returns Unix seconds.
fn epoch_seconds(year: i64, month: u32, day: u32, tod: u32, wday: u32) -> Option<i128> {
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if weekday(days) != wday as usize {
        return None;
    }
    Some(i128::from(days) * i128::from(SECS_PER_DAY) + i128::from(tod))
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Weekday of a day count since 1970-01-01 (a Thursday); `0` = Monday.
fn weekday(days: i64) -> usize {
    (days + 3).rem_euclid(7) as usize
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`]: `(year, month, day)`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sun, 06 Nov 1994 08:49:37 GMT
    const T1994: u64 = 784_111_777;
    const MAX_DATE: u64 = 253_402_300_799; // Fri, 31 Dec 9999 23:59:59 GMT
    const IMF: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
    const RFC850: &str = "Sunday, 06-Nov-94 08:49:37 GMT";
    const ASCTIME: &str = "Sun Nov  6 08:49:37 1994";
    const ZERO: Option<Duration> = Some(Duration::ZERO);
    const SAT: Option<Duration> = Some(RETRY_AFTER_SATURATION);

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn p(s: &str, now: SystemTime) -> Option<Duration> {
        parse_retry_after(s, now)
    }

    fn secs(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    fn assert_all_none(values: &[&str], now: SystemTime) {
        for s in values {
            assert_eq!(p(s, now), None, "{s:?}");
        }
    }

    /// `(year, month, day, weekday, hh:mm:ss)` of Unix seconds `t`.
    fn fields(t: u64) -> (i64, u32, u32, usize, String) {
        let days = (t / 86_400) as i64;
        let (y, m, d) = civil_from_days(days);
        let tod = t % 86_400;
        let hms = format!("{:02}:{:02}:{:02}", tod / 3600, tod / 60 % 60, tod % 60);
        (y, m, d, weekday(days), hms)
    }

    fn fmt_rfc850(t: u64) -> String {
        let (y, m, d, w, hms) = fields(t);
        let (day, mon, yy) = (LONG_DAYS[w], MONTHS[m as usize - 1], y % 100);
        format!("{day}, {d:02}-{mon}-{yy:02} {hms} GMT")
    }

    fn fmt_asctime(t: u64) -> String {
        let (y, m, d, w, hms) = fields(t);
        let (day, mon) = (SHORT_DAYS[w], MONTHS[m as usize - 1]);
        format!("{day} {mon} {d:>2} {hms} {y}")
    }

    #[test]
    fn each_format_at_now_is_zero() {
        for s in [IMF, RFC850, ASCTIME, "Sun Nov 06 08:49:37 1994"] {
            assert_eq!(p(s, at(T1994)), ZERO, "{s}");
        }
    }

    #[test]
    fn three_formats_agree_for_future_date() {
        for s in [IMF, RFC850, ASCTIME] {
            assert_eq!(p(s, at(T1994 - 100)), secs(100), "{s}");
        }
    }

    #[test]
    fn future_date_with_subsecond_now_is_exact() {
        let now = at(T1994 - 2) + Duration::from_millis(250);
        assert_eq!(p(IMF, now), Some(Duration::from_millis(1750)));
        assert_eq!(p(IMF, at(T1994) + Duration::from_nanos(1)), ZERO);
    }

    #[test]
    fn past_dates_are_zero() {
        let now = at(T1994);
        assert_eq!(p("Thu, 01 Jan 1970 00:00:00 GMT", now), ZERO);
        assert_eq!(p("Sat, 01 Jan 0000 00:00:00 GMT", now), ZERO);
        assert_eq!(p("Sun Nov  6 08:49:36 1994", now), ZERO);
    }

    #[test]
    fn year_9999_is_large_without_overflow() {
        let s = "Fri, 31 Dec 9999 23:59:59 GMT";
        assert_eq!(p(s, UNIX_EPOCH), secs(MAX_DATE));
        assert_eq!(p("Fri Dec 31 23:59:59 9999", at(1)), secs(MAX_DATE - 1));
    }

    #[test]
    fn format_imf_fixdate_known_values() {
        let f = format_imf_fixdate;
        assert_eq!(f(at(T1994)), IMF);
        assert_eq!(f(at(T1994) + Duration::from_millis(999)), IMF);
        assert_eq!(f(at(0)), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(f(at(951_782_400)), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(f(at(MAX_DATE)), "Fri, 31 Dec 9999 23:59:59 GMT");
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(f(before), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn rfc850_fifty_year_rule() {
        let now = at(1_767_225_600); // Thu, 01 Jan 2026 00:00:00 GMT
        let s = "Friday, 06-Nov-76 00:00:00 GMT"; // 2076-11-06 is a Friday
        assert_eq!(p(s, now), secs(3_371_846_400 - 1_767_225_600));
        // 1976-11-06 was a Saturday, but "76" means 2076 here.
        assert_eq!(p("Saturday, 06-Nov-76 00:00:00 GMT", now), None);
        // "77" would be 2077 (> 50 years ahead), so it means 1977 (a Sunday).
        assert_eq!(p("Sunday, 06-Nov-77 00:00:00 GMT", now), ZERO);
        assert_eq!(p("Saturday, 06-Nov-77 00:00:00 GMT", now), None);
    }

    #[test]
    fn rfc850_uses_year_of_now() {
        assert_eq!(p(RFC850, at(T1994 - 7)), secs(7));
        // In 1994, "44" is 2044 (50 years ahead): 2044-11-06 is a Sunday.
        let got = p("Sunday, 06-Nov-44 08:49:37 GMT", at(T1994));
        assert_eq!(got, secs(2_362_034_977 - T1994));
    }

    #[test]
    fn leap_days() {
        assert_eq!(
            p("Thu, 29 Feb 2024 00:00:00 GMT", at(0)),
            secs(1_709_164_800)
        );
        assert_eq!(p("Tue, 29 Feb 2000 00:00:00 GMT", at(0)), secs(951_782_400));
        for day in SHORT_DAYS {
            let bad = ["29 Feb 2023", "29 Feb 2100", "30 Feb 2024"];
            for date in bad.map(|d| format!("{day}, {d} 00:00:00 GMT")) {
                assert_eq!(p(&date, at(0)), None, "{date}");
            }
        }
    }

    #[test]
    fn invalid_days_of_month() {
        for day in SHORT_DAYS {
            let bad = ["31 Apr 2024", "00 Nov 1994", "32 Jan 1994", "31 Jun 2024"];
            for date in bad.map(|d| format!("{day}, {d} 00:00:00 GMT")) {
                assert_eq!(p(&date, at(0)), None, "{date}");
            }
            assert_eq!(p(&format!("{day} Jan  0 00:00:00 1994"), at(0)), None);
        }
    }

    #[test]
    fn weekday_mismatch_is_rejected() {
        let wrong = [
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Monday, 06-Nov-94 08:49:37 GMT",
            "Mon Nov  6 08:49:37 1994",
        ];
        assert_all_none(&wrong, at(0));
        assert_eq!(p(IMF, at(0)), secs(T1994));
    }

    #[test]
    fn names_are_case_sensitive() {
        let bad = [
            "Sun, 06 nov 1994 08:49:37 GMT",
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 NOV 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 gmt",
            "sunday, 06-Nov-94 08:49:37 GMT",
            "Sun nov  6 08:49:37 1994",
        ];
        assert_all_none(&bad, at(0));
    }

    #[test]
    fn gmt_is_required() {
        let bad = [
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sunday, 06-Nov-94 08:49:37",
            "Sun Nov  6 08:49:37 1994 GMT",
        ];
        assert_all_none(&bad, at(0));
    }

    #[test]
    fn time_of_day_is_validated() {
        let bad = ["24:00:00", "23:60:00", "23:59:61", "8:49:37", "08-49-37"];
        for t in bad.map(|t| format!("Sun, 06 Nov 1994 {t} GMT")) {
            assert_eq!(p(&t, at(0)), None, "{t}");
        }
    }

    #[test]
    fn leap_second_counts_as_next_second() {
        let leap = p("Sun, 06 Nov 1994 23:59:60 GMT", at(0));
        assert_eq!(leap, p("Mon, 07 Nov 1994 00:00:00 GMT", at(0)));
        assert_eq!(p("Sun Nov  6 08:49:60 1994", at(0)), secs(T1994 + 23));
    }

    #[test]
    fn delay_seconds_basic() {
        assert_eq!(p("120", at(T1994)), secs(120));
        assert_eq!(p("0", at(T1994)), ZERO);
        assert_eq!(p("1", UNIX_EPOCH - Duration::from_secs(9)), secs(1));
    }

    #[test]
    fn delay_seconds_whitespace() {
        for s in [" 120 ", "\t120\t", " \t 120 \t "] {
            assert_eq!(p(s, at(0)), secs(120), "{s:?}");
        }
        assert_all_none(&["\n120", "120\r\n", "1 20", "1\t20", "\x0c120"], at(0));
    }

    #[test]
    fn delay_seconds_leading_zeros() {
        assert_eq!(p("0007", at(0)), secs(7));
        assert_eq!(p("0000000000000000000000000000000000042", at(0)), secs(42));
        assert_eq!(p("00", at(0)), ZERO);
    }

    #[test]
    fn delay_seconds_rejects_signs_fractions_exponents() {
        let bad = [
            "-1", "+1", "1.5", ".5", "1.", "1e3", "0x10", "1_000", "1,000",
        ];
        assert_all_none(&bad, at(0));
    }

    #[test]
    fn empty_and_blank_are_rejected() {
        assert_all_none(&["", " ", "\t", " \t  "], at(0));
    }

    #[test]
    fn delay_seconds_saturation() {
        assert_eq!(p("99999999999999999999", at(0)), SAT);
        assert_eq!(p("18446744073709551616", at(0)), SAT);
        assert_eq!(p("2147483649", at(0)), SAT);
        assert_eq!(p("2147483648", at(0)), SAT);
        assert_eq!(p("2147483647", at(0)), secs(2_147_483_647));
        assert_eq!(RETRY_AFTER_SATURATION, Duration::from_secs(1 << 31));
    }

    #[test]
    fn trailing_junk_and_extra_fields_are_rejected() {
        let bad = [
            "120s",
            "120;",
            "Sun, 06 Nov 1994 08:49:37 GMTx",
            "Sun, 06 Nov 1994 08:49:37 GMT;",
            "Sun, 06 Nov 1994 08:49:37 GMT GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT, 120",
            "Sunday, 06-Nov-94 08:49:37 GMT extra",
            "Sun Nov  6 08:49:37 1994 x",
            "garbage",
        ];
        assert_all_none(&bad, at(0));
    }

    #[test]
    fn spacing_inside_dates_must_be_exact() {
        let bad = [
            "Sun,  06 Nov 1994 08:49:37 GMT",
            "Sun,06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994  08:49:37 GMT",
            "Sun, 06\tNov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sunday,  06-Nov-94 08:49:37 GMT",
            "Sunday , 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun  Nov  6 08:49:37 1994",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
        ];
        assert_all_none(&bad, at(0));
    }

    /// Every byte of a date is checked: a separator, a digit or a letter replaced
    /// by another byte, the length kept, makes the value invalid — so no check of
    /// one separator can stand in for another's.
    #[test]
    fn one_wrong_byte_anywhere_in_a_date_is_rejected() {
        for valid in [IMF, RFC850, ASCTIME] {
            assert_eq!(p(valid, at(0)), secs(T1994), "{valid}");
            for i in 0..valid.len() {
                let mut bytes = valid.as_bytes().to_vec();
                bytes[i] = b'#';
                assert_eq!(
                    parse_retry_after_bytes(&bytes, at(0)),
                    None,
                    "{valid} with byte {i} replaced"
                );
            }
        }
    }

    #[test]
    fn surrounding_whitespace_around_dates_is_trimmed() {
        let now = at(T1994 - 5);
        assert_eq!(p(&format!("  {IMF}\t"), now), secs(5));
        assert_eq!(p(&format!("\t{RFC850} "), now), secs(5));
        assert_eq!(p(&format!(" {ASCTIME} "), now), secs(5));
    }

    #[test]
    fn non_ascii_and_invalid_utf8_are_rejected() {
        assert_all_none(
            &["１２０", "120\u{a0}", "½", &format!("{IMF}\u{3000}")],
            at(0),
        );
        assert_eq!(parse_retry_after_bytes(b"\xff120", at(0)), None);
        assert_eq!(parse_retry_after_bytes(b"120\x80", at(0)), None);
        assert_eq!(parse_retry_after_bytes(b" 120 ", at(0)), secs(120));
    }

    #[test]
    fn now_before_epoch_is_handled() {
        let now = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(p("Thu, 01 Jan 1970 00:00:00 GMT", now), secs(10));
        // The year of `now` is 1969, so "70" is 1970.
        assert_eq!(p("Thursday, 01-Jan-70 00:00:00 GMT", now), secs(10));
        assert_eq!(p("Wed, 31 Dec 1969 23:59:59 GMT", now), secs(9));
        assert_eq!(p("Wed Dec 31 23:59:59 1969", now), secs(9));
    }

    #[test]
    fn extreme_now_does_not_panic() {
        for n in [1u64 << 40, 1 << 52, 1 << 62, u64::MAX / 2, u64::MAX].map(Duration::from_secs) {
            for now in [UNIX_EPOCH.checked_add(n), UNIX_EPOCH.checked_sub(n)] {
                let Some(now) = now else { continue };
                let _ = p(RFC850, now);
                assert!(p(IMF, now).is_some());
                assert_eq!(p("5", now), secs(5));
            }
        }
    }

    fn any_now() -> impl Strategy<Value = SystemTime> {
        (any::<bool>(), 0u64..(1 << 40), 0u32..1_000_000_000).prop_map(|(after, s, ns)| {
            let d = Duration::new(s, ns);
            if after {
                UNIX_EPOCH + d
            } else {
                UNIX_EPOCH - d
            }
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_strings(s in any::<String>(), now in any_now()) {
            let _ = parse_retry_after(&s, now);
        }

        #[test]
        fn never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..64), now in any_now()) {
            let _ = parse_retry_after_bytes(&b, now);
        }

        #[test]
        fn never_panics_on_date_like_input(
            s in "[ \t]?[A-Za-z]{3,9},? [0-9 ]{1,2}[- ][A-Za-z]{3}[- ][0-9]{2,4} [0-9:]{8} [0-9A-Z]{0,4}",
            now in any_now(),
        ) {
            let _ = parse_retry_after(&s, now);
        }

        #[test]
        fn delay_seconds_any_u64(
            n in any::<u64>(),
            pre in "[ \t]{0,4}",
            zeros in "0{0,4}",
            post in "[ \t]{0,4}",
            now in any_now(),
        ) {
            let want = Some(Duration::from_secs(n.min(SATURATION_SECS)));
            prop_assert_eq!(parse_retry_after(&n.to_string(), now), want);
            let padded = format!("{pre}{zeros}{n}{post}");
            prop_assert_eq!(parse_retry_after(&padded, now), want);
            prop_assert_eq!(parse_retry_after_bytes(padded.as_bytes(), now), want);
        }

        #[test]
        fn delay_seconds_never_exceeds_digits(s in "[0-9]{1,40}") {
            let got = parse_retry_after(&s, UNIX_EPOCH);
            let significant = s.trim_start_matches('0');
            let want = if significant.len() > 10 {
                SATURATION_SECS
            } else {
                significant.parse::<u64>().unwrap_or(0).min(SATURATION_SECS)
            };
            prop_assert_eq!(got, Some(Duration::from_secs(want)));
        }

        #[test]
        fn http_date_roundtrip(
            t in 0..=MAX_DATE,
            far in 0..=MAX_DATE,
            offset in -2_000_000_000i64..=2_000_000_000,
            near in any::<bool>(),
            ns in 0u32..1_000_000_000,
        ) {
            // Half of the cases put `now` within about 63 years of `t`.
            let now_s = if near { t.saturating_add_signed(offset).min(MAX_DATE) } else { far };
            let now = UNIX_EPOCH + Duration::new(now_s, ns);
            let want = Some(at(t).duration_since(now).unwrap_or(Duration::ZERO));
            prop_assert_eq!(parse_retry_after(&format_imf_fixdate(at(t)), now), want);
            prop_assert_eq!(parse_retry_after(&fmt_asctime(t), now), want);
            if (fields(t).0 - fields(now_s).0).abs() <= 49 {
                prop_assert_eq!(parse_retry_after(&fmt_rfc850(t), now), want);
            }
        }
    }
}
