//! Bench `gate`: the GUM's speed at the size of SAMD's identifier (≥ 30,000 salient words; the
//! paper's had 31,831 from 203 scenes) on LoCoMo turns and on the shared mail (Enron inboxes).
//!
//! Lexicons:
//! - `built-in`: memdb's scene catalogue (a few hundred words);
//! - `30k corpus words`: the built-in scenes plus the most frequent words and word pairs of the
//!   texts themselves, up to 30,000 patterns — a realistic worst case: most texts hit many;
//! - `30k unseen words`: the built-in scenes plus synthetic words no text holds, up to 30,000 —
//!   the automaton's size without the hits.
//!
//! Reference (SAMD §5, not run here): about 25 M salient-word matches per second on an
//! i7-13700K, 0.08 ms per text with the intent known and about 1 ms against all words.
//! One thread; the CPU features the run had are printed (aho-corasick picks its SIMD
//! prefilter at run time).
//!
//! Then the trade-off curve on the LoCoMo files (cross-validated: each conversation gated by a
//! lexicon learned on the others) by learning threshold, with the built-in scenes' point, as a
//! table and a plot (`target/gate-tradeoff.svg` and `.png`) against the issue's target (≥ 95 %
//! of memorable turns kept, ≥ 40 % of the others dropped).
//!
//! ```sh
//! cargo run --release -p memdb-benches --bin gate -- [SHARED_DIR]
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use memdb::gate::{Gum, Scene, Scenes, normalise};
use memdb_benches::{cpu_features, shared_dir};

const TARGET_WORDS: usize = 30_000;

fn locomo(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let mut out = Vec::new();
    for file in files {
        if let Ok(bytes) = std::fs::read(&file)
            && let Ok(texts) = memdb_lab::gate::locomo_texts(&file, &bytes)
        {
            out.extend(texts.into_iter().map(|t| t.text));
        }
    }
    out
}

fn mail(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = listing.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                let report = memdb_formats::import::mail::parse(&p, name, &bytes);
                for item in report.items {
                    let f = item.draft.fields;
                    let text = [f.summary, f.body]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>();
                    out.push(text.join(" "));
                }
            }
        }
    }
    out
}

/// The built-in scenes plus a scene `extra` of `words`, up to `TARGET_WORDS` patterns in all.
fn with_extra(builtin: &Scenes, words: impl Iterator<Item = String>) -> Scenes {
    let mut scenes: Vec<Scene> = builtin.scenes().to_vec();
    let have = builtin.word_count();
    let mut extra: Vec<String> = Vec::new();
    for w in words {
        if have + extra.len() >= TARGET_WORDS {
            break;
        }
        if !scenes.iter().any(|s| s.words.contains(&w)) {
            extra.push(w);
        }
    }
    scenes.push(Scene {
        name: "extra".into(),
        words: extra,
        positive: vec!["bench filler".into()],
        negative: Vec::new(),
        unless: Vec::new(),
        intents: Vec::new(),
    });
    Scenes::from_scenes(scenes)
}

fn corpus_terms(texts: &[String]) -> Vec<String> {
    let mut counts: HashMap<String, u32> = HashMap::new();
    for t in texts {
        let normal = normalise(t);
        let words: Vec<&str> = normal.split(' ').filter(|w| !w.is_empty()).collect();
        for w in &words {
            *counts.entry((*w).to_owned()).or_default() += 1;
        }
        for p in words.windows(2) {
            *counts.entry(format!("{} {}", p[0], p[1])).or_default() += 1;
        }
    }
    let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
    terms.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    terms.into_iter().map(|(t, _)| t).collect()
}

fn best_of_three(mut pass: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut out = 0;
    for _ in 0..3 {
        let started = Instant::now();
        out = std::hint::black_box(pass());
        best = best.min(started.elapsed().as_secs_f64());
    }
    (best, out)
}

