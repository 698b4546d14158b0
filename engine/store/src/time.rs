//! One meaning for time in every filter: [`TimeWindow`].
//!
//! An item happened at an instant (UTC) and at a local wall-clock time (the instant plus its
//! own UTC offset). A **day** is always the item's *local* calendar day — the day its
//! scrapbook page shows ([`EventTime::local_date`]) — so an e-mail sent at 19:36 on 14 May at
//! UTC−7 is "on 2001-05-14" whatever the UTC date was. An **instant** (a date-time with an
//! offset, "the last 30 days") is compared in UTC. Ranges include both ends: `BETWEEN
//! 2001-05-01 AND 2001-05-14`, `--from 2001-05-01 --to 2001-05-14` and `>= … <=` name the same
//! items. Undated items match no time bound.
//!
//! A window is two half-open ranges, one on the UTC instant and one on the local wall-clock
//! milliseconds (`unix_ms + offset`), so intersecting windows is intersecting ranges and a
//! mixed window (a day and an instant) stays exact.
//!
//! Invariants (property test `every_window_equals_filtering_by_hand`, query and CLI tests):
//! [`TimeWindow::contains`] is the definition; an index scan over
//! [`TimeWindow::candidate_ms`] followed by `contains` returns exactly the items `contains`
//! accepts; a bound outside the calendar (year 9999's last day has no "next midnight" in
//! range) is an error, never a dropped filter.

use jiff::civil::Date;
use memdb_formats::item::{EventTime, MAX_OFFSET_MINUTES};

const MS_PER_DAY: i64 = 86_400_000;
/// The widest gap between an instant and its local wall-clock time.
const MAX_OFFSET_MS: i64 = MAX_OFFSET_MINUTES as i64 * 60_000;

/// Why a time bound or window cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The text is neither a day `YYYY-MM-DD` nor a date-time with an offset.
    #[error("bad date `{text}`: {reason}")]
    BadText {
        /// The text as given (trimmed).
        text: String,
        /// What the parser said.
        reason: String,
    },
    /// A day whose midnight (or the next) falls outside the millisecond range.
    #[error("day {0} is out of range")]
    DayOutOfRange(Date),
    /// An instant outside the calendar memdb represents.
    #[error("instant {0} ms is outside years -9999..=9999")]
    InstantOutOfRange(i64),
}

/// A bound of a time filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// A whole local day (the item's own calendar day).
    Day(Date),
    /// An instant, UTC milliseconds.
    Instant(i64),
}

impl TimeBound {
    /// A bound from text: `YYYY-MM-DD` is a local day; a date-time with `Z` or `±HH:MM` an
    /// instant.
    pub fn parse(text: &str) -> Result<TimeBound, TimeError> {
        let text = text.trim();
        let bad = |reason: String| TimeError::BadText {
            text: text.to_owned(),
            reason,
        };
        if text.len() == 10 {
            return text
                .parse::<Date>()
                .map(TimeBound::Day)
                .map_err(|e| bad(e.to_string()));
        }
        EventTime::parse(text)
            .map(|t| TimeBound::Instant(t.unix_ms))
            .map_err(bad)
    }
}

/// The items whose time falls in a window. Build it from bounds; `contains` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    /// `[lo, hi)` on the UTC instant.
    utc: (i64, i64),
    /// `[lo, hi)` on local wall-clock milliseconds (`unix_ms + offset`).
    local: (i64, i64),
}

impl Default for TimeWindow {
    fn default() -> Self {
        TimeWindow::ALL
    }
}

/// Local midnight of `day` in wall-clock milliseconds.
fn day_start(day: Date) -> Result<i64, TimeError> {
    let days = i64::from((day - Date::constant(1970, 1, 1)).get_days());
    days.checked_mul(MS_PER_DAY)
        .ok_or(TimeError::DayOutOfRange(day))
}

/// Local midnight after `day`: a day's exclusive end.
fn day_end(day: Date) -> Result<i64, TimeError> {
    day_start(day)?
        .checked_add(MS_PER_DAY)
        .ok_or(TimeError::DayOutOfRange(day))
}

/// The last millisecond an instant can have (jiff's range, years −9999..=9999).
fn instant_in_range(ms: i64) -> Result<i64, TimeError> {
    jiff::Timestamp::from_millisecond(ms)
        .map(|_| ms)
        .map_err(|_| TimeError::InstantOutOfRange(ms))
}

impl TimeWindow {
    /// No bound: every item, undated ones included.
    pub const ALL: TimeWindow = TimeWindow {
        utc: (i64::MIN, i64::MAX),
        local: (i64::MIN, i64::MAX),
    };

