//! Who may destroy what through an agent interface (the MCP server, the Python handle): the
//! capabilities the person who starts the interface grants, and the rule every delete, update,
//! forgetting and purge of those interfaces is checked against (SPEC.md §11.1).
//!
//! Invariants:
//! - Without a capability an interface reads, adds, and updates or retires the *memories* it
//!   could have made — remembered facts ([`is_remembered_fact`]) within the caller's scope —
//!   and nothing else: an imported photo, mail or chat is never changed or retired without
//!   [`Capability::Delete`].
//! - A refusal names the capability that would allow it; nothing is written before the check.
//! - The rule reads only the item's fields and the caller's scope, so every surface decides the
//!   same way for the same item.

use std::fmt;

use memdb_formats::item::{ItemFields, Scope};

use super::is_remembered_fact;

/// One thing an agent interface may do only when the person starting it allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Retire (soft-delete) or update items that are not the caller's own memories, and
    /// delete every memory of a scope at once.
    Delete,
    /// Run optical forgetting for real (not as a dry run), which may drop photo originals.
    Forget,
    /// Remove an item and its history physically (no undo).
    Purge,
}

impl Capability {
    /// Every capability, in the order they are listed.
    pub const ALL: [Capability; 3] = [Capability::Delete, Capability::Forget, Capability::Purge];

    /// The name a flag or argument uses (`delete`, `forget`, `purge`).
    pub fn name(self) -> &'static str {
        match self {
            Capability::Delete => "delete",
            Capability::Forget => "forget",
            Capability::Purge => "purge",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Capability::Delete => 1,
            Capability::Forget => 2,
            Capability::Purge => 4,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Capability {
    type Err = String;

    fn from_str(text: &str) -> Result<Capability, String> {
        let text = text.trim();
        Capability::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                format!("unknown capability {text:?} (the capabilities are delete, forget, purge)")
            })
    }
}

/// A set of [`Capability`]; the default grants none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities(u8);

impl Capabilities {
    /// No capability: read, add, and change only the caller's own memories.
    pub const NONE: Capabilities = Capabilities(0);

    /// The set of `capabilities`.
    pub fn of(capabilities: impl IntoIterator<Item = Capability>) -> Capabilities {
        Capabilities(capabilities.into_iter().fold(0, |bits, c| bits | c.bit()))
    }

    /// Parses a comma-separated list (`"delete,forget"`); blanks between commas are ignored.
    pub fn parse_list(text: &str) -> Result<Capabilities, String> {
        let mut set = Capabilities::NONE;
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            set = set.with(part.parse()?);
        }
        Ok(set)
    }

    /// This set and `capability`.
    pub fn with(self, capability: Capability) -> Capabilities {
        Capabilities(self.0 | capability.bit())
    }

    /// Whether `capability` is granted.
    pub fn allows(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }

    /// The granted capabilities' names, in order.
    pub fn names(self) -> Vec<&'static str> {
        Capability::ALL
            .into_iter()
            .filter(|c| self.allows(*c))
            .map(Capability::name)
            .collect()
    }

    /// `Ok` when `capability` is granted, else the refusal naming it and what it was for.
    pub fn require(self, capability: Capability, action: impl Into<String>) -> Result<(), Refusal> {
        if self.allows(capability) {
            Ok(())
        } else {
            Err(Refusal::Needs {
                capability,
                action: action.into(),
            })
        }
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

/// Why an agent interface may not change an item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The item lies outside the caller's scope (surfaces report it as not found: a caller
    /// learns nothing of other scopes).
    #[error("memory {id} is not in the caller's scope")]
    OutOfScope {
        /// The item.
        id: u64,
    },
    /// The action needs a capability that was not granted.
    #[error("{action} needs the `{capability}` capability")]
    Needs {
        /// The capability that would allow it.
        capability: Capability,
        /// What was asked, in words ("deleting memory 12, an imported email").
        action: String,
    },
}

impl Refusal {
    /// The capability that would allow the action (none for an item out of scope).
    pub fn capability(&self) -> Option<Capability> {
        match self {
            Refusal::OutOfScope { .. } => None,
            Refusal::Needs { capability, .. } => Some(*capability),
        }
    }
}

