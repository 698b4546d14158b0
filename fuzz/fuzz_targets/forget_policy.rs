//! Forgetting policies are TOML files a person writes (SPEC.md §5.5): parsing never panics,
//! and an accepted policy is valid and maps every age to one of its stages, never rising.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb::forget::Policy;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(policy) = Policy::from_toml(&text) {
        policy.validate().expect("an accepted policy is valid");
        let mut last = 0;
        for age in [
            i64::MIN,
            -1,
            0,
            1,
            30,
            179,
            180,
            365,
            729,
            730,
            10_000,
            i64::MAX,
        ] {
            let stage = policy.stage_for(age);
            assert!(stage < policy.stages.len());
            assert!(stage >= last, "stages never go back as pages age");
            last = stage;
        }
    }
});
