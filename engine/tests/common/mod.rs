//! What several integration tests of the engine share.

use memdb::Embedder;

/// Letters to one-hot dimensions, so "pottery class" and "pottery classes" (same letters set
/// but for `e`) land close and everything else apart: a deterministic embedder for the graph.
pub(crate) struct LetterEmbedder;

impl Embedder for LetterEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = [0f32; 27];
                for c in t.chars().filter(char::is_ascii_lowercase) {
                    v[(c as u8 - b'a') as usize] += 1.0;
                }
                v[26] = 0.1;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}