/// What an agent is asking to do to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Retire it (a soft delete: history kept, undoable).
    Retire,
    /// Give it new fields (its old version stays in its history).
    Update,
}

impl Change {
    fn verb(self) -> &'static str {
        match self {
            Change::Retire => "deleting",
            Change::Update => "updating",
        }
    }
}

/// Checks whether a caller of `scope` holding `granted` may make `change` to item `id` of
/// `fields`: the item must lie within the caller's scope, and unless [`Capability::Delete`]
/// is granted it must be a remembered fact (a memory an agent or person made through
/// `remember`/`add_memories`), never an imported photo, mail, chat or note.
pub fn check_change(
    id: u64,
    fields: &ItemFields,
    scope: &Scope,
    granted: Capabilities,
    change: Change,
) -> Result<(), Refusal> {
    if !fields.scope.within(scope) {
        return Err(Refusal::OutOfScope { id });
    }
    if is_remembered_fact(fields) {
        return Ok(());
    }
    granted.require(
        Capability::Delete,
        format!(
            "{} item {id} (an imported {}, not a memory an agent made)",
            change.verb(),
            fields.source
        ),
    )
}

#[cfg(test)]
mod tests {
    use memdb_formats::item::{EventTime, Source};

    use super::*;

    fn item(source: Source, memory: bool, user: Option<&str>) -> ItemFields {
        let mut fields = ItemFields::new(source, EventTime::utc(0));
        if memory {
            fields.tags = vec![crate::ops::MEMORY_TAG.to_owned()];
        }
        fields.scope = Scope::new(user.map(str::to_owned), None, None);
        fields
    }

    fn alice() -> Scope {
        Scope::new(Some("alice".to_owned()), None, None)
    }

    #[test]
    fn capability_lists_parse_and_print_in_order() {
        let caps = Capabilities::parse_list("purge, delete,,").unwrap();
        assert!(caps.allows(Capability::Delete) && caps.allows(Capability::Purge));
        assert!(!caps.allows(Capability::Forget));
        assert_eq!(caps.to_string(), "delete,purge");
        assert_eq!(Capabilities::NONE.to_string(), "none");
        let err = Capabilities::parse_list("delete,drop").unwrap_err();
        assert!(err.contains("\"drop\""), "{err}");
    }

    #[test]
    fn without_delete_only_own_memories_change() {
        let none = Capabilities::NONE;
        // A memory of the caller's scope: retire and update are allowed.
        let own = item(Source::Note, true, Some("alice"));
        assert_eq!(
            check_change(1, &own, &alice(), none, Change::Retire),
            Ok(())
        );
        assert_eq!(
            check_change(1, &own, &alice(), none, Change::Update),
            Ok(())
        );
        // An imported photo, mail or plain note: refused, naming the capability.
        for source in [Source::Image, Source::Email, Source::Chat, Source::Note] {
            let imported = item(source, false, None);
            let refusal =
                check_change(2, &imported, &Scope::default(), none, Change::Retire).unwrap_err();
            assert_eq!(refusal.capability(), Some(Capability::Delete), "{source}");
            assert!(refusal.to_string().contains("`delete`"), "{refusal}");
        }
        // A tagged memory that is not a note is not a remembered fact either.
        let tagged_mail = item(Source::Email, true, None);
        assert!(check_change(3, &tagged_mail, &Scope::default(), none, Change::Retire).is_err());
    }

    #[test]
    fn scope_comes_before_capability() {
        let bobs = item(Source::Note, true, Some("bob"));
        let all = Capabilities::of(Capability::ALL);
        assert_eq!(
            check_change(4, &bobs, &alice(), all, Change::Retire),
            Err(Refusal::OutOfScope { id: 4 })
        );
        // An unscoped imported item is outside every scoped caller's reach, even with delete.
        let photo = item(Source::Image, false, None);
        assert!(check_change(5, &photo, &alice(), all, Change::Retire).is_err());
        assert_eq!(
            check_change(5, &photo, &Scope::default(), all, Change::Retire),
            Ok(())
        );
    }
}
