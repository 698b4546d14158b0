//! Round trip: any statement printed and parsed again is the same statement, and no input
//! makes the parser panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use jiff::Timestamp;
use jiff::civil::Date;
use memdb::Source;
use memdb_query::{
    Distance, DistanceUnit, Filter, Forget, History, Instant, Items, Order, Paths, Query, Recall,
    Show, Statement, TimeFilter, TimeTravel, Unit, parse, parse_script,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        any::<String>(),
        Just("it's ''quoted''".to_owned()),
        Just("-- not a comment; RECALL".to_owned()),
    ]
}

fn date() -> impl Strategy<Value = Date> {
    (1900i16..2100, 1i8..=12, 1i8..=28).prop_map(|(y, m, d)| Date::new(y, m, d).unwrap())
}

fn time_travel() -> impl Strategy<Value = TimeTravel> {
    (prop::option::of(instant()), prop::option::of(instant()))
        .prop_map(|(as_of, valid_at)| TimeTravel { as_of, valid_at })
}

fn instant() -> impl Strategy<Value = Instant> {
    prop_oneof![
        date().prop_map(Instant::Day),
        (-2_000_000_000_000i64..4_000_000_000_000)
            .prop_map(|ms| Instant::At(Timestamp::from_millisecond(ms).unwrap())),
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop::sample::select(vec![
        Unit::Hours,
        Unit::Days,
        Unit::Weeks,
        Unit::Months,
        Unit::Years,
    ])
}

fn time_filter() -> impl Strategy<Value = TimeFilter> {
    prop_oneof![
        (instant(), instant()).prop_map(|(a, b)| TimeFilter::Between(a, b)),
        instant().prop_map(TimeFilter::AtOrAfter),
        instant().prop_map(TimeFilter::After),
        instant().prop_map(TimeFilter::Before),
        instant().prop_map(TimeFilter::AtOrBefore),
        date().prop_map(TimeFilter::On),
        (any::<u32>(), unit()).prop_map(|(n, u)| TimeFilter::Last(n, u)),
        text().prop_map(TimeFilter::Words),
    ]
}

fn source() -> impl Strategy<Value = Source> {
    prop::sample::select(Source::ALL.to_vec())
}

fn filter() -> impl Strategy<Value = Filter> {
    prop_oneof![
        prop::collection::vec(source(), 1..4).prop_map(Filter::Source),
        time_filter().prop_map(Filter::Time),
        text().prop_map(Filter::Tag),
        text().prop_map(Filter::Entity),
        (
            -90.0f64..=90.0,
            -180.0f64..=180.0,
            0.0f64..1e6,
            prop::sample::select(vec![DistanceUnit::M, DistanceUnit::Km, DistanceUnit::Mi])
        )
            .prop_map(|(lat, lon, value, unit)| Filter::Near {
                lat,
                lon,
                radius: Distance { value, unit },
            }),
        (
            text().prop_filter("a place has a name", |t| !t.trim().is_empty()),
            0.0f64..1e6,
            prop::sample::select(vec![DistanceUnit::M, DistanceUnit::Km, DistanceUnit::Mi])
        )
            .prop_map(|(name, value, unit)| Filter::NearPlace {
                name,
                radius: Distance { value, unit },
            }),
        any::<u64>().prop_map(Filter::Supersedes),
        Just(Filter::Current),
    ]
}

fn query() -> impl Strategy<Value = Query> {
    let filters = || prop::collection::vec(filter(), 0..4);
    let top = || prop::option::of(any::<u64>());
    prop_oneof![
        (
            text(),
            filters(),
            time_travel(),
            prop::option::of(date()),
            top()
        )
            .prop_map(|(text, filters, at, asked_on, top)| {
                Query::Recall(Recall {
                    text,
                    filters,
                    at,
                    asked_on,
                    top,
                })
            }),
        (
            prop::collection::vec(text(), 1..4),
            prop::option::of(any::<u32>()),
            top()
        )
            .prop_map(|(phrases, min_overlap, top)| Query::Paths(Paths {
                phrases,
                min_overlap,
                top
            })),
        (
            filters(),
            prop::option::of(prop::sample::select(vec![Order::Asc, Order::Desc])),
            time_travel(),
            top()
        )
            .prop_map(|(filters, order, at, top)| Query::Items(Items {
                filters,
                at,
                order,
                top
            })),
        (any::<u64>(), time_travel()).prop_map(|(id, at)| Query::History(History { id, at })),
    ]
}

fn statement() -> impl Strategy<Value = Statement> {
    prop_oneof![
        query().prop_map(Statement::Query),
        query().prop_map(Statement::Explain),
        Just(Statement::Show(Show::Stats)),
        any::<u64>().prop_map(|n| Statement::Show(Show::Item(n))),
        text().prop_map(|n| Statement::Show(Show::Node(n))),
        any::<u64>().prop_map(|n| Statement::Show(Show::Path(n))),
        date().prop_map(|d| Statement::Show(Show::Page(d))),
        (text(), date(), 0..3u8).prop_map(|(policy, as_of, mode)| {
            Statement::Forget(Forget {
                policy,
                as_of,
                dry_run: mode == 1,
                drop_originals: mode == 2,
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn print_then_parse_gives_the_same_statement(s in statement()) {
        let printed = s.to_string();
        let parsed = parse(&printed).map_err(|e| TestCaseError::fail(e.render(&printed)))?;
        prop_assert_eq!(parsed, s);
    }

    #[test]
    fn scripts_of_printed_statements_parse_back(list in prop::collection::vec(statement(), 0..5)) {
        let script: Vec<String> = list.iter().map(ToString::to_string).collect();
        prop_assert_eq!(parse_script(&script.join(";\n")).unwrap(), list);
    }

    #[test]
    fn any_text_parses_or_fails_with_a_position_inside_it(input in any::<String>()) {
        if let Err(e) = parse(&input) {
            prop_assert!(e.span.start <= input.len());
            prop_assert!(e.line >= 1 && e.column >= 1);
            let _ = e.render(&input);
        }
    }

    #[test]
    fn mangled_statements_never_panic(s in statement(), cut in any::<prop::sample::Index>(), junk in "[(),;=<>'a-zA-Z0-9 -]{0,4}") {
        let printed = s.to_string();
        let mut at = cut.index(printed.len() + 1);
        while !printed.is_char_boundary(at) {
            at -= 1;
        }
        let mangled = format!("{}{junk}{}", &printed[..at], &printed[at..]);
        if let Err(e) = parse(&mangled) {
            let _ = e.render(&mangled);
        }
    }
}
