//! The `memdb` command-line tool.
fn main() {}