fn run(name: &str, corpus: &str, gum: &Gum, texts: &[String]) {
    // The decision (`passes`: stops at the first word that decides) and the explanation
    // (`hits`: every match, by scene), each timed as the best of three passes.
    let (decide_s, _) = best_of_three(|| texts.iter().filter(|t| gum.passes(t, None)).count());
    let (explain_s, matches) = best_of_three(|| {
        texts
            .iter()
            .map(|t| {
                gum.hits(t, None)
                    .scenes
                    .iter()
                    .map(|s| s.words.len())
                    .sum::<usize>()
            })
            .sum()
    });
    let n = texts.len().max(1) as f64;
    let bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "| {corpus} | {name} | {} | {} | {:.2} | {:.2} | {:.1} | {:.2} | {:.0} |",
        gum.scenes().word_count(),
        texts.len(),
        decide_s * 1e6 / n,
        explain_s * 1e6 / n,
        matches as f64 / n,
        matches as f64 / explain_s / 1e6,
        bytes as f64 / decide_s / 1e6,
    );
}

const THRESHOLDS: [f64; 9] = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5];

/// (label, memorable kept %, others dropped %): the cross-validated curve, then the built-in
/// scenes.
/// The pooled leave-one-conversation-out point of the lexicons learned at `threshold`, each
/// made into the gate's catalogue by `catalogue`.
fn cross_validated(
    groups: &[Vec<memdb_lab::gate::LabelledText>],
    threshold: f64,
    catalogue: &dyn Fn(Scenes) -> Scenes,
    name: String,
) -> (String, f64, f64) {
    let options = memdb_lab::gate::LearnOptions {
        threshold,
        ..memdb_lab::gate::LearnOptions::default()
    };
    let mut decisions = Vec::new();
    for (held_out, learned) in groups
        .iter()
        .zip(memdb_lab::gate::lexicons_leaving_one_out(groups, &options))
    {
        let gum = Gum::new(catalogue(learned)).expect("gum");
        decisions.extend(
            held_out
                .iter()
                .map(|t| (t.memorable, gum.passes(&t.text, None))),
        );
    }
    let e = memdb_lab::gate::GateEval::of(&decisions, 0.0);
    (
        name,
        100.0 * e.memorable_kept,
        100.0 * e.not_memorable_dropped,
    )
}

fn tradeoff(dir: &Path) -> Vec<(String, f64, f64)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let groups: Vec<Vec<memdb_lab::gate::LabelledText>> = files
        .iter()
        .filter_map(|f| memdb_lab::gate::locomo_texts(f, &std::fs::read(f).ok()?).ok())
        .collect();
    let mut points = Vec::new();
    if groups.len() < 2 {
        return points;
    }
    for threshold in THRESHOLDS {
        points.push(cross_validated(
            &groups,
            threshold,
            &|learned| learned,
            format!("z > {threshold}"),
        ));
    }
    // The built-in scenes joined by a lexicon learned on the other conversations.
    let builtin = Scenes::builtin().expect("scenes");
    points.push(cross_validated(
        &groups,
        2.0,
        &|learned| {
            let mut scenes = builtin.scenes().to_vec();
            scenes.extend(learned.scenes().iter().cloned());
            Scenes::from_scenes(scenes)
        },
        "built-in ∪ learned z > 2".into(),
    ));
    let all: Vec<memdb_lab::gate::LabelledText> = groups.into_iter().flatten().collect();
    let gum = Gum::new(builtin).expect("gum");
    let e = memdb_lab::gate::evaluate(&gum, &all);
    points.push((
        "built-in scenes".into(),
        100.0 * e.memorable_kept,
        100.0 * e.not_memorable_dropped,
    ));
    let predicates = memdb::gate::RulePredicates::new(&gum).expect("predicates");
    let e = memdb_lab::gate::evaluate_with(&all, |t| predicates.passes(&gum, t, None));
    points.push((
        "built-in + rule predicates".into(),
        100.0 * e.memorable_kept,
        100.0 * e.not_memorable_dropped,
    ));
    points
}

