//! Bad input, property-tested (thousands of cases each): the public Retry-After
//! parsers never panic and never return more than the input implies; caller keys
//! are accepted exactly when they can travel verbatim in a header.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use reqwest_resilience::{
    parse_retry_after, parse_retry_after_bytes, IdempotencyKey, InvalidKey, MAX_KEY_LEN,
    RETRY_AFTER_SATURATION,
};

const CASES: u32 = 4096;
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
/// 10000-01-01T00:00:00Z: no four-digit year reaches it.
const YEAR_10000: i128 = 253_402_300_800;
const NANOS: i128 = 1_000_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm), written independently of the crate.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Monday = 0.
fn weekday(days: i64) -> usize {
    // 1970-01-01 was a Thursday.
    (days + 3).rem_euclid(7) as usize
}

fn nanos_since_epoch(now: SystemTime) -> i128 {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// The wait until `date_secs` from `now`, as the RFC defines it (zero if past).
fn wait_until(date_secs: i128, now: SystemTime) -> Duration {
    let diff = date_secs * NANOS - nanos_since_epoch(now);
    if diff <= 0 {
        Duration::ZERO
    } else {
        Duration::new((diff / NANOS) as u64, (diff % NANOS) as u32)
    }
}

/// A `now` between 1900 and 2200, with nanoseconds.
fn any_now() -> impl Strategy<Value = SystemTime> {
    (-2_208_988_800i64..7_258_118_400i64, 0u32..1_000_000_000).prop_map(|(secs, nanos)| {
        let base = if secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(secs as u64)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
        };
        base + Duration::from_nanos(u64::from(nanos))
    })
}

/// What any input can imply at most, for a `now` before 2200: the saturation of
/// delay-seconds, or a date before year 10000.
fn upper_bound(now: SystemTime) -> Duration {
    RETRY_AFTER_SATURATION.max(wait_until(YEAR_10000, now))
}

