//! E-mail into email items (SPEC.md §8.3): one RFC 5322 message per `.eml` file, or every
//! message of an mbox file.
//!
//! MIME structure, transfer encodings, RFC 2047 encoded words, RFC 2231 parameters and
//! charsets are decoded by `mail-parser` (Stalwart's; it decodes the charsets of the test
//! corpora — ISO-8859-x, windows-125x, UTF-7, UTF-16, ISO-2022-JP, EUC-JP, Shift_JIS, EUC-KR,
//! Big5 — and bounds its own nesting). This module maps a parsed message onto an item and
//! decides what makes one unusable: nothing that reads as a message (no header at all), or no
//! usable time — a missing or impossible `Date` (`59:10`, year 3609) falls back to the time the
//! caller gives (the file's modification time), and the item is tagged `time:file`, so a
//! message is not lost for a bad header.
//!
//! Invariants (fuzz target `mail_message`): no input panics; every item returned passes
//! [`ItemFields::validate`](crate::item::ItemFields::validate); an item's text is bounded
//! ([`MAX_BODY_CHARS`]) whatever the input claims.

use std::io::Cursor;
use std::path::Path;

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::{Address, MessageParser, MimeHeaders};

use super::{ImportReport, Imported, error};
use crate::ImportErrorKind;
use crate::item::{EventTime, ItemDraft, ItemFields, Source};

/// Characters of body text kept per message; the rest is cut (and the item tagged
/// `truncated`). A person's mail is rarely longer; a pasted log can be megabytes.
pub const MAX_BODY_CHARS: usize = 256 * 1024;

/// The items of one `.eml` file: one item or one error. `name` is the file's name as the
/// import calls it (its external id when the message has no Message-ID).
pub fn parse_eml(
    file: &Path,
    name: &str,
    bytes: &[u8],
    file_time: Option<EventTime>,
) -> ImportReport {
    let mut report = ImportReport::default();
    match message_item(bytes, name, file_time) {
        Ok(draft) => report.items.push(Imported {
            location: "message".to_owned(),
            draft,
        }),
        Err(kind) => report.errors.push(error(file, None, kind)),
    }
    report
}

/// The items of an mbox file: every message separated by a `From ` line, each an item or an
/// error located as `message N` (1-based).
pub fn parse_mbox(
    file: &Path,
    name: &str,
    bytes: &[u8],
    file_time: Option<EventTime>,
) -> ImportReport {
    let mut report = ImportReport::default();
    for (i, message) in MessageIterator::new(Cursor::new(bytes)).enumerate() {
        let location = format!("message {}", i + 1);
        let result = match &message {
            Ok(m) => message_item(m.contents(), &format!("{name}#{}", i + 1), file_time),
            Err(e) => Err(ImportErrorKind::Syntax(format!("mbox: {e}"))),
        };
        match result {
            Ok(draft) => report.items.push(Imported { location, draft }),
            Err(kind) => report.errors.push(error(file, Some(location), kind)),
        }
    }
    if report.items.is_empty() && report.errors.is_empty() {
        report.errors.push(error(
            file,
            None,
            ImportErrorKind::Syntax("no message in this mbox (no `From ` line)".to_owned()),
        ));
    }
    report
}

