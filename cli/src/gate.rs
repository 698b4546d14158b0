//! `memdb gate …`: the memorability gate measured and taught on labelled conversations
//! (`memdb::gate`). `eval` scores a lexicon (a scene catalogue; the built-in one by default)
//! on LoCoMo turns, or with `--cross-validate` learns one per held-out conversation from the
//! others; `learn` writes a learned lexicon as a scene catalogue.

use std::path::{Path, PathBuf};

use memdb::gate::{
    GateEval, Gum, LabelledText, LearnOptions, Scenes, evaluate, learn_lexicon, locomo_texts,
};
use serde_json::{Value, json};

use crate::error::{CliError, Result};

/// The LoCoMo files named: each path a file, or a folder whose `*.json` files are taken.
fn locomo_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let listing = std::fs::read_dir(path).map_err(|e| CliError::io("list", path, e))?;
            let mut found: Vec<PathBuf> = listing
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        return Err(CliError::Usage("--locomo names no LoCoMo file"));
    }
    Ok(files)
}

/// Every file's labelled turns, one group per file.
fn read_groups(paths: &[PathBuf]) -> Result<Vec<Vec<LabelledText>>> {
    locomo_files(paths)?
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).map_err(|e| CliError::io("read", file, e))?;
            locomo_texts(file, &bytes).map_err(|e| CliError::Gate {
                file: file.clone(),
                reason: e.to_string(),
            })
        })
        .collect()
}

fn read_lexicon(file: Option<&Path>) -> Result<Scenes> {
    match file {
        None => Scenes::builtin().map_err(|e| CliError::Gate {
            file: PathBuf::from("(built-in scenes)"),
            reason: e.to_string(),
        }),
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| CliError::io("read", file, e))?;
            Scenes::from_toml(&text).map_err(|e| CliError::Gate {
                file: file.to_path_buf(),
                reason: e.to_string(),
            })
        }
    }
}

/// The ingest's gate stage over a lexicon file (or the built-in scenes).
pub(crate) fn stage(
    lexicon: Option<&Path>,
    mode: memdb::gate::GateMode,
) -> Result<memdb::gate::GateStage> {
    Ok(memdb::gate::GateStage {
        gum: std::sync::Arc::new(gum(read_lexicon(lexicon)?)?),
        mode,
    })
}

fn gum(scenes: Scenes) -> Result<Gum> {
    Gum::new(scenes).map_err(|e| CliError::Gate {
        file: PathBuf::from("(scene words)"),
        reason: e.to_string(),
    })
}

fn figures(e: &GateEval) -> Value {
    json!({
        "texts": e.texts,
        "memorable": e.memorable,
        "memorable_kept": e.memorable_kept,
        "not_memorable_dropped": e.not_memorable_dropped,
        "accuracy": e.accuracy,
        "weighted_f1": e.weighted_f1,
        "us_per_text": e.us_per_text,
    })
}

fn row(name: &str, e: &GateEval, words: usize) -> String {
    format!(
        "{name:>10} | {:>5} | {:>9} | {:>6.1} % | {:>7.1} % | {:>8.3} | {:>11.3} | {words:>5} | {:>7.2}",
        e.texts,
        e.memorable,
        100.0 * e.memorable_kept,
        100.0 * e.not_memorable_dropped,
        e.accuracy,
        e.weighted_f1,
        e.us_per_text
    )
}

const HEADER: &str = "  held out | texts | memorable |     kept | dropped | accuracy | weighted F1 | words | µs/text";

