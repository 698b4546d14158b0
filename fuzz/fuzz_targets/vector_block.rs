//! Arbitrary bytes into the readers of vector blocks read back from a store (SPEC.md §5.1, §5.2):
//! `FlatIndex::from_bytes` and `HnswIndex::from_bytes`. Beyond "never panics": an accepted flat
//! block searches to exactly `min(k, rows)` hits, one query at a time and batched (the matrix
//! product and the i8 kernels run on whatever rows, scales and strides the block holds), and an
//! accepted graph re-encodes to bytes that
//! load again to the same bytes and searches (through the graph and automatically) to exactly
//! `min(k, live rows)` hits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_vectors::{Filter, FlatIndex, HnswIndex, Route, VectorIndex};

const K: usize = 3;

fuzz_target!(|data: &[u8]| {
    if let Ok(index) = FlatIndex::from_bytes(data) {
        assert_eq!(index.as_bytes(), data);
        let view = index.view().expect("an accepted block views in place");
        let query = vec![0.5f32; view.dim()];
        let hits = index
            .search(&query, K, &Filter::new())
            .expect("a well-formed query searches");
        assert_eq!(hits.len(), view.len().min(K));
        let queries: Vec<f32> = (0..2 * view.dim()).map(|i| (i % 7) as f32 - 3.0).collect();
        let batch = index
            .search_batch(&queries, K, &Filter::new(), 2)
            .expect("a well-formed batch searches");
        assert_eq!(batch.len(), 2);
        for hits in &batch {
            assert_eq!(hits.len(), view.len().min(K));
        }
    }

    if let Ok(graph) = HnswIndex::from_bytes(data) {
        let bytes = graph.to_bytes();
        let again = HnswIndex::from_bytes(&bytes).expect("a re-encoded graph loads");
        assert_eq!(again.to_bytes(), bytes);
        let flat = graph.flat();
        let live = graph.len() - flat.deleted().len() as usize;
        let dim = flat.view().expect("the graph's flat block views").dim();
        let query = vec![0.5f32; dim];
        for route in [Route::Graph, Route::Auto] {
            let hits = graph
                .search_with(&query, K, &Filter::new(), 8, route)
                .expect("a well-formed query searches");
            assert_eq!(hits.len(), live.min(K), "{route:?}");
        }
    }
});
