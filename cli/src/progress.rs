//! Progress and questions on the terminal: every long command (import, embed, pages, forget,
//! repair, export) reports how far it is, how fast it goes and how long is left; commands that
//! would destroy something ask first.
//!
//! On a terminal the report is an indicatif bar on stderr. Without one (a pipe, a log file) it
//! is a plain line on stderr every [`LOG_EVERY`], so a long run in a script is never silent. With
//! `--json` nothing is drawn: stdout stays one JSON document and stderr stays quiet.

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a plain progress line is written when stderr is not a terminal
/// (`MEMDB_PROGRESS_EVERY_MS` overrides it, for scripts that want more or fewer lines).
const LOG_EVERY: Duration = Duration::from_secs(10);

fn log_every() -> Duration {
    std::env::var("MEMDB_PROGRESS_EVERY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(LOG_EVERY, Duration::from_millis)
}

/// A progress report: a bar on a terminal, periodic lines elsewhere, nothing when hidden.
pub(crate) struct Progress {
    what: String,
    mode: Mode,
}

enum Mode {
    Hidden,
    Bar(indicatif::ProgressBar),
    Lines {
        started: Instant,
        last: Instant,
        every: Duration,
        pos: u64,
        len: u64,
    },
}

/// A progress report for `what` over `len` steps (0 = not known yet); `show` false hides it.
pub(crate) fn bar(len: u64, what: &str, show: bool) -> Progress {
    let mode = if !show {
        Mode::Hidden
    } else if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(len);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{what} {{bar:30}} {{pos}}/{{len}} ({{per_sec}}, {{eta}} left)"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Mode::Bar(bar)
    } else {
        let now = Instant::now();
        Mode::Lines {
            started: now,
            last: now,
            every: log_every(),
            pos: 0,
            len,
        }
    };
    Progress {
        what: what.to_owned(),
        mode,
    }
}

impl Progress {
    /// Sets the number of steps.
    pub(crate) fn set_length(&mut self, len: u64) {
        match &mut self.mode {
            Mode::Hidden => {}
            Mode::Bar(bar) => bar.set_length(len),
            Mode::Lines { len: l, .. } => *l = len,
        }
    }

    /// Sets the steps done.
    pub(crate) fn set_position(&mut self, pos: u64) {
        match &mut self.mode {
            Mode::Hidden => {}
            Mode::Bar(bar) => bar.set_position(pos),
            Mode::Lines {
                started,
                last,
                every,
                pos: p,
                len,
            } => {
                *p = pos;
                if last.elapsed() >= *every {
                    *last = Instant::now();
                    let secs = started.elapsed().as_secs_f64().max(1e-9);
                    let rate = pos as f64 / secs;
                    let eta = if rate > 0.0 && *len > pos {
                        format!(", about {:.0} s left", (*len - pos) as f64 / rate)
                    } else {
                        String::new()
                    };
                    eprintln!("memdb: {}: {pos}/{len} ({rate:.1}/s{eta})", self.what);
                }
            }
        }
    }

    /// Adds `n` steps done.
    pub(crate) fn inc(&mut self, n: u64) {
        let pos = match &self.mode {
            Mode::Hidden => return,
            Mode::Bar(bar) => bar.position(),
            Mode::Lines { pos, .. } => *pos,
        };
        self.set_position(pos + n);
    }

    /// Runs `f` with the bar hidden (to print a line between its redraws).
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.mode {
            Mode::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar.
    pub(crate) fn finish_and_clear(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

/// Asks `question` on the terminal and returns whether the answer was yes. Without a terminal
/// on stdin and stderr nobody can answer: no.
/// Progress of an ingest's stages: one bar per stage, the previous one cleared when the next
/// starts. `report` is what the engine's ingest calls.
pub(crate) struct Stages {
    show: bool,
    current: Option<(memdb::ingest::IngestStage, Progress)>,
}

impl Stages {
    pub(crate) fn new(show: bool) -> Stages {
        Stages {
            show,
            current: None,
        }
    }

    pub(crate) fn report(&mut self, stage: memdb::ingest::IngestStage, done: u64, total: u64) {
        if self.current.as_ref().is_none_or(|(s, _)| *s != stage) {
            if let Some((_, bar)) = &self.current {
                bar.finish_and_clear();
            }
            self.current = Some((stage, bar(total, stage.name(), self.show)));
        }
        if let Some((_, bar)) = &mut self.current {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    pub(crate) fn finish(&self) {
        if let Some((_, bar)) = &self.current {
            bar.finish_and_clear();
        }
    }
}

pub(crate) fn confirm(question: &str) -> bool {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