fn plot(points: &[(String, f64, f64)], out_dir: &Path) {
    use plotters::prelude::*;
    memdb_benches::register_plot_font();
    let svg = out_dir.join("gate-tradeoff.svg");
    let png = out_dir.join("gate-tradeoff.png");
    if let Err(e) = draw(
        SVGBackend::new(&svg, (900, 600)).into_drawing_area(),
        points,
    ) {
        eprintln!("svg plot: {e}");
    }
    if let Err(e) = draw(
        BitMapBackend::new(&png, (900, 600)).into_drawing_area(),
        points,
    ) {
        eprintln!("png plot: {e}");
    }
    println!("plot: {} and {}", svg.display(), png.display());
}

fn draw<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    points: &[(String, f64, f64)],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let mut chart = memdb_benches::chart_on(
        &root,
        "memdb gate on LoCoMo (leave one conversation out): kept vs dropped",
    )?
    .build_cartesian_2d(0f64..70f64, 70f64..100.5f64)?;
    chart
        .configure_mesh()
        .x_desc("not-memorable turns dropped (%)")
        .y_desc("memorable turns kept (%)")
        .draw()?;
    let curve: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.0.starts_with('z'))
        .map(|p| (p.2, p.1))
        .collect();
    chart.draw_series(LineSeries::new(curve.clone(), BLUE))?;
    chart.draw_series(points.iter().map(|(name, kept, dropped)| {
        let color = if name.starts_with('z') { BLUE } else { GREEN };
        Circle::new((*dropped, *kept), 4, color.filled())
    }))?;
    chart.draw_series(points.iter().map(|(name, kept, dropped)| {
        Text::new(
            name.clone(),
            (*dropped + 0.8, *kept + 0.4),
            ("sans-serif", 12),
        )
    }))?;
    // The target region: at least 95 % kept and 40 % dropped.
    chart.draw_series(std::iter::once(Rectangle::new(
        [(40.0, 95.0), (70.0, 100.5)],
        RED.mix(0.12).filled(),
    )))?;
    chart.draw_series(std::iter::once(Text::new(
        "target (≥ 95 % kept, ≥ 40 % dropped)",
        (41.0, 99.5),
        ("sans-serif", 13),
    )))?;
    root.present()?;
    Ok(())
}

fn main() {
    let base = std::env::args()
        .nth(1)
        .map_or_else(shared_dir, PathBuf::from);
    let corpora = [
        ("LoCoMo turns", locomo(&base.join("data/locomo"))),
        ("Enron mail", mail(&base.join("data/mail/enron"))),
    ];
    println!(
        "gate: GUM matching, one thread, CPU features: {}",
        cpu_features()
    );
    println!(
        "reference (SAMD §5, i7-13700K): ≈ 25 M matches/s; 80 µs per text with intent, ≈ 1 ms without"
    );
    println!();
    println!(
        "| texts | lexicon | words | texts | µs/text decide | µs/text explain | matches/text | M matches/s (explain) | MB/s (decide) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let builtin = Scenes::builtin().expect("built-in scenes");
    for (corpus, texts) in &corpora {
        if texts.is_empty() {
            println!("| {corpus} | (no texts found under {}) |", base.display());
            continue;
        }
        let built = Gum::new(builtin.clone()).expect("gum");
        run("built-in", corpus, &built, texts);
        let all_texts: Vec<String> = corpora.iter().flat_map(|(_, t)| t.clone()).collect();
        let corpus_words =
            Gum::new(with_extra(&builtin, corpus_terms(&all_texts).into_iter())).expect("gum");
        run("30k corpus words", corpus, &corpus_words, texts);
        let unseen = Gum::new(with_extra(
            &builtin,
            (0..TARGET_WORDS).map(|i| format!("zq{i:05}x")),
        ))
        .expect("gum");
        run("30k unseen words", corpus, &unseen, texts);
    }

    let points = tradeoff(&base.join("data/locomo"));
    if points.is_empty() {
        println!("\n(no LoCoMo files: no trade-off curve)");
        return;
    }
    println!("\ntrade-off on LoCoMo (leave one conversation out; built-in scenes unlearned):\n");
    println!("| lexicon | memorable kept % | others dropped % |");
    println!("|---|---|---|");
    for (name, kept, dropped) in &points {
        println!("| {name} | {kept:.1} | {dropped:.1} |");
    }
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    std::fs::create_dir_all(&out_dir).ok();
    plot(&points, &out_dir);
}
