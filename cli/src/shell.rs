//! `memdb query` and `memdb shell`: statements of the query language (SPEC.md §9) run through
//! `memdb_query::StoreQuery`, the same path applications use.
//!
//! The shell is a rustyline REPL: history in a file readable by the owner only (none for an
//! encrypted store, whose statements never reach a file in plain text: `.history on` keeps
//! them for the session, in memory), multi-line
//! input (a statement the parser finds unfinished at the end of the input continues on the
//! next line), completion of keywords, sources and graph node names (inside a quote), dot
//! commands, timing per statement and tables that fit the terminal. The encoder loads on the
//! first `RECALL` only, so a shell that never recalls starts in milliseconds.

use std::process::ExitCode;

use crate::args::QueryArgs;
use crate::error::{CliError, Result};
use crate::output::Out;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use memdb::{Source, Store};
use memdb_encode::MiniLm;
use memdb_query::{
    KEYWORDS, Output, Query, QueryContext, QueryError, Statement, StoreQuery, parse_script,
    to_blocks, to_json,
};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Context, Editor, Helper};

use crate::output::say;

/// A store opened read-only, with its lazily loaded encoder. Statements that write (a
/// `FORGET` that is not a dry run) open the store as its writer for their own run only, so a
/// session holds no lock while it reads.
pub(crate) struct Session {
    dir: PathBuf,
    store: Store,
    encoder: Option<MiniLm>,
    verbose: bool,
    now_ms: Option<i64>,
}

/// Whether a statement needs the encoder (a `RECALL`, explained or not).
pub(crate) fn needs_encoder(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Query(Query::Recall(_)) | Statement::Explain(Query::Recall(_))
    )
}

/// Whether a statement writes to the store.
pub(crate) fn writes(statement: &Statement) -> bool {
    matches!(statement, Statement::Forget(f) if !f.dry_run)
}

impl Session {
    pub(crate) fn new(dir: &Path, verbose: bool) -> Result<Session> {
        Ok(Session {
            dir: dir.to_path_buf(),
            store: crate::open::open_reader(dir)?,
            encoder: None,
            verbose,
            now_ms: None,
        })
    }

    /// Parses all of `text`, then runs each statement; an error stops the rest.
    fn run(&mut self, text: &str) -> Result<Vec<Output>> {
        let statements = parse_script(text).map_err(|e| CliError::Statement {
            rendered: e.render(text),
        })?;
        if self.encoder.is_none() && statements.iter().any(needs_encoder) {
            if self.verbose {
                eprintln!("loading the encoder for RECALL…");
            }
            self.encoder = Some(crate::embed::encoder_for(
                &self.store,
                self.verbose,
                crate::model::Download::Ask,
            )?);
        }
        let ctx = QueryContext {
            embedder: self.encoder.as_ref().map(|e| e as &dyn memdb::Embedder),
            now_ms: self.now_ms,
            ..QueryContext::default()
        };
        // Statements are parsed once above; each runs through the public API on its own text.
        let mut outputs = Vec::with_capacity(statements.len());
        for statement in statements {
            let text = statement.to_string();
            let writer = if writes(&statement) {
                Some(crate::open::open_store(&self.dir)?)
            } else {
                None
            };
            let store = writer.as_ref().unwrap_or(&self.store);
            let out = store.query(&text, &ctx).map_err(|e| match e {
                QueryError::Parse(p) => CliError::Statement {
                    rendered: p.render(&text),
                },
                other => CliError::Query(other),
            })?;
            // The writer (and its lock) goes as soon as its statement has run.
            drop(writer);
            outputs.push(out);
        }
        Ok(outputs)
    }
}

/// Prints a result as tables, with a timing line when `timing`.
fn print_tables(out: &Output, timing: Option<f64>) {
    for block in to_blocks(out) {
        say(&crate::output::block_text(block));
    }
    if let Some(warning) = out.skipped.describe() {
        say(&format!("warning: {warning}"));
    }
    if let Some(ms) = timing {
        let n = out.rows.len();
        say(&format!(
            "{n} row{} in {ms:.1} ms",
            if n == 1 { "" } else { "s" }
        ));
    }
}

/// `memdb query DIR STATEMENT` / `-f FILE`: prints each result; JSON is one document for one
/// statement and an array for several.
pub(crate) fn query(dir: &Path, text: &str, now_ms: Option<i64>, json: bool) -> Result<()> {
    let mut session = Session::new(dir, !json)?;
    session.now_ms = now_ms;
    let outputs = session.run(text)?;
    if json {
        let docs: Vec<serde_json::Value> = outputs.iter().map(to_json).collect();
        match docs.as_slice() {
            [one] => say(&one.to_string()),
            _ => say(&serde_json::Value::Array(docs).to_string()),
        }
    } else {
        for out in &outputs {
            print_tables(out, None);
        }
    }
    Ok(())
}