fn addresses(address: Option<&Address<'_>>) -> Vec<(Option<String>, Option<String>)> {
    address
        .map(|a| {
            a.iter()
                .map(|addr| {
                    (
                        addr.name().map(clean).filter(|n| !n.is_empty()),
                        addr.address().map(clean).filter(|a| !a.is_empty()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One line, no control characters, trimmed.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn display((name, address): &(Option<String>, Option<String>)) -> Option<String> {
    match (name, address) {
        (Some(n), Some(a)) if n != a => Some(format!("{n} <{a}>")),
        (_, Some(a)) => Some(a.clone()),
        (Some(n), None) => Some(n.clone()),
        (None, None) => None,
    }
}

fn message_time(message: &mail_parser::Message<'_>) -> Result<EventTime, ImportErrorKind> {
    let date = message
        .date()
        .ok_or_else(|| ImportErrorKind::MissingField("Date".to_owned()))?;
    let invalid = |reason: String| ImportErrorKind::InvalidField {
        field: "Date".to_owned(),
        reason,
    };
    if !date.is_valid() {
        return Err(invalid(format!("not a valid date: {date}")));
    }
    let civil = jiff::civil::DateTime::new(
        i16::try_from(date.year).map_err(|_| invalid(format!("year {}", date.year)))?,
        date.month as i8,
        date.day as i8,
        date.hour as i8,
        date.minute as i8,
        date.second as i8,
        0,
    )
    .map_err(|e| invalid(format!("{date}: {e}")))?;
    let offset = (i16::from(date.tz_hour) * 60 + i16::from(date.tz_minute))
        * if date.tz_before_gmt { -1 } else { 1 };
    EventTime::from_local(civil, offset).map_err(invalid)
}

/// The item of one message.
fn message_item(
    raw: &[u8],
    name: &str,
    file_time: Option<EventTime>,
) -> Result<ItemDraft, ImportErrorKind> {
    let message = MessageParser::default()
        .parse(raw)
        .filter(|m| !m.headers().is_empty())
        .ok_or_else(|| ImportErrorKind::Syntax("not an e-mail message (no headers)".to_owned()))?;
    let (time, from_file) = match (message_time(&message), file_time) {
        (Ok(t), _) => (t, false),
        (Err(_), Some(t)) => (t, true),
        (Err(e), None) => return Err(e),
    };
    let mut fields = ItemFields::new(Source::Email, time);
    if from_file {
        fields.tags.push("time:file".to_owned());
    }
    // The Message-ID names the message, the checksum its bytes: the same message imported
    // twice (two folders, a re-import) is one item, while two different messages that reuse
    // an id (test fixtures, broken mailers) stay two.
    fields.external_id = Some(match message.message_id().map(clean) {
        Some(id) if !id.is_empty() => format!("mid:{id}#{:08x}", crate::crc32c(raw)),
        _ => name.to_owned(),
    });
    let from = addresses(message.from());
    fields.from = from.first().and_then(display);
    let mut recipients = addresses(message.to());
    recipients.extend(addresses(message.cc()));
    fields.to = recipients.iter().filter_map(display).collect();
    let mut entities: Vec<String> = Vec::new();
    for (person, _) in from.iter().chain(&recipients) {
        if let Some(p) = person
            && !entities.contains(p)
        {
            entities.push(p.clone());
        }
    }
    fields.entities = entities;
    fields.summary = message.subject().map(clean).filter(|s| !s.is_empty());
    let mut body = String::new();
    for i in 0..message.text_body_count() {
        if let Some(text) = message.body_text(i) {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str(text.trim());
        }
    }
    if body.chars().count() > MAX_BODY_CHARS {
        body = body.chars().take(MAX_BODY_CHARS).collect();
        fields.tags.push("truncated".to_owned());
    }
    fields.body = (!body.is_empty()).then_some(body);
    for part in message.attachments() {
        if let Some(file) = part.attachment_name().map(clean).filter(|n| !n.is_empty()) {
            fields.tags.push(format!("attachment:{file}"));
        }
    }
    fields
        .validate()
        .map_err(|reason| ImportErrorKind::InvalidField {
            field: "message".to_owned(),
            reason,
        })?;
    Ok(ItemDraft {
        fields,
        supersedes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &[u8] = b"Message-ID: <1@x>\r\nDate: Mon, 8 May 2023 13:56:00 +0200\r\nFrom: Ana Silva <ana@example.org>\r\nTo: Rui <rui@example.org>, mila@example.org\r\nCc: \"Bo\" <bo@example.org>\r\nSubject: =?ISO-8859-1?Q?Caf=E9?= tomorrow\r\n\r\nSee you at 9.\r\n";

    #[test]
    fn a_message_becomes_an_email_item() {
        let report = parse_eml(Path::new("a.eml"), "a.eml", PLAIN, None);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let f = &report.items[0].draft.fields;
        assert_eq!(f.source, Source::Email);
        assert_eq!(f.time.to_rfc3339(), "2023-05-08T13:56:00+02:00");
        let ext = f.external_id.as_deref().unwrap();
        assert!(
            ext.starts_with("mid:1@x#") && ext.len() == "mid:1@x#".len() + 8,
            "{ext}"
        );
        assert_eq!(f.from.as_deref(), Some("Ana Silva <ana@example.org>"));
        assert_eq!(
            f.to,
            [
                "Rui <rui@example.org>",
                "mila@example.org",
                "Bo <bo@example.org>"
            ]
        );
        assert_eq!(f.entities, ["Ana Silva", "Rui", "Bo"]);
        assert_eq!(f.summary.as_deref(), Some("Café tomorrow"));
        assert_eq!(f.body.as_deref(), Some("See you at 9."));
    }

    #[test]
    fn a_message_without_a_usable_date_is_reported() {
        let no_date = b"From: a@b\r\nSubject: hi\r\n\r\nbody";
        let report = parse_eml(Path::new("n.eml"), "n.eml", no_date, None);
        assert!(report.items.is_empty());
        assert_eq!(
            report.errors[0].kind,
            ImportErrorKind::MissingField("Date".into())
        );
        let bad = b"Date: Mon, 31 Feb 2023 10:00:00 +0000\r\nFrom: a@b\r\n\r\nx";
        let report = parse_eml(Path::new("b.eml"), "b.eml", bad, None);
        assert!(matches!(
            report.errors[0].kind,
            ImportErrorKind::InvalidField { .. }
        ));
        let mtime = EventTime::parse("2024-01-02T03:04:05Z").unwrap();
        let report = parse_eml(Path::new("b.eml"), "b.eml", bad, Some(mtime));
        assert_eq!(report.items[0].draft.fields.time, mtime);
        assert_eq!(report.items[0].draft.fields.tags, ["time:file"]);
        let report = parse_eml(Path::new("b.eml"), "b.eml", bad, None);
        assert!(matches!(
            report.errors[0].kind,
            ImportErrorKind::InvalidField { .. }
        ));
        let report = parse_eml(Path::new("e.eml"), "e.eml", b"", Some(mtime));
        assert!(matches!(report.errors[0].kind, ImportErrorKind::Syntax(_)));
    }

    #[test]
    fn mbox_messages_each_become_an_item_or_an_error() {
        let mut mbox = b"From ana@example.org Mon May  8 13:56:00 2023\n".to_vec();
        mbox.extend_from_slice(PLAIN);
        mbox.extend_from_slice(b"\nFrom x Mon May  8 13:56:00 2023\nSubject: no date\n\nbody\n");
        mbox.extend_from_slice(b"\nFrom y Mon May  8 13:56:00 2023\nDate: Tue, 9 May 2023 08:00:00 -0700\nSubject: third\n\nhello\n");
        let report = parse_mbox(Path::new("m.mbox"), "m.mbox", &mbox, None);
        assert_eq!(report.items.len(), 2);
        assert_eq!(report.errors.len(), 1);
        assert_eq!(report.errors[0].location.as_deref(), Some("message 2"));
        assert_eq!(
            report.items[1].draft.fields.external_id.as_deref(),
            Some("m.mbox#3")
        );
        assert_eq!(
            report.items[1].draft.fields.time.to_rfc3339(),
            "2023-05-09T08:00:00-07:00"
        );
    }

    #[test]
    fn attachments_are_named_and_long_bodies_cut() {
        let mut raw = b"Date: Mon, 8 May 2023 13:56:00 +0000\r\nFrom: a@b\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\n".to_vec();
        raw.extend(std::iter::repeat_n(b'a', MAX_BODY_CHARS + 10));
        raw.extend_from_slice(b"\r\n--XX\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"ticket.pdf\"\r\n\r\nJVBERi0=\r\n--XX--\r\n");
        let report = parse_eml(Path::new("a.eml"), "a.eml", &raw, None);
        let f = &report.items[0].draft.fields;
        assert!(
            f.tags.contains(&"attachment:ticket.pdf".to_owned()),
            "{:?}",
            f.tags
        );
        assert!(f.tags.contains(&"truncated".to_owned()));
        assert_eq!(f.body.as_ref().unwrap().chars().count(), MAX_BODY_CHARS);
    }
}
