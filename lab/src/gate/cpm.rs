//! The Cluster Prompting Module's intent clustering (SAMD §4.3): intents that share memory
//! scenes share discrimination rules.
//!
//! `E ∈ {0,1}^{n×m}` says which scenes each intent's texts hit. `E = U Σ Vᵀ`; the rank `r` is
//! the smallest for which more than 90 % of the ones of `E` reconstruct above `σ`
//! (`|E′ᵢⱼ| > σ`, `E′` from the `r` largest singular values). The intents' features are
//! `F = U_r √Σ_r`. Eq. 6 groups intents whose pairwise distance is at most
//! `min(median of the distances from u, ε)`; the paper writes the distance as `D = F·Fᵀ`, which
//! is a similarity, so memdb takes the distance the Gram matrix gives,
//! `d(u, v) = D_uu + D_vv − 2 D_uv` (the squared distance between the features), and says so.
//! Clusters of more than two intents are kept; every other intent goes by Eq. 7 to the cluster
//! of `argmax_j F_ij`.

use memdb::gate::ClusterPrompts;
use nalgebra::DMatrix;

use super::affinity::Affinity;

/// The clustering's knobs (SAMD's σ, ε and, optionally, a fixed rank).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpmOptions {
    /// A one of `E` counts as reconstructed when `|E′ᵢⱼ| > sigma`.
    pub sigma: f64,
    /// The largest distance within an Eq. 6 cluster.
    pub epsilon: f64,
    /// A fixed rank instead of the 90 % rule.
    pub rank: Option<usize>,
}

impl Default for CpmOptions {
    fn default() -> Self {
        CpmOptions {
            sigma: 0.5,
            epsilon: 0.5,
            rank: None,
        }
    }
}

/// Intent clusters and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct Clustering {
    /// The rank used.
    pub rank: usize,
    /// Share of the ones of `E` reconstructed above σ at that rank.
    pub reconstructed: f64,
    /// Clusters by Eq. 6 (each more than two intents), by intent index.
    pub by_distance: Vec<Vec<usize>>,
    /// Clusters by Eq. 7 (`argmax_j F_ij`), of the intents Eq. 6 left out: (feature, intents).
    pub by_argmax: Vec<(usize, Vec<usize>)>,
    /// The intents' features `F = U_r √Σ_r`, row by intent.
    pub features: Vec<Vec<f64>>,
}