    /// Whether this window bounds nothing.
    pub fn is_all(&self) -> bool {
        *self == TimeWindow::ALL
    }

    /// Items at or after `bound` (a day: from its local midnight on).
    pub fn from(bound: TimeBound) -> Result<TimeWindow, TimeError> {
        Ok(match bound {
            TimeBound::Day(d) => TimeWindow {
                local: (day_start(d)?, i64::MAX),
                ..TimeWindow::ALL
            },
            TimeBound::Instant(t) => TimeWindow {
                utc: (instant_in_range(t)?, i64::MAX),
                ..TimeWindow::ALL
            },
        })
    }

    /// Items at or before `bound` (a day: to its end, included).
    pub fn until(bound: TimeBound) -> Result<TimeWindow, TimeError> {
        Ok(match bound {
            TimeBound::Day(d) => TimeWindow {
                local: (i64::MIN, day_end(d)?),
                ..TimeWindow::ALL
            },
            TimeBound::Instant(t) => TimeWindow {
                utc: (i64::MIN, instant_in_range(t)? + 1),
                ..TimeWindow::ALL
            },
        })
    }

    /// Items after `bound` (a day: from the next day on).
    pub fn after(bound: TimeBound) -> Result<TimeWindow, TimeError> {
        Ok(match bound {
            TimeBound::Day(d) => TimeWindow {
                local: (day_end(d)?, i64::MAX),
                ..TimeWindow::ALL
            },
            TimeBound::Instant(t) => TimeWindow {
                utc: (instant_in_range(t)? + 1, i64::MAX),
                ..TimeWindow::ALL
            },
        })
    }

    /// Items before `bound` (a day: before its local midnight).
    pub fn before(bound: TimeBound) -> Result<TimeWindow, TimeError> {
        Ok(match bound {
            TimeBound::Day(d) => TimeWindow {
                local: (i64::MIN, day_start(d)?),
                ..TimeWindow::ALL
            },
            TimeBound::Instant(t) => TimeWindow {
                utc: (i64::MIN, instant_in_range(t)?),
                ..TimeWindow::ALL
            },
        })
    }

    /// Items from `from` to `to`, both included.
    pub fn between(from: TimeBound, to: TimeBound) -> Result<TimeWindow, TimeError> {
        Ok(TimeWindow::from(from)?.and(&TimeWindow::until(to)?))
    }

    /// Items on local day `day`.
    pub fn on(day: Date) -> Result<TimeWindow, TimeError> {
        TimeWindow::between(TimeBound::Day(day), TimeBound::Day(day))
    }

    /// Items at UTC instants `[from_ms, to_ms)`: the raw range an application that thinks in
    /// instants (or a relative window such as "the last 30 days") gives.
    pub fn utc_range(from_ms: i64, to_ms: i64) -> TimeWindow {
        TimeWindow {
            utc: (from_ms, to_ms),
            ..TimeWindow::ALL
        }
    }

    /// Items in both windows.
    pub fn and(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow {
            utc: (self.utc.0.max(other.utc.0), self.utc.1.min(other.utc.1)),
            local: (
                self.local.0.max(other.local.0),
                self.local.1.min(other.local.1),
            ),
        }
    }

    /// Whether no time can be in the window.
    pub fn is_empty(&self) -> bool {
        self.utc.0 >= self.utc.1 || self.local.0 >= self.local.1
    }

    /// Whether an item at `time` is in the window: the definition every filter uses.
    pub fn contains(&self, time: EventTime) -> bool {
        if self.is_all() {
            return true;
        }
        let Some(local) = time.local_ms() else {
            return false;
        };
        (self.utc.0..self.utc.1).contains(&time.unix_ms)
            && (self.local.0..self.local.1).contains(&local)
    }

    /// The UTC instants an item in the window can have, `[lo, hi)`, for an index range scan
    /// (exact for instant bounds, widened by the largest UTC offset for day bounds; undated
    /// items excluded unless the window is [`ALL`](Self::ALL)); `None` when the window is
    /// empty. Check each candidate with [`contains`](Self::contains).
    pub fn candidate_ms(&self) -> Option<(i64, i64)> {
        if self.is_all() {
            return Some((i64::MIN, i64::MAX));
        }
        if self.is_empty() {
            return None;
        }
        let lo = self
            .utc
            .0
            .max(self.local.0.saturating_sub(MAX_OFFSET_MS))
            .max(i64::MIN + 1);
        let hi = self.utc.1.min(self.local.1.saturating_add(MAX_OFFSET_MS));
        (lo < hi).then_some((lo, hi))
    }