/// Completion, multi-line validation; no hints or highlighting.
struct ShellHelper {
    store: Store,
}

/// Dot commands of the shell.
const DOT_COMMANDS: [(&str, &str); 6] = [
    (".help", "this text"),
    (
        ".history on|off",
        "keep statements for the arrow keys (default on; on an encrypted store off, and on \
         only for this session, never written to a file)",
    ),
    (
        ".json on|off",
        "print results as JSON documents instead of tables",
    ),
    (
        ".timing on|off",
        "print rows and milliseconds after each statement (default on)",
    ),
    (".keywords", "list the language's keywords"),
    (".quit", "leave (Ctrl-D too)"),
];

impl ShellHelper {
    fn node_names(&self, prefix: &str) -> Vec<String> {
        let Ok(snapshot) = self.store.snapshot() else {
            return Vec::new();
        };
        snapshot
            .graph()
            .phrases_with_prefix(&prefix.to_lowercase(), 50)
            .unwrap_or_default()
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        // Inside an open quote: a node name.
        if before.matches('\'').count() % 2 == 1
            && let Some(quote) = before.rfind('\'')
        {
            let prefix = &before[quote + 1..];
            let pairs = self
                .node_names(prefix)
                .into_iter()
                .map(|name| Pair {
                    display: name.clone(),
                    replacement: format!("{}'", name.replace('\'', "''")),
                })
                .collect();
            return Ok((quote + 1, pairs));
        }
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        if word.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let lower = word.chars().all(|c| !c.is_uppercase());
        let mut words: Vec<String> = if word.starts_with('.') {
            DOT_COMMANDS
                .iter()
                .filter_map(|(c, _)| c.split(' ').next())
                .map(str::to_owned)
                .collect()
        } else {
            KEYWORDS
                .iter()
                .map(|k| {
                    if lower {
                        k.to_lowercase()
                    } else {
                        (*k).to_owned()
                    }
                })
                .chain(Source::ALL.iter().map(|s| s.name().to_owned()))
                .collect()
        };
        words.retain(|w| w.to_lowercase().starts_with(&word.to_lowercase()) && w != word);
        words.sort();
        words.dedup();
        Ok((
            start,
            words
                .into_iter()
                .map(|w| Pair {
                    display: w.clone(),
                    replacement: w,
                })
                .collect(),
        ))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if statement_is_unfinished(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ShellHelper {}

/// Whether the shell should read another line: the parser ran out of input mid-statement and
/// the person did not end it with `;`.
fn statement_is_unfinished(input: &str) -> bool {
    let trimmed = input.trim();
    if trimmed.is_empty() || trimmed.starts_with('.') || trimmed.ends_with(';') {
        return false;
    }
    matches!(parse_script(input), Err(e) if e.at_end)
}

/// Where the shell keeps its history: `$MEMDB_HISTORY`, else the data directory.
fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MEMDB_HISTORY") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("memdb").join("history"))
}

fn help() -> String {
    let mut text = String::from(
        "Statements (end with `;` or Enter; an unfinished one continues on the next line):\n\
         \x20 RECALL 'question' [WHERE …] [TOP n]\n\
         \x20 PATHS MATCHING ('phrase', …) [MIN OVERLAP n] [TOP n]\n\
         \x20 ITEMS [WHERE …] [ORDER BY time ASC|DESC] [TOP n]\n\
         \x20 HISTORY OF id\n\
         \x20 SHOW STATS | SHOW ITEM id | SHOW NODE 'phrase' | SHOW PATH id | SHOW PAGE YYYY-MM-DD\n\
         \x20 EXPLAIN <RECALL | PATHS | ITEMS | HISTORY …>\n\
         Filters, joined by AND: source = email | source IN (chat, note) | tag = '…' | entity = '…'\n\
         \x20 | time BETWEEN d AND d | time ON d | time >= d | time < d | time IN LAST 30 DAYS\n\
         \x20 | NEAR(lat, lon, 25km) | SUPERSEDES id | CURRENT\n\
         Tab completes keywords, and node names inside a quote. Commands:\n",
    );
    for (cmd, what) in DOT_COMMANDS {
        text.push_str(&format!("  {cmd:<16} {what}\n"));
    }
    text
}

/// `memdb shell DIR`.
pub(crate) fn shell(dir: &Path, json: bool) -> Result<()> {
    let mut session = Session::new(dir, true)?;
    let store = session.store.clone();
    let config = Config::builder()
        .auto_add_history(false)
        .max_history_size(10_000)
        .map_err(|source| CliError::LineEditor {
            what: "cannot start the line editor",
            source,
        })?
        .build();
    let mut editor: Editor<ShellHelper, DefaultHistory> =
        Editor::with_config(config).map_err(|source| CliError::LineEditor {
            what: "cannot start the line editor",
            source,
        })?;
    editor.set_helper(Some(ShellHelper { store }));
    // An encrypted store's statements ("my bank PIN …") never go to a file in plain text: no
    // history file is read or written, and none is kept unless asked for.
    let encrypted = Store::is_encrypted_at(dir);
    let mut keep_history = !encrypted;
    let history = if encrypted { None } else { history_path() };
    if let Some(path) = &history {
        // A missing history file is the first session.
        let _ = editor.load_history(path);
    }
    say(&format!(
        "memdb shell on {} — .help for help, .quit or Ctrl-D to leave",
        dir.display()
    ));
    let (mut json, mut timing) = (json, true);
    loop {
        let line = match editor.readline("memdb> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(source) => {
                return Err(CliError::LineEditor {
                    what: "reading input",
                    source,
                });
            }
        };
        let input = line.trim();
        if input.is_empty() {
            continue;
        }
        if keep_history && !input.starts_with(".history") {
            let _ = editor.add_history_entry(input);
        }
        if input.starts_with('.') {
            let mut words = input.split_whitespace();
            let command = words.next().unwrap_or("");
            let flag = words.next();
            match (command, flag) {
                (".quit" | ".exit", _) => break,
                (".help", _) => say(&help()),
                (".keywords", _) => say(&KEYWORDS.join(" ")),
                (".json", Some("on")) => json = true,
                (".json", Some("off")) => json = false,
                (".timing", Some("on")) => timing = true,
                (".timing", Some("off")) => timing = false,
                (".history", Some("on")) => {
                    keep_history = true;
                    if encrypted {
                        say(
                            "history on for this session only: an encrypted store's statements are never written to a file",
                        );
                    }
                }
                (".history", Some("off")) => keep_history = false,
                _ => say(&format!("unknown command `{input}` (.help lists them)")),
            }
            continue;
        }
        let started = Instant::now();
        match session.run(input) {
            Ok(outputs) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                for out in &outputs {
                    if json {
                        say(&to_json(out).to_string());
                    } else {
                        print_tables(out, timing.then_some(ms / outputs.len() as f64));
                    }
                }
            }
            Err(error) => say(&error.to_string()),
        }
    }
    if let Some(path) = &history {
        save_history(&mut editor, path);
    }
    Ok(())
}