/// Clusters the intents (rows) of the 0/1 matrix `affinity` (`rows × cols`, row-major).
/// `None` when the matrix has no row, no column or no one.
pub fn cluster_intents(
    affinity: &[u8],
    rows: usize,
    cols: usize,
    options: &CpmOptions,
) -> Option<Clustering> {
    if rows == 0 || cols == 0 || affinity.len() != rows * cols || !affinity.contains(&1) {
        return None;
    }
    let e = DMatrix::from_row_iterator(rows, cols, affinity.iter().map(|&x| f64::from(x.min(1))));
    let mut svd = e.clone().svd(true, true);
    svd.sort_by_singular_values();
    let (mut u, mut v_t) = (svd.u.clone()?, svd.v_t.clone()?);
    let s = &svd.singular_values;
    // A singular vector's sign is arbitrary; E has no negative entry, so turn each pair to
    // the side where the intents' loadings sum to ≥ 0 (then Eq. 7's argmax means something).
    for k in 0..s.len() {
        if u.column(k).sum() < 0.0 {
            u.column_mut(k).neg_mut();
            v_t.row_mut(k).neg_mut();
        }
    }
    let full = s.len();
    let ones = affinity.iter().filter(|&&x| x == 1).count() as f64;
    let reconstructed_at = |r: usize| -> f64 {
        let mut rebuilt = DMatrix::<f64>::zeros(rows, cols);
        for k in 0..r {
            rebuilt += u.column(k) * v_t.row(k) * s[k];
        }
        let hit = (0..rows)
            .flat_map(|i| (0..cols).map(move |j| (i, j)))
            .filter(|&(i, j)| affinity[i * cols + j] == 1 && rebuilt[(i, j)].abs() > options.sigma)
            .count() as f64;
        hit / ones
    };
    let rank = match options.rank {
        Some(r) => r.clamp(1, full),
        None => (1..=full)
            .find(|&r| reconstructed_at(r) > 0.9)
            .unwrap_or(full),
    };
    let reconstructed = reconstructed_at(rank);
    let features: Vec<Vec<f64>> = (0..rows)
        .map(|i| (0..rank).map(|k| u[(i, k)] * s[k].sqrt()).collect())
        .collect();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let distance = |a: usize, b: usize| {
        dot(&features[a], &features[a]) + dot(&features[b], &features[b])
            - 2.0 * dot(&features[a], &features[b])
    };
    // Each intent's bound: min(median of its distances to the others, ε).
    let bound: Vec<f64> = (0..rows)
        .map(|a| {
            let mut d: Vec<f64> = (0..rows)
                .filter(|&b| b != a)
                .map(|b| distance(a, b))
                .collect();
            d.sort_by(f64::total_cmp);
            let median = match d.len() {
                0 => f64::INFINITY,
                n if n % 2 == 1 => d[n / 2],
                n => (d[n / 2 - 1] + d[n / 2]) / 2.0,
            };
            median.min(options.epsilon)
        })
        .collect();
    let close = |a: usize, b: usize| {
        let d = distance(a, b);
        d <= bound[a] && d <= bound[b]
    };
    // Greedy cliques in intent order: an intent joins the first cluster every member of which
    // it is close to (Eq. 6 holds for every pair inside a cluster).
    let mut cliques: Vec<Vec<usize>> = Vec::new();
    for a in 0..rows {
        match cliques.iter_mut().find(|c| c.iter().all(|&b| close(a, b))) {
            Some(c) => c.push(a),
            None => cliques.push(vec![a]),
        }
    }
    let (by_distance, rest): (Vec<Vec<usize>>, Vec<Vec<usize>>) =
        cliques.into_iter().partition(|c| c.len() > 2);
    let mut by_argmax: Vec<(usize, Vec<usize>)> = Vec::new();
    for a in rest.into_iter().flatten() {
        let index = (0..rank)
            .max_by(|&x, &y| features[a][x].total_cmp(&features[a][y]))
            .unwrap_or(0);
        match by_argmax.iter_mut().find(|(i, _)| *i == index) {
            Some((_, members)) => members.push(a),
            None => by_argmax.push((index, vec![a])),
        }
    }
    by_argmax.sort_by_key(|(i, _)| *i);
    Some(Clustering {
        rank,
        reconstructed,
        by_distance,
        by_argmax,
        features,
    })
}