/// `memdb gate eval`: the JSON document and the table.
pub(crate) fn eval(
    locomo: &[PathBuf],
    lexicon: Option<&Path>,
    cross_validate: bool,
    options: &LearnOptions,
) -> Result<(Value, String)> {
    let groups = read_groups(locomo)?;
    let all: Vec<LabelledText> = groups.iter().flatten().cloned().collect();
    if !cross_validate {
        let scenes = read_lexicon(lexicon)?;
        let words = scenes.word_count();
        let e = evaluate(&gum(scenes)?, &all);
        let mut doc = figures(&e);
        doc["lexicon"] = json!({
            "file": lexicon.map(|p| p.display().to_string()),
            "words": words,
        });
        let text = format!("{HEADER}\n{}", row("all", &e, words));
        return Ok((doc, text));
    }
    if lexicon.is_some() {
        return Err(CliError::Usage(
            "--cross-validate learns its own lexicons: leave out --lexicon",
        ));
    }
    if groups.len() < 2 {
        return Err(CliError::Usage(
            "--cross-validate needs at least two conversations",
        ));
    }
    let (rows, pooled) = leave_one_out(&groups, options)?;
    let mut lines = vec![HEADER.to_owned()];
    let mut folds = Vec::new();
    for (group, e, words) in &rows {
        lines.push(row(group, e, *words));
        let mut fold = figures(e);
        fold["held_out"] = json!(group);
        fold["words"] = json!(words);
        folds.push(fold);
    }
    lines.push(row("pooled", &pooled, 0));
    let mut doc = figures(&pooled);
    doc["folds"] = Value::Array(folds);
    doc["threshold"] = json!(options.threshold);
    Ok((doc, lines.join("\n")))
}

/// One held-out conversation's figures: (conversation, figures, lexicon words).
type Fold = (String, GateEval, usize);

/// Leave one conversation out: its turns are gated by a lexicon learned on the others only;
/// the pooled figures count every turn once, under the lexicon that never saw it.
fn leave_one_out(
    groups: &[Vec<LabelledText>],
    options: &LearnOptions,
) -> Result<(Vec<Fold>, GateEval)> {
    let mut rows = Vec::new();
    let (mut decisions, mut total_us) = (Vec::new(), 0.0);
    let lexicons = memdb::gate::lexicons_leaving_one_out(groups, options);
    for (held_out, scenes) in groups.iter().zip(lexicons) {
        let words = scenes.word_count();
        let gate = gum(scenes)?;
        let e = evaluate(&gate, held_out);
        total_us += e.us_per_text * e.texts as f64;
        decisions.extend(
            held_out
                .iter()
                .map(|t| (t.memorable, gate.passes(&t.text, None))),
        );
        let group = held_out.first().map_or("", |t| t.group.as_str()).to_owned();
        rows.push((group, e, words));
    }
    Ok((rows, GateEval::of(&decisions, total_us)))
}

/// The trade-off curve: pooled cross-validated figures for each learning threshold.
pub(crate) fn sweep(locomo: &[PathBuf], thresholds: &[f64]) -> Result<(Value, String)> {
    let groups = read_groups(locomo)?;
    if groups.len() < 2 {
        return Err(CliError::Usage("--sweep needs at least two conversations"));
    }
    let mut lines =
        vec!["threshold | words (mean) | kept | dropped | accuracy | weighted F1".to_owned()];
    let mut points = Vec::new();
    for &threshold in thresholds {
        let options = LearnOptions {
            threshold,
            ..LearnOptions::default()
        };
        let (rows, pooled) = leave_one_out(&groups, &options)?;
        let words = rows.iter().map(|r| r.2).sum::<usize>() as f64 / rows.len().max(1) as f64;
        lines.push(format!(
            "{threshold:>9} | {words:>12.0} | {:>5.1} % | {:>6.1} % | {:>8.3} | {:>11.3}",
            100.0 * pooled.memorable_kept,
            100.0 * pooled.not_memorable_dropped,
            pooled.accuracy,
            pooled.weighted_f1
        ));
        let mut point = figures(&pooled);
        point["threshold"] = json!(threshold);
        point["mean_words"] = json!(words);
        points.push(point);
    }
    Ok((json!({"curve": points}), lines.join("\n")))
}

