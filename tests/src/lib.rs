//! Helpers shared by memdb's integration tests.