/// The exact expected value of an all-digit input (after optional whitespace).
fn digits_value(digits: &str) -> Duration {
    let significant = digits.trim_start_matches('0');
    let seconds = if significant.len() > 30 {
        u128::MAX
    } else {
        significant.parse::<u128>().unwrap_or(0)
    };
    if seconds >= RETRY_AFTER_SATURATION.as_secs() as u128 {
        RETRY_AFTER_SATURATION
    } else {
        Duration::from_secs(seconds as u64)
    }
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Checks one parse of `input` against everything it can imply.
fn check_any(input: &[u8], now: SystemTime) -> Result<(), TestCaseError> {
    let parsed = parse_retry_after_bytes(input, now);
    if let Ok(text) = std::str::from_utf8(input) {
        prop_assert_eq!(parse_retry_after(text, now), parsed, "str and bytes agree");
    }
    let start = input.iter().position(|b| !is_ows(*b));
    let trimmed = match start {
        Some(start) => {
            let end = input.iter().rposition(|b| !is_ows(*b)).unwrap() + 1;
            &input[start..end]
        }
        None => &[][..],
    };
    if !trimmed.is_empty() && trimmed.iter().all(u8::is_ascii_digit) {
        let digits = std::str::from_utf8(trimmed).unwrap();
        prop_assert_eq!(
            parsed,
            Some(digits_value(digits)),
            "delay-seconds {}",
            digits
        );
    }
    if let Some(wait) = parsed {
        prop_assert!(wait <= upper_bound(now), "{:?} from {:?}", wait, input);
        prop_assert!(input.is_ascii(), "non-ASCII input accepted: {:?}", input);
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct DateFields {
    weekday: usize,
    day: u32,
    month: usize,
    year: i64,
    hour: u32,
    minute: u32,
    second: u32,
    /// Use the true weekday instead of `weekday` (when the date exists).
    true_weekday: bool,
}

fn date_fields() -> impl Strategy<Value = DateFields> {
    (
        0usize..7,
        0u32..=33,
        0usize..12,
        prop_oneof![0i64..=9999, 1900i64..=2200],
        0u32..=25,
        0u32..=61,
        0u32..=62,
        any::<bool>(),
    )
        .prop_map(
            |(weekday, day, month, year, hour, minute, second, true_weekday)| DateFields {
                weekday,
                day,
                month,
                year,
                hour,
                minute,
                second,
                true_weekday,
            },
        )
}

impl DateFields {
    /// Unix seconds if the date and time exist (second 60 allowed).
    fn epoch_secs(&self) -> Option<i128> {
        let month = self.month as u32 + 1;
        let valid = (1..=days_in_month(self.year, month)).contains(&self.day)
            && self.hour <= 23
            && self.minute <= 59
            && self.second <= 60;
        valid.then(|| {
            let days = days_from_civil(self.year, month, self.day);
            i128::from(days) * 86_400
                + i128::from(self.hour * 3600 + self.minute * 60 + self.second)
        })
    }

    fn weekday_shown(&self) -> usize {
        match self.epoch_secs() {
            Some(_) if self.true_weekday => {
                weekday(days_from_civil(self.year, self.month as u32 + 1, self.day))
            }
            _ => self.weekday,
        }
    }

    fn is_valid(&self) -> bool {
        self.epoch_secs().is_some()
            && self.weekday_shown()
                == weekday(days_from_civil(self.year, self.month as u32 + 1, self.day))
    }

    fn imf_fixdate(&self) -> String {
        format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            SHORT_DAYS[self.weekday_shown()],
            self.day,
            MONTHS[self.month],
            self.year,
            self.hour,
            self.minute,
            self.second
        )
    }

    fn asctime(&self) -> String {
        format!(
            "{} {} {:>2} {:02}:{:02}:{:02} {:04}",
            SHORT_DAYS[self.weekday_shown()],
            MONTHS[self.month],
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.year
        )
    }

    fn rfc850(&self) -> String {
        format!(
            "{}, {:02}-{}-{:02} {:02}:{:02}:{:02} GMT",
            LONG_DAYS[self.weekday_shown()],
            self.day,
            MONTHS[self.month],
            self.year.rem_euclid(100),
            self.hour,
            self.minute,
            self.second
        )
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn fuzz_parse_retry_after_never_panics_on_arbitrary_strings(
        input in any::<String>(),
        now in any_now(),
    ) {
        check_any(input.as_bytes(), now)?;
    }

    #[test]
    fn fuzz_parse_retry_after_bytes_never_panics_on_arbitrary_bytes(
        input in proptest::collection::vec(any::<u8>(), 0..64),
        now in any_now(),
    ) {
        check_any(&input, now)?;
    }

    #[test]
    fn fuzz_printable_ascii_soup_is_parsed_within_bounds(
        input in "[ -~\t]{0,40}",
        now in any_now(),
    ) {
        check_any(input.as_bytes(), now)?;
    }

    /// delay-seconds: exactly the number, saturated at 2^31 s, whatever its length
    /// and the whitespace around it.
    #[test]
    fn fuzz_delay_seconds_never_exceed_the_number(
        input in "[ \t]{0,3}[0-9]{1,60}[ \t]{0,3}",
        now in any_now(),
    ) {
        let digits = input.trim_matches([' ', '\t']);
        let parsed = parse_retry_after(&input, now);
        prop_assert_eq!(parsed, Some(digits_value(digits)));
        prop_assert!(parsed.unwrap() <= RETRY_AFTER_SATURATION);
    }

    /// Signs, fractions, exponents and separators are not delay-seconds.
    #[test]
    fn fuzz_signed_or_fractional_numbers_are_rejected(
        number in "[+-][0-9]{1,12}|[0-9]{1,6}[.,eE_][0-9]{1,6}|0x[0-9a-f]{1,8}",
        now in any_now(),
    ) {
        prop_assert_eq!(parse_retry_after(&number, now), None);
    }

    /// IMF-fixdate and asctime: the exact wait to an existing date with the right
    /// weekday, zero for a past date, `None` for anything else.
    #[test]
    fn fuzz_http_dates_are_exact_or_rejected(fields in date_fields(), now in any_now()) {
        let expected = fields
            .is_valid()
            .then(|| wait_until(fields.epoch_secs().unwrap(), now));
        for text in [fields.imf_fixdate(), fields.asctime()] {
            prop_assert_eq!(parse_retry_after(&text, now), expected, "{}", text);
        }
    }

    /// RFC 850 (two-digit year): never further than 50 years (+ a year of
    /// rounding) ahead, and `None` for a date that does not exist.
    #[test]
    fn fuzz_rfc850_dates_stay_within_fifty_years(fields in date_fields(), now in any_now()) {
        let text = fields.rfc850();
        let parsed = parse_retry_after(&text, now);
        if let Some(wait) = parsed {
            prop_assert!(wait <= Duration::from_secs(51 * 366 * 86_400), "{} → {:?}", text, wait);
        }
        // Two digits name a year in every century: 29-Feb-00 exists in 2000, not in
        // 2100, and the parser picks the century from `now`. Only a date missing in
        // every century must be refused.
        let leap_day_of_a_century = fields.month == 1 && fields.day == 29 && fields.year.rem_euclid(100) == 0;
        if fields.epoch_secs().is_none() && !leap_day_of_a_century {
            prop_assert_eq!(parsed, None, "{}", text);
        }
    }

    /// Valid values with one byte changed, inserted or removed: never a panic,
    /// never more than any input can imply.
    #[test]
    fn fuzz_mutated_valid_values_never_panic(
        fields in date_fields(),
        form in 0usize..4,
        position in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        edit in 0usize..3,
        now in any_now(),
    ) {
        let mut input = match form {
            0 => fields.imf_fixdate(),
            1 => fields.asctime(),
            2 => fields.rfc850(),
            _ => format!("{}", fields.year * 1_000_003),
        }
        .into_bytes();
        match edit {
            0 => {
                let at = position.index(input.len());
                input[at] = byte;
            }
            1 => {
                let at = position.index(input.len() + 1);
                input.insert(at, byte);
            }
            _ => {
                let at = position.index(input.len());
                input.remove(at);
            }
        }
        check_any(&input, now)?;
    }

    /// A caller key is accepted exactly when it can travel verbatim: 1–255 bytes of
    /// printable ASCII without surrounding spaces; otherwise a precise reason.
    #[test]
    fn fuzz_caller_keys_are_accepted_only_when_they_can_travel_verbatim(
        key in prop_oneof![
            any::<String>(),
            "[ -~]{0,300}",
            "[\\x00-\\x7f]{0,12}",
            "[a-z0-9-]{250,260}",
        ],
    ) {
        let printable = key.bytes().all(|b| (0x20..=0x7e).contains(&b));
        let fits = !key.is_empty() && key.len() <= MAX_KEY_LEN;
        let trimmed = !key.starts_with(' ') && !key.ends_with(' ');
        match IdempotencyKey::new(key.clone()) {
            Ok(accepted) => {
                prop_assert!(printable && fits && trimmed, "accepted {:?}", key);
                prop_assert_eq!(accepted.as_str(), key.as_str());
                let shown = format!("{:?}", accepted);
                prop_assert!(!shown.contains(&key) || key.len() <= 8, "{}", shown);
            }
            Err(InvalidKey::Empty) => prop_assert!(key.is_empty()),
            Err(InvalidKey::TooLong(length)) => {
                prop_assert_eq!(length, key.len());
                prop_assert!(length > MAX_KEY_LEN);
            }
            Err(InvalidKey::ForbiddenByte { position }) => {
                prop_assert!(fits);
                prop_assert!(!(0x20..=0x7e).contains(&key.as_bytes()[position]));
                prop_assert!(key.as_bytes()[..position].iter().all(|b| (0x20..=0x7e).contains(b)));
            }
            Err(InvalidKey::SurroundingWhitespace) => prop_assert!(printable && fits && !trimmed),
            Err(other) => prop_assert!(false, "unknown refusal {other:?} for {key:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// An oracle that shares no code or algorithm with the crate: `httpdate` formats
    /// the date, the crate must read back exactly the wait until it.
    #[test]
    fn fuzz_imf_fixdates_from_an_independent_formatter_read_back_exactly(
        date_secs in 0u64..253_402_300_799, now_secs in 0u64..253_402_300_799,
    ) {
        let date = UNIX_EPOCH + Duration::from_secs(date_secs);
        let now = UNIX_EPOCH + Duration::from_secs(now_secs);
        let text = httpdate::fmt_http_date(date);
        let expected = date.duration_since(now).unwrap_or(Duration::ZERO);
        prop_assert_eq!(parse_retry_after(&text, now), Some(expected), "{}", text);
    }
}