/// Saves the history readable by the owner only: queries hold a person's private words.
fn save_history(editor: &mut Editor<ShellHelper, DefaultHistory>, path: &Path) {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(parent) = path.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent);
    }
    if let Err(e) = editor.save_history(path) {
        eprintln!(
            "memdb: could not save the history to {}: {e}",
            path.display()
        );
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

/// `memdb query`: a statement or a file of statements.
pub(crate) fn query_command(args: QueryArgs, out: &Out) -> Result<ExitCode> {
    let QueryArgs {
        dir,
        statement,
        file,
        now,
    } = args;
    let now_ms = now
        .map(|n| memdb::EventTime::parse(&n).map(|t| t.unix_ms))
        .transpose()
        .map_err(|reason| CliError::flag("--now", reason))?;
    let text = match (statement, file) {
        (Some(text), _) => text,
        (None, Some(file)) => {
            std::fs::read_to_string(&file).map_err(|e| CliError::io("read", &file, e))?
        }
        (None, None) => return Err(CliError::Usage("give a statement or -f FILE")),
    };
    query(&dir, &text, now_ms, out.json)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_statements_continue_and_finished_ones_run() {
        assert!(statement_is_unfinished("RECALL 'x' WHERE"));
        assert!(statement_is_unfinished("RECALL 'an open\nstring"));
        assert!(statement_is_unfinished(
            "ITEMS WHERE time BETWEEN 2022-01-01 AND"
        ));
        assert!(
            !statement_is_unfinished("ITEMS WHERE;"),
            "`;` ends it, to show the error"
        );
        assert!(!statement_is_unfinished("ITEMS TOP 3"));
        assert!(
            !statement_is_unfinished("ITEMS TPO 3"),
            "an error mid-input is shown now"
        );
        assert!(!statement_is_unfinished(".help"));
    }
}
