//! memdb's research lab: what measures and fits the engine, kept out of it.
//!
//! - [`atm`]: ATM-Bench (SPEC.md §12): retrieval through a store for each question, and the
//!   benchmark's metrics computed as its own code computes them (`memdb eval atm`).
//! - [`gate`]: the memorability gate's lab (SAMD): evaluation on labelled texts, learning and
//!   expanding lexicons, role-play, the intent × scene affinity of a store and its CPM
//!   clustering (`memdb gate learn/eval/clusters/generate`).
//! - [`decider`]: scoring memory-operation deciders on labelled scenarios, nested
//!   cross-validation of the learned decider (`memdb ops eval/train`).
//!
//! Invariant: the lab is a client of the `memdb` facade like any application — it reads stores
//! through their public API and never writes what a store holds except through it. Nothing in
//! `memdb` names this crate.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod atm;
pub mod decider;
mod error;
pub mod gate;

pub use error::{Error, Result};
