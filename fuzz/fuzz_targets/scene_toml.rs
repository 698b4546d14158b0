//! Arbitrary text as a scene catalogue (`memdb::gate::Scenes::from_toml`): never panics, and
//! what it accepts keeps the matcher's invariants — named, uniquely named scenes, each with
//! at least one normalised, non-empty, duplicate-free word — reads back from its own TOML as
//! it is, and builds a matcher that can read the text itself, whose rule predicates (`unless`)
//! only ever take hits away.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb::gate::{Gum, RulePredicates, Scenes, normalise};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(scenes) = Scenes::from_toml(&text) else {
        return;
    };
    for (i, scene) in scenes.scenes().iter().enumerate() {
        assert!(!scene.name.trim().is_empty());
        assert!(
            !scenes.scenes()[..i]
                .iter()
                .any(|s| s.name.eq_ignore_ascii_case(&scene.name))
        );
        assert!(!scene.words.is_empty());
        for (j, word) in scene.words.iter().enumerate() {
            assert!(!word.is_empty());
            assert_eq!(&normalise(word), word);
            assert!(!scene.words[..j].contains(word));
        }
    }
    assert_eq!(Scenes::from_toml(&scenes.to_toml()).as_ref(), Ok(&scenes));
    if let Ok(gum) = Gum::new(scenes) {
        let hits = gum.hits(&text, None);
        assert_eq!(hits.is_memorable(), gum.passes(&text, None));
        // The rule predicates only take hits away.
        if let Ok(predicates) = RulePredicates::new(&gum) {
            let ruled = predicates.hits(&gum, &text, None);
            assert!(
                ruled
                    .hits
                    .scenes
                    .iter()
                    .all(|h| hits.scenes.iter().any(|g| g.scene == h.scene))
            );
            assert_eq!(
                ruled.hits.is_memorable(),
                predicates.passes(&gum, &text, None)
            );
        }
    }
});
