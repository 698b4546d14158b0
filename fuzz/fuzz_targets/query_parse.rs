//! Arbitrary text into the query parser (memdb-query), which reads every statement a person
//! or an application types: never panics, every error points inside the input and renders,
//! and every statement it accepts prints to text that parses back to the same statement.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_query::{parse, parse_script};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse(&text) {
        Ok(statement) => {
            let printed = statement.to_string();
            assert_eq!(parse(&printed).as_ref(), Ok(&statement), "{printed}");
        }
        Err(e) => {
            assert!(e.span.start <= text.len() && e.span.end <= text.len());
            let _ = e.render(&text);
        }
    }
    if let Ok(statements) = parse_script(&text) {
        let printed: Vec<String> = statements.iter().map(ToString::to_string).collect();
        assert_eq!(parse_script(&printed.join(";")), Ok(statements));
    }
});