/// The judge's prompts of `clustering` (of `affinity`'s intents): a cluster's scenes are those
/// any of its intents has in the affinity matrix.
pub fn cluster_prompts(affinity: &Affinity, clustering: &Clustering) -> ClusterPrompts {
    let mut by_intent = Vec::new();
    let groups = clustering
        .by_distance
        .iter()
        .chain(clustering.by_argmax.iter().map(|(_, members)| members));
    for members in groups {
        let scenes: Vec<usize> = (0..affinity.scenes)
            .filter(|&s| {
                members
                    .iter()
                    .any(|&i| affinity.matrix[i * affinity.scenes + s] == 1)
            })
            .collect();
        for &i in members {
            if let Some(&intent) = affinity.intents.get(i) {
                by_intent.push((intent, scenes.clone()));
            }
        }
    }
    ClusterPrompts::from_clusters(by_intent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_blocks_of_intents_make_two_clusters_at_rank_two() {
        // Intents 0–2 hit scenes 0–1; intents 3–5 hit scenes 2–3: E is two blocks of ones
        // (3 rows × 2 columns each), singular values √6 and √6, the rest zero. Rank 1 rebuilds
        // one block (half the ones), rank 2 both exactly.
        #[rustfmt::skip]
        let e = [
            1, 1, 0, 0,
            1, 1, 0, 0,
            1, 1, 0, 0,
            0, 0, 1, 1,
            0, 0, 1, 1,
            0, 0, 1, 1,
        ];
        let c = cluster_intents(&e, 6, 4, &CpmOptions::default()).unwrap();
        assert_eq!(c.rank, 2);
        assert!((c.reconstructed - 1.0).abs() < 1e-9);
        assert_eq!(c.by_distance, [vec![0, 1, 2], vec![3, 4, 5]]);
        assert!(c.by_argmax.is_empty());
        // A block's left singular vector is 1/√3 on its three intents, its singular value √6:
        // F = U √Σ gives each intent a squared norm of (1/3)·√6.
        let norm2: f64 = c.features[0].iter().map(|x| x * x).sum();
        assert!((norm2 - 6f64.sqrt() / 3.0).abs() < 1e-9, "{norm2}");
    }

    #[test]
    fn pairs_fall_back_to_the_argmax_of_their_features() {
        // Two intents per block: Eq. 6 clusters need more than two intents, so both pairs go
        // by Eq. 7, each to the feature of its block.
        #[rustfmt::skip]
        let e = [
            1, 1, 0,
            1, 1, 0,
            0, 0, 1,
            0, 0, 1,
        ];
        let c = cluster_intents(&e, 4, 3, &CpmOptions::default()).unwrap();
        assert!(c.by_distance.is_empty());
        let groups: Vec<Vec<usize>> = c.by_argmax.iter().map(|(_, m)| m.clone()).collect();
        assert_eq!(groups.len(), 2);
        assert!(groups.contains(&vec![0, 1]) && groups.contains(&vec![2, 3]));
    }

    #[test]
    fn the_rank_rule_and_its_override() {
        let e = [1, 0, 0, 1];
        // Identity: singular values 1 and 1; rank 1 rebuilds one of the two ones.
        let c = cluster_intents(&e, 2, 2, &CpmOptions::default()).unwrap();
        assert_eq!(c.rank, 2);
        let fixed = CpmOptions {
            rank: Some(1),
            ..CpmOptions::default()
        };
        let c = cluster_intents(&e, 2, 2, &fixed).unwrap();
        assert_eq!(c.rank, 1);
        assert!((c.reconstructed - 0.5).abs() < 1e-9);
        assert!(cluster_intents(&[0, 0], 1, 2, &CpmOptions::default()).is_none());
        assert!(cluster_intents(&[1], 2, 2, &CpmOptions::default()).is_none());
    }

    #[test]
    fn a_clustered_intent_is_judged_by_its_clusters_scenes() {
        use memdb::Source;
        use memdb::gate::{Gum, Scenes};
        let scenes = Scenes::from_toml(
            "version = 1\n[[scene]]\nname = \"health\"\nwords = [\"doctor\"]\n\
             [[scene]]\nname = \"travel\"\nwords = [\"flight\"]\n\
             [[scene]]\nname = \"work\"\nwords = [\"boss\"]\n",
        )
        .unwrap();
        let gum = Gum::new(scenes.clone()).unwrap();
        // Mail and chat both hit health and travel; notes hit work only.
        let affinity = Affinity {
            intents: vec![Source::Email, Source::Chat, Source::Note],
            items: vec![10, 10, 10],
            hits: vec![5, 5, 0, 5, 5, 0, 0, 0, 5],
            matrix: vec![1, 1, 0, 1, 1, 0, 0, 0, 1],
            scenes: 3,
        };
        // Two intents per cluster at most: Eq. 7's argmax groups them.
        let clustering = cluster_intents(&affinity.matrix, 3, 3, &CpmOptions::default()).unwrap();
        let prompts = cluster_prompts(&affinity, &clustering);
        let hits = gum.hits("my boss booked the flight", Some(Source::Email));
        let prompt = prompts.prompt(&scenes, Some(Source::Email), &hits);
        assert_eq!(prompt.scenes, ["health", "travel", "work"]);
        // Notes cluster with work alone: a note hitting nothing is judged by work's rules.
        let none = gum.hits("nothing here", Some(Source::Note));
        let prompt = prompts.prompt(&scenes, Some(Source::Note), &none);
        assert_eq!(prompt.scenes, ["work"]);
    }
}