    /// Whether `candidate_ms` is exact: every dated instant in it is in the window, whatever
    /// its offset (no day bound), so a scan needs no per-item check.
    pub fn is_utc_exact(&self) -> bool {
        self.local == TimeWindow::ALL.local
    }

    /// Whether an item at UTC instant `ms` may need its offset checked: it lies within the
    /// largest UTC offset of a local bound (items further inside pass whatever their offset).
    pub(crate) fn needs_offset_check(&self, ms: i64) -> bool {
        let near =
            |edge: i64| edge != i64::MIN && edge != i64::MAX && (ms - edge).abs() <= MAX_OFFSET_MS;
        near(self.local.0) || near(self.local.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> Date {
        s.parse().unwrap()
    }

    fn at(s: &str) -> EventTime {
        EventTime::parse(s).unwrap()
    }

    #[test]
    fn a_day_is_the_items_local_day() {
        let on = TimeWindow::on(day("2001-05-14")).unwrap();
        // 19:36 at UTC−7 is 02:36 UTC on the 15th: on the 14th, as its page shows it.
        assert!(on.contains(at("2001-05-14T19:36:00-07:00")));
        assert!(!on.contains(at("2001-05-15T00:30:00+09:00")));
        assert!(on.contains(at("2001-05-14T00:00:00+14:00")));
        assert!(!on.contains(at("2001-05-13T23:59:59Z")));
        assert!(!on.contains(EventTime::UNDATED));
        assert!(TimeWindow::ALL.contains(EventTime::UNDATED));
    }

    #[test]
    fn ranges_include_both_ends() {
        let w = TimeWindow::between(
            TimeBound::Day(day("2001-05-01")),
            TimeBound::Day(day("2001-05-14")),
        )
        .unwrap();
        assert!(w.contains(at("2001-05-14T23:59:59.999Z")));
        assert!(w.contains(at("2001-05-01T00:00:00Z")));
        assert!(!w.contains(at("2001-05-15T00:00:00Z")));
        let i = TimeWindow::between(
            TimeBound::Instant(at("2001-05-01T10:00:00Z").unix_ms),
            TimeBound::Instant(at("2001-05-01T12:00:00Z").unix_ms),
        )
        .unwrap();
        assert!(i.contains(at("2001-05-01T12:00:00Z")));
        assert!(!i.contains(at("2001-05-01T12:00:00.001Z")));
    }

    #[test]
    fn out_of_range_bounds_are_errors_not_dropped_filters() {
        // The last day of year 9999 has no next midnight jiff can show; the window is still
        // exact (nothing is that late), never "everything".
        let w = TimeWindow::on(day("9999-12-31")).unwrap();
        assert!(!w.contains(at("2001-05-14T19:36:00-07:00")));
        assert!(TimeWindow::from(TimeBound::Instant(i64::MAX)).is_err());
        assert!(w.candidate_ms().is_some_and(|(lo, hi)| lo < hi));
        let empty = TimeWindow::after(TimeBound::Day(day("2001-05-14")))
            .unwrap()
            .and(&TimeWindow::before(TimeBound::Day(day("2001-05-10"))).unwrap());
        assert!(empty.is_empty() && empty.candidate_ms().is_none());
    }

    proptest::proptest! {
        /// The index scan (candidate range) never misses an item the window contains.
        #[test]
        fn candidates_cover_the_window(
            t in -62_000_000_000_000i64..250_000_000_000_000,
            off in -1080i16..=1080,
            d in -700_000i32..2_900_000,
            len in 0i32..40,
        ) {
            let time = EventTime { unix_ms: t, offset_minutes: off };
            let from = Date::constant(1970, 1, 1).checked_add(jiff::Span::new().days(d)).ok();
            if let Some(from) = from {
                let to = from.checked_add(jiff::Span::new().days(len)).unwrap_or(from);
                let w = TimeWindow::between(TimeBound::Day(from), TimeBound::Day(to)).unwrap();
                if w.contains(time) {
                    let (lo, hi) = w.candidate_ms().unwrap();
                    proptest::prop_assert!(lo <= t && t < hi);
                    let local = time.local_date().unwrap();
                    let inside = local >= from && local <= to;
                    proptest::prop_assert!(w.needs_offset_check(t) || inside);
                }
                // Far from every edge, the offset cannot change the answer.
                if !w.needs_offset_check(t) {
                    let utc_day = EventTime::utc(t).local_date().unwrap();
                    proptest::prop_assert_eq!(w.contains(time), utc_day >= from && utc_day <= to);
                }
            }
        }
    }
}