/// `memdb gate learn`: writes the lexicon learned on all the turns; returns what it wrote.
pub(crate) fn learn(locomo: &[PathBuf], out: &Path, options: &LearnOptions) -> Result<Value> {
    let groups = read_groups(locomo)?;
    let texts: Vec<(&str, bool)> = groups
        .iter()
        .flatten()
        .map(|t| (t.text.as_str(), t.memorable))
        .collect();
    let scenes = learn_lexicon(&texts, options, "learned");
    let words = scenes.word_count();
    std::fs::write(out, scenes.to_toml()).map_err(|e| CliError::io("write", out, e))?;
    Ok(json!({
        "out": out.display().to_string(),
        "texts": texts.len(),
        "words": words,
        "threshold": options.threshold,
    }))
}

/// `memdb gate clusters`: the store's intent × scene matrix and SAMD's intent clusters, each
/// with the scenes its intents hit and those scenes' rules, for a person to review.
pub(crate) fn clusters(
    dir: &Path,
    lexicon: Option<&Path>,
    min_share: f64,
    options: &memdb::gate::CpmOptions,
) -> Result<(Value, String)> {
    let store = crate::open_for_reading(dir)?;
    let snapshot = store.snapshot()?;
    let gate = gum(read_lexicon(lexicon)?)?;
    let e = memdb::gate::store_affinity(&snapshot, &gate, min_share)?;
    let scenes = gate.scenes().scenes();
    let names: Vec<&str> = e.intents.iter().map(|s| s.name()).collect();
    let Some(c) = memdb::gate::cluster_intents(&e.matrix, e.intents.len(), e.scenes, options)
    else {
        let doc = json!({"intents": names, "clusters": [], "why": "no intent hits any scene"});
        return Ok((
            doc,
            "no intent of this store hits any scene: nothing to cluster".into(),
        ));
    };
    // A cluster's scenes: those any of its intents has in E.
    let scenes_of = |members: &[usize]| -> Vec<usize> {
        (0..e.scenes)
            .filter(|&s| members.iter().any(|&i| e.matrix[i * e.scenes + s] == 1))
            .collect()
    };
    let mut groups: Vec<(&str, Vec<usize>)> =
        c.by_distance.iter().map(|m| ("eq6", m.clone())).collect();
    groups.extend(c.by_argmax.iter().map(|(_, m)| ("eq7", m.clone())));
    let mut lines = vec![format!(
        "rank {} ({:.1} % of E's ones rebuilt above σ = {}), ε = {}, scene share ≥ {min_share}",
        c.rank,
        100.0 * c.reconstructed,
        options.sigma,
        options.epsilon
    )];
    let mut json_clusters = Vec::new();
    for (n, (rule, members)) in groups.iter().enumerate() {
        let own = scenes_of(members);
        let intents: Vec<&str> = members.iter().map(|&i| names[i]).collect();
        lines.push(format!(
            "cluster {} ({rule}): {}",
            n + 1,
            intents.join(", ")
        ));
        let mut scene_docs = Vec::new();
        for &s in &own {
            let scene = &scenes[s];
            lines.push(format!("  scene {}", scene.name));
            for p in &scene.positive {
                lines.push(format!("    + {p}"));
            }
            for neg in &scene.negative {
                lines.push(format!("    - {neg}"));
            }
            scene_docs.push(json!({
                "scene": scene.name, "positive": scene.positive, "negative": scene.negative,
            }));
        }
        json_clusters.push(json!({"by": rule, "intents": intents, "scenes": scene_docs}));
    }
    let doc = json!({
        "rank": c.rank,
        "reconstructed": c.reconstructed,
        "sigma": options.sigma,
        "epsilon": options.epsilon,
        "min_share": min_share,
        "intents": names,
        "items": e.items,
        "scenes": scenes.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        "matrix": e.matrix.chunks(e.scenes.max(1)).collect::<Vec<_>>(),
        "hits": e.hits.chunks(e.scenes.max(1)).collect::<Vec<_>>(),
        "clusters": json_clusters,
    });
    Ok((doc, lines.join("\n")))
}
