//! The word lists the rules read: retractions, replacements, additions, changes, one-valued
//! slots, likes and dislikes, fillers, negations and periods.

/// Words that retract something stored on their own ("sold", "cancelled", "left").
pub(super) const RETRACTING_WORDS: &[&str] = &[
    "anymore",
    "stopped",
    "quit",
    "sold",
    "cancelled",
    "canceled",
    "cancel",
    "cancelling",
    "canceling",
    "ended",
    "divorced",
    "died",
    "unsubscribed",
    "never",
    "not",
    "no",
    "left",
    "withdrew",
    "withdrawn",
    "lapse",
    "lapsed",
    "emptied",
    "closed",
];

/// Word pairs that retract something stored ("no longer", "called off", "moved out").
pub(super) const RETRACTING_PAIRS: &[(&str, &str)] = &[
    ("no", "longer"),
    ("any", "more"),
    ("called", "off"),
    ("broke", "up"),
    ("passed", "away"),
    ("gave", "up"),
    ("gave", "away"),
    ("got", "rid"),
    ("moved", "out"),
    ("came", "off"),
    ("pulled", "out"),
    ("dropped", "out"),
];

/// Contractions that negate: `don't` splits into "don" + "t".
pub(super) const NEGATED_AUXILIARIES: &[&str] = &[
    "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "haven", "hasn",
];

/// Words that name what replaced something: a retraction with one is a change (UPDATE).
pub(super) const REPLACING_WORDS: &[&str] = &[
    "instead",
    "switched",
    "replaced",
    "joined",
    "bought",
    "changed",
    "moved",
    "became",
    "upgraded",
    "downgraded",
    "rescheduled",
    "postponed",
    "renamed",
];

/// Words that say the fact is in addition to what is stored ("also", "another").
pub(super) const ADDING_WORDS: &[&str] = &["also", "another", "other", "too", "additionally"];

/// Words that hint a fact stands beside a stored one rather than replacing it ("a second car",
/// "the return flight", "as well", "both"): read by the learned decider only (the rules' own
/// "in addition" is [`ADDING_WORDS`]).
pub(super) const ADDITION_HINTS: &[&str] = &[
    "also",
    "another",
    "other",
    "too",
    "additionally",
    "second",
    "third",
    "return",
    "both",
    "extra",
    "spare",
    "besides",
    "plus",
    "well",
    "either",
    "each",
];

/// Words that hint a fact changes something ("now", "moved", "rescheduled"): read by the
/// learned decider only.
pub(super) const CHANGE_HINTS: &[&str] = &[
    "now",
    "new",
    "changed",
    "change",
    "moved",
    "switched",
    "instead",
    "rescheduled",
    "postponed",
    "pushed",
    "brought",
    "upgraded",
    "downgraded",
    "promoted",
    "became",
    "become",
    "currently",
    "anymore",
    "longer",
    "updated",
    "raised",
    "increased",
    "reduced",
    "dropped",
    "cut",
    "went",
    "got",
    "finally",
    "started",
    "today",
    "actually",
];

/// Words of a slot that holds one value at a time, with the slot they fill: a different filler
/// is a change.
pub(super) const ONE_VALUED: &[(&str, &str)] = &[
    ("favorite", "favourite"),
    ("favourite", "favourite"),
    ("live", "home"),
    ("lives", "home"),
    ("living", "home"),
    ("moved", "home"),
    ("work", "work"),
    ("works", "work"),
    ("job", "work"),
    ("employer", "work"),
    ("name", "name"),
    ("named", "name"),
    ("called", "name"),
    ("surname", "name"),
    ("email", "email"),
    ("phone", "phone"),
    ("mobile", "phone"),
    ("number", "phone"),
    ("address", "address"),
    ("birthday", "birthday"),
    ("born", "birthday"),
    ("age", "age"),
    ("salary", "salary"),
    ("earns", "salary"),
    ("rent", "rent"),
    ("drives", "car"),
    ("car", "car"),
    ("plan", "plan"),
    ("subscription", "plan"),
    ("doctor", "doctor"),
    ("gp", "doctor"),
    ("dentist", "dentist"),
    ("married", "relationship"),
    ("engaged", "relationship"),
    ("dating", "relationship"),
    ("girlfriend", "relationship"),
    ("boyfriend", "relationship"),
    ("studies", "study"),
    ("studying", "study"),
    ("major", "study"),
    ("prefers", "preference"),
    ("prefer", "preference"),
    ("weighs", "weight"),
    ("weight", "weight"),
    ("provider", "provider"),
    ("bank", "bank"),
    ("school", "school"),
    ("manager", "manager"),
];

/// Words that say the person dislikes something (a stored liking of it is retracted).
pub(super) const DISLIKING: &[&str] = &[
    "dislike", "dislikes", "hate", "hates", "detest", "detests", "loathe",
];
/// Words that say the person likes something.
pub(super) const LIKING: &[&str] = &[
    "like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "fan",
];

/// Words that carry no content for these rules, beyond the shared stopwords.
pub(super) const FILLER: &[&str] = &[
    "user",
    "now",
    "currently",
    "these",
    "days",
    "also",
    "really",
    "very",
];

/// Capitalised words that are not names (days, months are values of their own).
pub(super) const NOT_NAMES: &[&str] = &["I", "Mr", "Mrs", "Ms", "Dr", "St"];

/// Words that negate without saying that something ended: with "until" they only put a date on
/// a fact ("doesn't expire until 2034"), which retracts nothing.
pub(super) const NEGATIONS: &[&str] = &["not", "no", "never"];

/// Words that name a period: sharing "a year" or "a month" does not make two amounts one.
pub(super) const PERIODS: &[&str] = &[
    "year",
    "month",
    "week",
    "day",
    "night",
    "quarter",
    "time",
    "fortnight",
    "hour",
];

/// Words that link the two sides of a preference ("prefers tea over coffee").
pub(super) const PREFERENCE_LINKS: &[&str] = &["to", "over", "than"];
