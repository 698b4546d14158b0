//! The `memdb` command-line tool: create, fill, inspect, verify and compact a store.
//!
//! Every command prints tables for people and, with `--json`, one JSON document for scripts.
//! Exit status: 0 on success, 1 when `check` finds problems, 2 on any error (with a one-line
//! reason on stderr).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod admin;
mod args;
mod caption;
mod delete;
mod demo;
mod embed;
mod error;
mod eval;
mod export;
mod gate;
mod import;
mod keys;
mod mcp;
mod model;
mod open;
mod ops;
mod output;
mod pages;
mod progress;
mod remember;
mod shell;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, ShowCommand};
use crate::error::Result;
use crate::output::Out;

fn main() -> ExitCode {
    let cli = Cli::parse();
    keys::set_flags(keys::SecretFlags {
        passphrase_fd: cli.passphrase_fd,
        key_file: cli.key_file.clone(),
    });
    let out = Out { json: cli.json };
    match run(cli.command, &out) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("memdb: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs one command: each is its module's (see ARCHITECTURE.md's code map).
fn run(command: Command, out: &Out) -> Result<ExitCode> {
    match command {
        Command::Query(args) => shell::query_command(args, out),
        Command::Shell { dir } => done(shell::shell(&dir, out.json)),
        Command::Mcp(args) => mcp::command(args),
        Command::Delete {
            dir,
            keys,
            external,
            reason,
        } => done(delete::delete(&dir, &keys, external, reason, out)),
        Command::Undelete { dir, ids } => done(delete::undelete(&dir, &ids, out)),
        Command::Purge { dir, ids, yes } => done(delete::purge(&dir, &ids, yes, out)),
        Command::Retention { dir, days } => done(delete::retention(&dir, days, out)),
        Command::Init(args) => admin::init(args, out),
        Command::Rekey(args) => admin::rekey(args, out),
        Command::Import(args) => import::command(args, out),
        Command::Eval { command } => eval::command(command, out),
        Command::Get(args) => admin::get(args, out),
        Command::Ls(args) => admin::ls(args, out),
        Command::Stats { dir } => admin::stats(&dir, out),
        Command::Check { dir } => admin::check(&dir, out),
        Command::Repair { dir } => admin::repair(&dir, out),
        Command::Export {
            dir,
            out: to,
            no_pages,
        } => {
            let store = open::open_for_reading(&dir)?;
            done(export::export(&store, &to, !no_pages, out))
        }
        Command::Compact(args) => admin::compact(args, out),
        Command::Ops { command } => ops::command(command, out),
        Command::Gate { command } => gate::command(command, out),
        Command::Remember {
            dir,
            text,
            speaker,
            time,
            scope,
            idempotency_key,
            extract_model,
            update_model,
            endpoint,
            timeout,
        } => {
            let experts = remember::Experts {
                endpoint,
                extract_model,
                update_model,
                timeout,
            };
            let call = remember::Call {
                text: &text,
                speaker,
                time: time.as_deref(),
                scope: scope.scope(),
                idempotency_key,
            };
            done(remember::remember(&dir, call, &experts, out))
        }
        Command::Log { dir, since } => done(remember::log(&dir, since.as_deref(), out)),
        Command::Ask {
            dir,
            question,
            k,
            scope,
            model,
            endpoint,
            timeout,
        } => {
            let generate = model.as_deref().map(|m| (endpoint.as_str(), m, timeout));
            done(remember::ask(
                &dir,
                &question,
                k,
                &scope.scope(),
                generate,
                out,
            ))
        }
        Command::Caption {
            dir,
            endpoint,
            model,
            timeout,
        } => {
            let store = open::open_store(&dir)?;
            let summary = caption::caption(&store, &endpoint, &model, timeout, !out.json)?;
            out.emit(summary.json(), || summary.text());
            if summary.all_failed() {
                eprintln!("memdb: no photo captioned: every call failed (reasons above)");
                return Ok(ExitCode::from(2));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Embed { dir, item_text } => {
            let store = open::open_store(&dir)?;
            let encoder = embed::encoder_for(&store, !out.json, model::Download::Ask)?;
            let report = embed::embed_in_style(&store, &encoder, item_text, !out.json)?;
            out.emit(report.json(), || report.text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Similar(args) => embed::similar_command(args, out),
        Command::Model { action } => model::command(action, out),
        Command::Recall(args) => embed::recall_command(args, out),
        Command::Pages {
            dir,
            quality,
            no_salient,
        } => done(pages::compose(
            &dir,
            pages::page_options(quality, no_salient)?,
            out,
        )),
        Command::Forget {
            dir,
            policy,
            as_of,
            dry_run,
            yes,
            no_salient,
        } => done(pages::forget(
            &dir,
            &policy,
            &as_of,
            dry_run,
            if yes {
                pages::Consent::Given
            } else {
                pages::Consent::Ask
            },
            pages::page_options(95, no_salient)?,
            out,
        )),
        Command::Show {
            what: ShowCommand::Page { dir, day, out: to },
        } => done(pages::show_page(&dir, &day, to, out)),
        Command::Demo { store, full } => done(demo::run(store, full, out)),
    }
}

/// A command that succeeded exits 0.
fn done(result: Result<()>) -> Result<ExitCode> {
    result.map(|()| ExitCode::SUCCESS)
}
