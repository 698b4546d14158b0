//! The phrasing corpus: questions as people ask them, each with the window it names.

use super::*;

fn day(s: &str) -> Date {
    s.parse().unwrap()
}

/// The first phrase of `text` asked on `today`, as (first, last, cued, phrase as written).
fn first(text: &str, today: &str) -> Option<(String, String, bool, String)> {
    time_phrases(text, day(today)).into_iter().next().map(|p| {
        (
            p.first.map_or("..".into(), |d| d.to_string()),
            p.last.map_or("..".into(), |d| d.to_string()),
            p.cued,
            text[p.start..p.end].to_owned(),
        )
    })
}

#[test]
fn phrasings_name_their_windows() {
    let today = "2026-11-29"; // a Sunday
    let cases: &[(&str, &str, &str, bool, &str)] = &[
        // question, first, last, cued, phrase
        (
            "what did I do in May 2001?",
            "2001-05-01",
            "2001-05-31",
            true,
            "May 2001",
        ),
        (
            "where was I in August 2002?",
            "2002-08-01",
            "2002-08-31",
            true,
            "August 2002",
        ),
        (
            "photos from summer 2002",
            "2002-06-01",
            "2002-08-31",
            true,
            "summer 2002",
        ),
        (
            "in the summer of 2002",
            "2002-06-01",
            "2002-08-31",
            true,
            "the summer of 2002",
        ),
        (
            "what happened on 14 May?",
            "2026-05-14",
            "2026-05-14",
            true,
            "14 May",
        ),
        (
            "mail on May 14, 2001",
            "2001-05-14",
            "2001-05-14",
            true,
            "May 14, 2001",
        ),
        (
            "the 14th of May 2001",
            "2001-05-14",
            "2001-05-14",
            false,
            "the 14th of May 2001",
        ),
        (
            "what did I do in 2014",
            "2014-01-01",
            "2014-12-31",
            true,
            "2014",
        ),
        (
            "during the first week of December 2001",
            "2001-12-01",
            "2001-12-07",
            true,
            "the first week of December 2001",
        ),
        (
            "the last week of May 2001",
            "2001-05-25",
            "2001-05-31",
            false,
            "the last week of May 2001",
        ),
        (
            "last Christmas",
            "2025-12-24",
            "2025-12-26",
            true,
            "last Christmas",
        ),
        (
            "at Christmas 2001",
            "2001-12-24",
            "2001-12-26",
            false,
            "Christmas 2001",
        ),
        (
            "Easter 2002",
            "2002-03-29",
            "2002-04-01",
            false,
            "Easter 2002",
        ),
        (
            "photos from last month",
            "2026-10-01",
            "2026-10-31",
            true,
            "last month",
        ),
        (
            "two years ago",
            "2024-01-01",
            "2024-12-31",
            true,
            "two years ago",
        ),
        ("a week ago", "2026-11-16", "2026-11-22", true, "a week ago"),
        ("3 days ago", "2026-11-26", "2026-11-26", true, "3 days ago"),
        (
            "what did I eat yesterday",
            "2026-11-28",
            "2026-11-28",
            true,
            "yesterday",
        ),
        (
            "the day before yesterday",
            "2026-11-27",
            "2026-11-27",
            true,
            "the day before yesterday",
        ),
        (
            "this spring",
            "2026-03-01",
            "2026-05-31",
            true,
            "this spring",
        ),
        (
            "last summer",
            "2026-06-01",
            "2026-08-31",
            true,
            "last summer",
        ),
        ("last week", "2026-11-16", "2026-11-22", true, "last week"),
        ("this week", "2026-11-23", "2026-11-29", true, "this week"),
        ("last year", "2025-01-01", "2025-12-31", true, "last year"),
        (
            "in the last 3 months",
            "2026-08-30",
            "2026-11-29",
            true,
            "in the last 3 months",
        ),
        (
            "over the past two weeks",
            "2026-11-16",
            "2026-11-29",
            true,
            "over the past two weeks",
        ),
        (
            "in early May 2001",
            "2001-05-01",
            "2001-05-10",
            true,
            "early May 2001",
        ),
        (
            "mid-May 2001",
            "2001-05-11",
            "2001-05-20",
            false,
            "mid-May 2001",
        ),
        ("late 2001", "2001-09-01", "2001-12-31", false, "late 2001"),
        (
            "since March 2001",
            "2001-03-01",
            "2026-11-29",
            true,
            "since March 2001",
        ),
        ("before 2002", "..", "2001-12-31", true, "before 2002"),
        ("after May 2001", "2001-06-01", "..", true, "after May 2001"),
        (
            "between May and July 2001",
            "2001-05-01",
            "2001-07-31",
            true,
            "between May and July 2001",
        ),
        (
            "from June to August 2002",
            "2002-06-01",
            "2002-08-31",
            true,
            "from June to August 2002",
        ),
        ("in May", "2026-05-01", "2026-05-31", true, "May"),
        ("last May", "2026-05-01", "2026-05-31", true, "last May"),
        (
            "on 2001-05-14",
            "2001-05-14",
            "2001-05-14",
            true,
            "2001-05-14",
        ),
        (
            "last Friday",
            "2026-11-27",
            "2026-11-27",
            true,
            "last Friday",
        ),
        ("on Saturday", "2026-11-28", "2026-11-28", true, "Saturday"),
        (
            "New Year's Eve 2001",
            "2001-12-31",
            "2001-12-31",
            false,
            "New Year's Eve 2001",
        ),
        (
            "the winter of 2001",
            "2001-12-01",
            "2002-02-28",
            false,
            "the winter of 2001",
        ),
        (
            "Thanksgiving 2001",
            "2001-11-22",
            "2001-11-22",
            false,
            "Thanksgiving 2001",
        ),
        ("the 2002 budget", "2002-01-01", "2002-12-31", false, "2002"),
    ];
    for (text, a, b, cued, phrase) in cases {
        assert_eq!(
            first(text, today),
            Some(((*a).into(), (*b).into(), *cued, (*phrase).into())),
            "{text:?}"
        );
    }
}

