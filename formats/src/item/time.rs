//! When an item happened: [`EventTime`], an instant with the UTC offset it was recorded in (or
//! undated), its parsing from RFC 3339 and ISO days, and its local day.

use super::*;

/// When something happened: an instant (UTC milliseconds since the Unix epoch) and the UTC
/// offset of the place it happened, so local time can be shown as the person lived it — or
/// [`EventTime::UNDATED`], for a memory whose source gives no time at all (a photo without
/// EXIF dates): never guessed from a file's copy time.
///
/// A day means one thing everywhere in memdb: the item's **local** calendar day
/// ([`local_date`](Self::local_date)), the day its scrapbook page shows and its time filters
/// test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventTime {
    /// Milliseconds since 1970-01-01T00:00:00Z (`i64::MIN`: undated).
    pub unix_ms: i64,
    /// Local UTC offset in minutes (east positive), within ±[`MAX_OFFSET_MINUTES`].
    pub offset_minutes: i16,
}

/// `unix_ms` of an undated item (SPEC.md §4.2): below every instant a date can name, so it
/// sorts first in time order and no time range contains it.
pub const UNDATED_MS: i64 = i64::MIN;

impl EventTime {
    /// The time of an undated item: its source gives none. It matches no time filter, has no
    /// local day (no scrapbook page) and shows as `undated`.
    pub const UNDATED: EventTime = EventTime {
        unix_ms: UNDATED_MS,
        offset_minutes: 0,
    };

    /// Whether this is [`EventTime::UNDATED`].
    pub fn is_undated(&self) -> bool {
        self.unix_ms == UNDATED_MS
    }

    /// The local calendar day (the instant plus its own UTC offset): the one meaning of "the
    /// day" of an item — its page, its EM-Path and every date filter use it. `None` when
    /// undated or out of the calendar's range.
    pub fn local_date(&self) -> Option<jiff::civil::Date> {
        if self.is_undated() {
            return None;
        }
        let local_ms = self
            .unix_ms
            .checked_add(i64::from(self.offset_minutes) * 60_000)?;
        let days = local_ms.div_euclid(86_400_000);
        jiff::civil::Date::constant(1970, 1, 1)
            .checked_add(jiff::Span::new().try_days(days).ok()?)
            .ok()
    }

    /// Milliseconds of the local wall-clock time as if it were UTC (`unix_ms + offset`): what
    /// orders events by the time of day they were lived at. `None` when undated.
    pub fn local_ms(&self) -> Option<i64> {
        (!self.is_undated()).then(|| {
            self.unix_ms
                .saturating_add(i64::from(self.offset_minutes) * 60_000)
        })
    }
    /// An instant in UTC.
    pub fn utc(unix_ms: i64) -> EventTime {
        EventTime {
            unix_ms,
            offset_minutes: 0,
        }
    }

    /// Local calendar date and time with an offset (`offset_minutes` east of UTC).
    pub fn from_local(
        date: jiff::civil::DateTime,
        offset_minutes: i16,
    ) -> Result<EventTime, String> {
        if offset_minutes.unsigned_abs() > MAX_OFFSET_MINUTES.unsigned_abs() {
            return Err(format!("UTC offset {offset_minutes} min is beyond ±18 h"));
        }
        let offset = jiff::tz::Offset::from_seconds(i32::from(offset_minutes) * 60)
            .map_err(|e| e.to_string())?;
        let ts = offset.to_timestamp(date).map_err(|e| e.to_string())?;
        Ok(EventTime {
            unix_ms: ts.as_millisecond(),
            offset_minutes,
        })
    }

    /// Parses `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)` or a bare date `YYYY-MM-DD` (midnight UTC).
    /// The date-time part goes through jiff's ISO 8601 parser, which also takes the basic format,
    /// hour-only times, a space or `t` separator, and second 60 (read as 59); SPEC.md §8.1.
    pub fn parse(text: &str) -> Result<EventTime, String> {
        let text = text.trim();
        if text.len() == 10 {
            let date: jiff::civil::Date = text
                .parse()
                .map_err(|e| format!("bad date `{text}`: {e}"))?;
            return EventTime::from_local(date.to_datetime(jiff::civil::Time::midnight()), 0);
        }
        let (civil, offset_minutes) = split_offset(text)?;
        let date: jiff::civil::DateTime = civil
            .parse()
            .map_err(|e| format!("bad date-time `{text}`: {e}"))?;
        EventTime::from_local(date, offset_minutes)
    }

    /// Local date-time with offset, RFC 3339 (`2023-05-08T13:56:00+02:00`); `undated` for
    /// [`EventTime::UNDATED`].
    pub fn to_rfc3339(&self) -> String {
        if self.is_undated() {
            return "undated".to_owned();
        }
        let offset = jiff::tz::Offset::from_seconds(i32::from(self.offset_minutes) * 60)
            .unwrap_or(jiff::tz::Offset::UTC);
        match jiff::Timestamp::from_millisecond(self.unix_ms) {
            Ok(ts) => {
                let local = offset.to_datetime(ts);
                let sign = if self.offset_minutes < 0 { '-' } else { '+' };
                let abs = self.offset_minutes.unsigned_abs();
                format!(
                    "{}{sign}{:02}:{:02}",
                    local.strftime("%Y-%m-%dT%H:%M:%S"),
                    abs / 60,
                    abs % 60
                )
            }
            Err(_) => format!("@{}ms", self.unix_ms),
        }
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        if self.is_undated() {
            return if self.offset_minutes == 0 {
                Ok(())
            } else {
                Err(format!(
                    "an undated time has offset 0, not {} min",
                    self.offset_minutes
                ))
            };
        }
        if self.offset_minutes.unsigned_abs() > MAX_OFFSET_MINUTES.unsigned_abs() {
            return Err(format!(
                "UTC offset {} min is beyond ±18 h",
                self.offset_minutes
            ));
        }
        if jiff::Timestamp::from_millisecond(self.unix_ms).is_err() {
            return Err(format!(
                "instant {} ms is outside years -9999..=9999",
                self.unix_ms
            ));
        }
        Ok(())
    }
}

pub(super) fn split_offset(text: &str) -> Result<(&str, i16), String> {
    if let Some(civil) = text.strip_suffix('Z').or_else(|| text.strip_suffix('z')) {
        return Ok((civil, 0));
    }
    let bad = || format!("date-time `{text}` needs a UTC offset (`Z` or `±HH:MM`)");
    if text.len() < 6 || !text.is_char_boundary(text.len() - 6) {
        return Err(bad());
    }
    let (civil, off) = text.split_at(text.len() - 6);
    let b = off.as_bytes();
    let sign = match b[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return Err(bad()),
    };
    if b[3] != b':' || !b[1..3].iter().chain(&b[4..6]).all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let hours = i16::from(b[1] - b'0') * 10 + i16::from(b[2] - b'0');
    let minutes = i16::from(b[4] - b'0') * 10 + i16::from(b[5] - b'0');
    if minutes >= 60 {
        return Err(bad());
    }
    Ok((civil, sign * (hours * 60 + minutes)))
}

impl fmt::Display for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}
