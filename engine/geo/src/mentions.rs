//! Place names mentioned in a free text ("photos I took in Paris", "from Rome", "in Lisbon last
//! spring").
//!
//! The rule, in order:
//!
//! 1. The text is cut into words ([`crate::fold::words`]). From each word, the longest run of at
//!    most [`MAX_WORDS`] words that is a name of the index (names and alternates) is the
//!    candidate; if it is refused, shorter runs from the same word are tried, then the next
//!    word. A run that is taken is skipped over ("New York City" is one mention, not three).
//! 2. A run is *cued* when the word before it is one of "in", "at", "from", "near", "to",
//!    "around", "outside", "towards", "visiting": that is stronger evidence of a place.
//! 3. Refused outright: names of fewer than 3 letters ("Of", Turkey), and one-word names that are
//!    months, weekdays or everyday function words ("May", "March", "Sunday", "Is", "Why"): a
//!    short list in this file.
//! 4. A one-word name that is also a common English word ("Nice", "Bath", "Mobile", "Reading",
//!    "Split": the `#common` list of the data, GeoNames names found in an English word list) is
//!    a place only when cued *and* written with a capital: "photos from Nice" is Nice, "a nice
//!    day in Nice" has one mention, "in nice weather" none.
//! 5. Without a cue, only a place's own GeoNames name counts (not its alternates, which hold
//!    given names: "Caroline" is an alternate of Carolina, Puerto Rico), and a one-word name
//!    needs a place of 100,000 people or more ("Paris photos", "Lisbon 2019"), a longer one
//!    15,000 ("New York City"); a cued name may be an alternate ("from Roma") of any place.
//! 6. The place a name resolves to is the one [`crate::lookup`] would give (most populous, an
//!    alternate only if ten times more so).
//!
//! Known limits: a person's name that is also a large city's own name ("dinner with Florence",
//! "with Victoria") is taken for the city; a common-word name typed without its capital ("photos
//! from nice") is not found; countries and regions are not places here ("from Sweden" finds
//! nothing).

use crate::data::Table;
use crate::fold::{Word, words};
use crate::forward::{Entry, NameIndex};
use crate::place::Place;

/// Longest name tried, in words ("Santa Cruz de la Sierra" is five).
pub(crate) const MAX_WORDS: usize = 5;
use crate::bloom::{Bloom, UNCUED_LONGER, UNCUED_ONE_WORD};

const CUES: &[&str] = &[
    "in", "at", "from", "near", "to", "around", "outside", "towards", "toward", "visiting",
];

/// One-word names never taken for a place, whatever the case and cue: months, days and seasons,
/// then everyday words of questions about one's own memories.
const NEVER: &str = "\
    january february march april may june july august september october november december \
    monday tuesday wednesday thursday friday saturday sunday spring summer autumn fall \
    winter \
    the and but for not you your our she her him his they them their this that these those \
    was were are is be been had has have did does what when where which who why how all any \
    some one two last next first new old day days week year time photo photos picture \
    pictures took taken trip home here there with about over after before during mail email \
    emails message messages note notes friend friends family city town village centre center";

/// A place named in a text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mention {
    /// The place the name resolves to.
    pub place: &'static Place,
    /// Byte offset of the name's first character in the text.
    pub start: usize,
    /// Byte offset just past the name's last character.
    pub end: usize,
    /// The name came right after "in", "at", "from", "near", "to", … (stronger evidence).
    pub cued: bool,
}

/// The places named in `text`, in text order (see the module doc for the rule).
pub(crate) fn find(text: &str, table: &'static Table, names: &NameIndex) -> Vec<Mention> {
    let words = words(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let cued = i > 0 && CUES.contains(&words[i - 1].key.as_str());
        let longest = MAX_WORDS.min(words.len() - i);
        let found = (1..=longest)
            .rev()
            .find_map(|n| accept(&words[i..i + n], cued, table, names).map(|p| (n, p)));
        match found {
            Some((n, place)) => {
                out.push(Mention {
                    place: &table.places[place],
                    start: words[i].start,
                    end: words[i + n - 1].end,
                    cued,
                });
                i += n;
            }
            None => i += 1,
        }
    }
    out
}

/// The name screen built into the binary (`build.rs`): see [`crate::bloom`].
const SCREEN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/name-screen.bin"));

/// Whether `text` may name a place under the rule of [`find`], decided from the screen alone
/// (no gazetteer decoded): `false` means [`find`] finds nothing; `true` that it may. A screen
/// that does not read (it cannot: it is part of the build) answers `true`.
pub(crate) fn may_name_a_place(text: &str) -> bool {
    let Some([cued_names, common_names, uncued_names]) =
        Bloom::read_all(SCREEN).and_then(|f| <[Bloom<'_>; 3]>::try_from(f).ok())
    else {
        return true;
    };
    let words = words(text);
    (0..words.len()).any(|i| {
        let cued = i > 0 && CUES.contains(&words[i - 1].key.as_str());
        let longest = MAX_WORDS.min(words.len() - i);
        (1..=longest).any(|n| {
            let run = &words[i..i + n];
            let key = run_key(run);
            if refused_outright(run, &key) {
                return false;
            }
            if cued {
                cued_names.contains(&key)
                    || (n == 1 && run[0].capital && common_names.contains(&key))
            } else {
                uncued_names.contains(&key)
            }
        })
    })
}

/// The key the name index is asked for a run of words.
fn run_key(run: &[Word]) -> String {
    run.iter()
        .map(|w| w.key.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rule 3: fewer than 3 letters, or one word that is a month, a day or a function word.
fn refused_outright(run: &[Word], key: &str) -> bool {
    let letters = key.chars().filter(char::is_ascii_alphabetic).count();
    letters < 3
        || (run.len() == 1 && (NEVER.split_whitespace().any(|w| w == key) || CUES.contains(&key)))
}

/// The place the run `run` names, if the rule takes it.
fn accept(run: &[Word], cued: bool, table: &Table, names: &NameIndex) -> Option<usize> {
    let key = run_key(run);
    let entries = names.get(&key)?;
    if refused_outright(run, &key) {
        return None;
    }
    let one_word = run.len() == 1;
    if one_word && table.common.contains(&key) && !(cued && run[0].capital) {
        return None;
    }
    let (place, needed) = if cued {
        (NameIndex::resolve(entries, &table.places)?, 0)
    } else {
        // Without a cue only a place's own name counts: alternates hold too many given names
        // ("Caroline" is an alternate of Carolina, Puerto Rico).
        let primary: Vec<Entry> = entries.iter().copied().filter(|e| e.primary).collect();
        let needed = if one_word {
            UNCUED_ONE_WORD
        } else {
            UNCUED_LONGER
        };
        (NameIndex::resolve(&primary, &table.places)?, needed)
    };
    (table.places[place].population >= needed).then_some(place)
}