#[test]
fn words_that_are_not_times_name_none() {
    let today = "2026-11-29";
    for text in [
        "may I see the photos of my handwritten notes",
        "what did Caroline research?",
        "March on, said the captain",
        "$2001 invoice",
        "the photos I took in Lisbon",
        "what did my sister say about the new job",
        "call me at 5",
        "from Madrid to Paris",
        // A fuzzer's find: an empty span.
        "qq past'?past 0 days",
    ] {
        assert_eq!(first(text, today), None, "{text:?}");
    }
}

#[test]
fn a_day_that_does_not_exist_reads_as_its_month() {
    assert_eq!(
        first("on 30 February 2001", "2026-11-29").map(|p| (p.0, p.1, p.3)),
        Some((
            "2001-02-01".into(),
            "2001-02-28".into(),
            "February 2001".into()
        ))
    );
}

#[test]
fn a_time_without_a_year_is_the_latest_that_has_begun() {
    // Asked in March: "in May" is last year's May; "this summer" too.
    assert_eq!(
        first("in May", "2002-03-10").map(|p| p.0),
        Some("2001-05-01".into())
    );
    assert_eq!(
        first("last Christmas", "2001-12-25").map(|p| (p.0, p.1)),
        Some(("2000-12-24".into(), "2000-12-26".into()))
    );
    assert_eq!(
        first("this summer", "2002-07-04").map(|p| p.0),
        Some("2002-06-01".into())
    );
}

proptest::proptest! {
    /// Any text, any day: phrases or none, in order, inside the text, never a panic.
    #[test]
    fn any_text_is_read_without_panic(text in "\\PC{0,80}", days in -50_000i64..50_000) {
        let today = Date::new(2000, 1, 1).unwrap().checked_add(days.days()).unwrap();
        let phrases = time_phrases(&text, today);
        let mut end = 0;
        for p in phrases {
            proptest::prop_assert!(p.start >= end && p.start < p.end && p.end <= text.len());
            end = p.end;
            if let (Some(a), Some(b)) = (p.first, p.last) {
                proptest::prop_assert!(a <= b);
            }
        }
    }
}
