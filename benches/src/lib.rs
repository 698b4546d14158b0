//! Shared helpers of the benchmark programs in `src/bin/`.
