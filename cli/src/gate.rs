//! `memdb gate …`: the memorability gate measured and taught on labelled conversations
//! (`memdb::gate`, measured and grown by `memdb_lab::gate`). `eval` scores a lexicon (a scene catalogue; the built-in one by default)
//! on LoCoMo turns, or with `--cross-validate` learns one per held-out conversation from the
//! others; `learn` writes a learned lexicon as a scene catalogue.

use std::process::ExitCode;

use crate::args::GateCommand;
use crate::output::Out;
use std::path::{Path, PathBuf};

use memdb::gate::{Gum, Scene, Scenes};
use memdb_lab::gate::{
    Expand, Fold, GateEval, LabelledText, LearnOptions, learn_lexicon, locomo_texts,
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

/// The lexicon a store's gate uses and its name: `file` when given, else the store's current
/// stored lexicon (`vN`), else the built-in scenes.
fn resolve_lexicon(
    snapshot: Option<&memdb::Snapshot>,
    file: Option<&Path>,
) -> Result<(Scenes, String)> {
    if let Some(file) = file {
        let name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        return Ok((read_lexicon(Some(file))?, name));
    }
    if let Some(snapshot) = snapshot
        && let Some(stored) = memdb::gate::stored_lexicon(snapshot, None)?
    {
        let label = stored.label();
        return Ok((stored.scenes, label));
    }
    Ok((read_lexicon(None)?, "builtin".to_owned()))
}

/// What the gate adds to the GUM: the rule predicates and a judge on loopback.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateExtras {
    /// "GUM + rule predicates": the scenes' `unless` expressions.
    pub(crate) rules: bool,
    /// (endpoint, model, seconds per call) of the judge.
    pub(crate) judge: Option<(String, String, u64)>,
}

impl crate::args::GateExtrasArgs {
    /// The extras these flags ask for.
    pub(crate) fn extras(&self) -> GateExtras {
        GateExtras {
            rules: self.rules,
            judge: self
                .judge
                .clone()
                .map(|model| (self.endpoint.clone(), model, self.timeout)),
        }
    }
}

/// The ingest's gate stage for `store`: over `lexicon` (else the store's lexicon, else the
/// built-in scenes), with the extras asked for; a judge gets the prompts of the store's intent
/// clusters (none in a store without items).
pub(crate) fn stage(
    store: &memdb::Store,
    lexicon: Option<&Path>,
    mode: memdb::gate::GateMode,
    extras: &GateExtras,
) -> Result<memdb::gate::GateStage> {
    let snapshot = store.snapshot()?;
    let (scenes, label) = resolve_lexicon(Some(&snapshot), lexicon)?;
    let gum = std::sync::Arc::new(gum(scenes)?);
    let mut stage = memdb::gate::GateStage::new(gum.clone(), mode, label);
    if extras.rules {
        stage.predicates = Some(std::sync::Arc::new(predicates(&gum)?));
    }
    if let Some((endpoint, model, timeout)) = &extras.judge {
        let judge = model_judge(endpoint, model, *timeout)?;
        let options = memdb_lab::gate::CpmOptions::default();
        let affinity = memdb_lab::gate::store_affinity(&snapshot, &gum, DEFAULT_MIN_SHARE)?;
        let prompts = memdb_lab::gate::cluster_intents(
            &affinity.matrix,
            affinity.intents.len(),
            affinity.scenes,
            &options,
        )
        .map(|c| memdb_lab::gate::cluster_prompts(&affinity, &c))
        .unwrap_or_default();
        stage.judge = Some(memdb::gate::JudgeStage {
            judge: std::sync::Arc::new(judge),
            prompts: std::sync::Arc::new(prompts),
        });
    }
    Ok(stage)
}

/// The judge `model` at `endpoint`, `timeout` seconds per call.
fn model_judge(endpoint: &str, model: &str, timeout: u64) -> Result<memdb::gate::ModelJudge> {
    memdb::gate::ModelJudge::new(endpoint, model, std::time::Duration::from_secs(timeout)).map_err(
        |e| CliError::Gate {
            file: PathBuf::from(endpoint),
            reason: e.to_string(),
        },
    )
}

/// A scene belongs to an intent's row of the affinity matrix when at least this share of the
/// intent's items hit it (`memdb gate clusters --min-share`).
pub(crate) const DEFAULT_MIN_SHARE: f64 = 0.05;

fn predicates(gum: &Gum) -> Result<memdb::gate::RulePredicates> {
    memdb::gate::RulePredicates::new(gum).map_err(|e| CliError::Gate {
        file: PathBuf::from("(unless expressions)"),
        reason: e.to_string(),
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
    extras: &GateExtras,
    expansion: Option<memdb_lab::gate::Expansion>,
) -> Result<(Value, String)> {
    let groups = read_groups(locomo)?;
    let all: Vec<LabelledText> = groups.iter().flatten().cloned().collect();
    if !cross_validate {
        if expansion.is_some() {
            return Err(CliError::Usage(
                "--expand grows learned lexicons: use it with --cross-validate",
            ));
        }
        let scenes = read_lexicon(lexicon)?;
        let words = scenes.word_count();
        let gate = std::sync::Arc::new(gum(scenes)?);
        let rules = extras.rules.then(|| predicates(&gate)).transpose()?;
        let judge = extras
            .judge
            .as_ref()
            .map(|(endpoint, model, timeout)| model_judge(endpoint, model, *timeout))
            .transpose()?;
        let mut judge_failures = 0usize;
        let e = memdb_lab::gate::evaluate_with(&all, |text| {
            let hits = match &rules {
                Some(p) => p.hits(&gate, text, None).hits,
                None if judge.is_none() => return gate.passes(text, None),
                None => gate.hits(text, None),
            };
            if !hits.is_memorable() {
                return false;
            }
            let Some(judge) = &judge else { return true };
            use memdb::gate::Judge;
            let prompt = memdb::gate::ClusterPrompts::default().prompt(gate.scenes(), None, &hits);
            judge.judge(text, &prompt).map_or_else(
                |_| {
                    judge_failures += 1;
                    true
                },
                |v| v.memorable,
            )
        });
        let name = match (extras.rules, extras.judge.is_some()) {
            (false, false) => "GUM",
            (true, false) => "GUM + rule predicates",
            (false, true) => "GUM + LLM judge",
            (true, true) => "GUM + rule predicates + LLM judge",
        };
        let mut doc = figures(&e);
        doc["gate"] = json!(name);
        doc["lexicon"] = json!({
            "file": lexicon.map(|p| p.display().to_string()),
            "words": words,
        });
        if judge.is_some() {
            doc["judge_failures"] = json!(judge_failures);
        }
        let text = format!("{name}\n{HEADER}\n{}", row("all", &e, words));
        return Ok((doc, text));
    }
    if extras.rules || extras.judge.is_some() {
        return Err(CliError::Usage(
            "--cross-validate scores learned lexicons alone: leave out --rules and --judge",
        ));
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
    let space = match expansion {
        Some(e) => {
            let texts: Vec<&str> = all.iter().map(|t| t.text.as_str()).collect();
            Some(WordSpace::of(&texts, e)?)
        }
        None => None,
    };
    let (rows, pooled) = leave_one_out(&groups, options, space.as_ref())?;
    let mut lines = vec![HEADER.to_owned()];
    let mut folds = Vec::new();
    for Fold { group, eval, words } in &rows {
        lines.push(row(group, eval, *words));
        let mut fold = figures(eval);
        fold["held_out"] = json!(group);
        fold["words"] = json!(words);
        folds.push(fold);
    }
    lines.push(row("pooled", &pooled, 0));
    let mut doc = figures(&pooled);
    doc["folds"] = Value::Array(folds);
    doc["threshold"] = json!(options.threshold);
    if let Some(e) = expansion {
        doc["expansion"] = json!({
            "neighbours": e.neighbours, "min_cosine": e.min_cosine, "min_texts": e.min_texts,
        });
    }
    Ok((doc, lines.join("\n")))
}

/// The MiniLM vectors of a corpus's words, for seed expansion.
struct WordSpace {
    vectors: std::collections::HashMap<String, Vec<f32>>,
    expansion: memdb_lab::gate::Expansion,
}

impl WordSpace {
    /// Encodes every word of `texts` (in at least `expansion.min_texts` of them) with the
    /// installed encoder.
    fn of(texts: &[&str], expansion: memdb_lab::gate::Expansion) -> Result<WordSpace> {
        use memdb_encode::Encoder;
        let encoder = crate::model::load_encoder(true, crate::model::Download::Ask)?;
        let words = memdb_lab::gate::vocabulary(texts, expansion.min_texts);
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        eprintln!("memdb: encoding {} words for seed expansion", refs.len());
        let vectors = encoder.encode(&refs)?;
        Ok(WordSpace {
            vectors: words.into_iter().zip(vectors).collect(),
            expansion,
        })
    }

    /// `scenes` expanded by the words of `texts`.
    fn expand(&self, scenes: &Scenes, texts: &[&str]) -> Scenes {
        memdb_lab::gate::expand_lexicon(scenes, texts, &self.expansion, &|w| {
            self.vectors.get(w).cloned()
        })
    }
}

/// Leave one conversation out (`memdb_lab::gate::cross_validate`), expanded by `space`'s words
/// when given.
fn leave_one_out(
    groups: &[Vec<LabelledText>],
    options: &LearnOptions,
    space: Option<&WordSpace>,
) -> Result<(Vec<Fold>, GateEval)> {
    let expand = |scenes: &Scenes, train: &[&str]| match space {
        Some(space) => space.expand(scenes, train),
        None => scenes.clone(),
    };
    memdb_lab::gate::cross_validate(groups, options, space.map(|_| &expand as &Expand<'_>)).map_err(
        |e| CliError::Gate {
            file: PathBuf::from("(scene words)"),
            reason: e.to_string(),
        },
    )
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
        let (rows, pooled) = leave_one_out(&groups, &options, None)?;
        let words = rows.iter().map(|r| r.words).sum::<usize>() as f64 / rows.len().max(1) as f64;
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

/// `memdb gate learn`: the lexicon learned on all the turns, written to `out` and/or installed
/// as the next lexicon version of the store at `store`; returns what it did.
pub(crate) fn learn(
    locomo: &[PathBuf],
    out: Option<&Path>,
    store: Option<&Path>,
    options: &LearnOptions,
    expansion: Option<memdb_lab::gate::Expansion>,
) -> Result<Value> {
    if out.is_none() && store.is_none() {
        return Err(CliError::Usage(
            "gate learn needs --out FILE, --store DIR or both",
        ));
    }
    let groups = read_groups(locomo)?;
    let texts: Vec<(&str, bool)> = groups
        .iter()
        .flatten()
        .map(|t| (t.text.as_str(), t.memorable))
        .collect();
    let mut scenes = learn_lexicon(&texts, options, "learned");
    if let Some(e) = expansion {
        let all: Vec<&str> = texts.iter().map(|(t, _)| *t).collect();
        scenes = WordSpace::of(&all, e)?.expand(&scenes, &all);
    }
    let words = scenes.word_count();
    let mut doc = json!({
        "texts": texts.len(),
        "words": words,
        "threshold": options.threshold,
    });
    if let Some(out) = out {
        std::fs::write(out, scenes.to_toml()).map_err(|e| CliError::io("write", out, e))?;
        doc["out"] = json!(out.display().to_string());
    }
    if let Some(dir) = store {
        let store = crate::open::open_store(dir)?;
        let sources: Vec<String> = locomo.iter().map(|p| p.display().to_string()).collect();
        let origin = format!(
            "learned from LoCoMo {} (threshold {})",
            sources.join(", "),
            options.threshold
        );
        let version = memdb::gate::install_lexicon(&store, &scenes, &origin)?;
        doc["store"] = json!(dir.display().to_string());
        doc["version"] = json!(version);
    }
    Ok(doc)
}

/// `memdb gate lexicon`: the store's lexicon versions; or installs a file as the next version,
/// makes a stored version current, or prints one as TOML.
pub(crate) fn lexicon(
    dir: &Path,
    install: Option<&Path>,
    use_version: Option<u32>,
    export: Option<u32>,
) -> Result<(Value, String)> {
    if let Some(file) = install {
        let scenes = read_lexicon(Some(file))?;
        let store = crate::open::open_store(dir)?;
        let version = memdb::gate::install_lexicon(&store, &scenes, &file.display().to_string())?;
        return Ok((
            json!({"installed": version, "words": scenes.word_count()}),
            format!(
                "installed {} as gate lexicon v{version} ({} words); it is now current",
                file.display(),
                scenes.word_count()
            ),
        ));
    }
    if let Some(version) = use_version {
        let store = crate::open::open_store(dir)?;
        memdb::gate::use_lexicon(&store, version)?;
        return Ok((
            json!({"current": version}),
            format!("gate lexicon v{version} is now current"),
        ));
    }
    let store = crate::open::open_for_reading(dir)?;
    let snapshot = store.snapshot()?;
    if let Some(version) = export {
        let stored = memdb::gate::stored_lexicon(&snapshot, Some(version))?
            .ok_or(memdb::Error::NoLexicon { version })?;
        let toml = stored.scenes.to_toml();
        return Ok((json!({"version": version, "toml": toml}), toml));
    }
    let (all, current) = memdb::gate::stored_lexicons(&snapshot)?;
    let mut lines = vec!["version | current | scenes | words | installed | origin".to_owned()];
    let mut docs = Vec::new();
    for l in &all {
        let installed = jiff::Timestamp::from_millisecond(l.created_ms)
            .map(|t| t.to_string())
            .unwrap_or_default();
        let is_current = Some(l.version) == current;
        lines.push(format!(
            "{:>7} | {:>7} | {:>6} | {:>5} | {installed} | {}",
            l.label(),
            if is_current { "yes" } else { "" },
            l.scenes.scenes().len(),
            l.scenes.word_count(),
            l.origin
        ));
        docs.push(json!({
            "version": l.version, "current": is_current, "created_ms": l.created_ms,
            "origin": l.origin, "scenes": l.scenes.scenes().len(), "words": l.scenes.word_count(),
        }));
    }
    if all.is_empty() {
        lines = vec!["no gate lexicon stored: the gate uses the built-in scenes".to_owned()];
    }
    Ok((
        json!({"current": current, "versions": docs}),
        lines.join("\n"),
    ))
}

/// `memdb gate check`: what the gate would keep or drop of FILES, and why, for the store at
/// `dir` (its lexicon, its stored items for corrections, its clusters for a judge); writes
/// nothing.
pub(crate) fn check(
    dir: &Path,
    format: crate::args::ImportFormat,
    files: &[PathBuf],
    lexicon: Option<&Path>,
    extras: &GateExtras,
) -> Result<(Value, String)> {
    let store = crate::open::open_for_reading(dir)?;
    let stage = stage(&store, lexicon, memdb::gate::GateMode::Drop, extras)?;
    let snapshot = store.snapshot()?;
    let (drafts, skipped) = memdb_import::drafts(format.format(), files);
    let (mut kept, mut dropped) = (0usize, 0usize);
    let mut lines = Vec::new();
    let mut items = Vec::new();
    for (origin, draft) in &drafts {
        let decision = stage.decide(&draft.fields);
        let external = draft.fields.external_id.as_deref();
        let correction = !decision.keep
            && match external {
                Some(e) => snapshot.get_by_external_id(e)?.is_some(),
                None => false,
            };
        let keep = decision.keep || correction;
        let mut reason = decision.reason.clone();
        if correction {
            reason.push_str("; kept: it corrects a stored item");
        }
        if let Some(why) = &decision.judge_failed {
            reason.push_str(&format!("; the judge failed: {why}"));
        }
        if keep {
            kept += 1;
        } else {
            dropped += 1;
        }
        lines.push(format!(
            "{} {origin}: {reason}",
            if keep { "keep" } else { "drop" }
        ));
        items.push(json!({
            "origin": origin,
            "external_id": external,
            "keep": keep,
            "reason": reason,
            "scenes": decision.hits.scenes.iter()
                .map(|h| json!({"scene": h.name, "words": h.words}))
                .collect::<Vec<_>>(),
        }));
    }
    for s in &skipped {
        lines.push(format!("skip {s}"));
    }
    lines.push(format!(
        "{kept} kept, {dropped} dropped, {} skipped (lexicon {}; nothing written)",
        skipped.len(),
        stage.lexicon
    ));
    let doc = json!({
        "lexicon": stage.lexicon,
        "kept": kept,
        "dropped": dropped,
        "items": items,
        "skipped": skipped,
    });
    Ok((doc, lines.join("\n")))
}

/// `memdb gate clusters`: the store's intent × scene matrix and SAMD's intent clusters, each
/// with the scenes its intents hit and those scenes' rules, for a person to review.
pub(crate) fn clusters(
    dir: &Path,
    lexicon: Option<&Path>,
    min_share: f64,
    options: &memdb_lab::gate::CpmOptions,
) -> Result<(Value, String)> {
    let store = crate::open::open_for_reading(dir)?;
    let snapshot = store.snapshot()?;
    let gate = gum(resolve_lexicon(Some(&snapshot), lexicon)?.0)?;
    let e = memdb_lab::gate::store_affinity(&snapshot, &gate, min_share)?;
    let scenes = gate.scenes().scenes();
    let names: Vec<&str> = e.intents.iter().map(|s| s.name()).collect();
    let Some(c) = memdb_lab::gate::cluster_intents(&e.matrix, e.intents.len(), e.scenes, options)
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

/// What `memdb gate generate` is asked to do.
pub(crate) struct GenerateArgs<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) model: &'a str,
    pub(crate) timeout: u64,
    pub(crate) lexicon: Option<&'a Path>,
    pub(crate) personas: Option<&'a Path>,
    pub(crate) scenes: &'a [String],
    pub(crate) out: Option<&'a Path>,
    pub(crate) store: Option<&'a Path>,
    pub(crate) show_progress: bool,
}

/// `memdb gate generate`: a scene catalogue grown by multi-view role-play (SAMD Eq. 4) through
/// a model on loopback, written to a file and/or installed in a store.
pub(crate) fn generate(args: &GenerateArgs<'_>) -> Result<(Value, String)> {
    if args.out.is_none() && args.store.is_none() {
        return Err(CliError::Usage(
            "gate generate needs --out FILE, --store DIR or both",
        ));
    }
    let base = read_lexicon(args.lexicon)?;
    let chosen: Vec<Scene> = base
        .scenes()
        .iter()
        .filter(|s| {
            args.scenes.is_empty() || args.scenes.iter().any(|n| n.eq_ignore_ascii_case(&s.name))
        })
        .cloned()
        .collect();
    if chosen.is_empty() {
        return Err(CliError::Usage("--scenes names no scene of the catalogue"));
    }
    let personas_text = match args.personas {
        Some(file) => std::fs::read_to_string(file).map_err(|e| CliError::io("read", file, e))?,
        None => memdb_lab::gate::DEFAULT_PERSONAS.join("\n"),
    };
    let personas: Vec<&str> = personas_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if personas.is_empty() {
        return Err(CliError::Usage("--personas names no persona"));
    }
    let model = memdb_lab::gate::RoleplayModel::new(
        args.endpoint,
        args.model,
        std::time::Duration::from_secs(args.timeout),
    )
    .map_err(|e| CliError::Gate {
        file: PathBuf::from(args.endpoint),
        reason: e.to_string(),
    })?;
    let mut bar = crate::progress::bar(
        (chosen.len() * personas.len()) as u64,
        "role-play",
        args.show_progress,
    );
    let (grown, report) = memdb_lab::gate::grow_by_roleplay(
        &Scenes::from_scenes(chosen),
        &personas,
        &|persona, scene| model.words(persona, scene),
        &mut |done, _| bar.set_position(done as u64),
    );
    bar.finish_and_clear();
    // The grown scenes replace theirs in the whole catalogue.
    let merged: Vec<Scene> = base
        .scenes()
        .iter()
        .map(|s| {
            grown
                .scenes()
                .iter()
                .find(|g| g.name == s.name)
                .unwrap_or(s)
                .clone()
        })
        .collect();
    let catalogue = Scenes::from_scenes(merged);
    let added: usize = report.added.iter().map(|(_, w)| w.len()).sum();
    let mut lines: Vec<String> = report
        .added
        .iter()
        .map(|(scene, words)| format!("{scene}: +{} ({})", words.len(), words.join(", ")))
        .collect();
    for (persona, scene, why) in &report.failures {
        lines.push(format!("failed: {scene} as {persona}: {why}"));
    }
    let mut doc = json!({
        "personas": personas.len(),
        "added": report.added.iter().map(|(s, w)| json!({"scene": s, "words": w})).collect::<Vec<_>>(),
        "failures": report.failures.iter()
            .map(|(p, s, why)| json!({"persona": p, "scene": s, "why": why}))
            .collect::<Vec<_>>(),
        "words": catalogue.word_count(),
    });
    if let Some(out) = args.out {
        std::fs::write(out, catalogue.to_toml()).map_err(|e| CliError::io("write", out, e))?;
        doc["out"] = json!(out.display().to_string());
    }
    if let Some(dir) = args.store {
        let store = crate::open::open_store(dir)?;
        let origin = format!(
            "role-play by {} ({} personas) over {}",
            args.model,
            personas.len(),
            args.lexicon.map_or_else(
                || "the built-in scenes".to_owned(),
                |p| p.display().to_string()
            )
        );
        let version = memdb::gate::install_lexicon(&store, &catalogue, &origin)?;
        doc["version"] = json!(version);
    }
    lines.push(format!(
        "{added} words added over {} personas; {} requests failed",
        personas.len(),
        report.failures.len()
    ));
    Ok((doc, lines.join("\n")))
}

/// `memdb gate …`.
pub(crate) fn command(command: GateCommand, out: &Out) -> Result<ExitCode> {
    match command {
        GateCommand::Eval {
            locomo,
            lexicon,
            cross_validate,
            threshold,
            sweep,
            extras,
            expand,
        } => {
            let (doc, text) = if sweep {
                self::sweep(&locomo, &[0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5])?
            } else {
                let options = memdb_lab::gate::LearnOptions {
                    threshold,
                    ..memdb_lab::gate::LearnOptions::default()
                };
                eval(
                    &locomo,
                    lexicon.as_deref(),
                    cross_validate,
                    &options,
                    &extras.extras(),
                    expand.expansion(),
                )?
            };
            out.emit(doc, || text);
        }
        GateCommand::Clusters {
            dir,
            lexicon,
            min_share,
            sigma,
            epsilon,
            rank,
        } => {
            let options = memdb_lab::gate::CpmOptions {
                sigma,
                epsilon,
                rank,
            };
            let (doc, text) = clusters(&dir, lexicon.as_deref(), min_share, &options)?;
            out.emit(doc, || text);
        }
        GateCommand::Learn {
            locomo,
            out: file,
            store,
            threshold,
            expand,
        } => {
            let options = memdb_lab::gate::LearnOptions {
                threshold,
                ..memdb_lab::gate::LearnOptions::default()
            };
            let doc = learn(
                &locomo,
                file.as_deref(),
                store.as_deref(),
                &options,
                expand.expansion(),
            )?;
            out.emit(doc.clone(), || {
                let mut text = format!(
                    "learned {} salient words from {} turns",
                    doc["words"], doc["texts"]
                );
                if let Some(file) = &file {
                    text.push_str(&format!(" into {}", file.display()));
                }
                if let Some(store) = &store {
                    text.push_str(&format!(
                        "; installed as gate lexicon v{} of {}",
                        doc["version"],
                        store.display()
                    ));
                }
                text
            });
        }
        GateCommand::Check {
            dir,
            files,
            format,
            lexicon,
            extras,
        } => {
            let (doc, text) = check(&dir, format, &files, lexicon.as_deref(), &extras.extras())?;
            out.emit(doc, || text);
        }
        GateCommand::Generate {
            model,
            endpoint,
            timeout,
            lexicon,
            personas,
            scenes,
            out: file,
            store,
        } => {
            let (doc, text) = generate(&GenerateArgs {
                endpoint: &endpoint,
                model: &model,
                timeout,
                lexicon: lexicon.as_deref(),
                personas: personas.as_deref(),
                scenes: &scenes,
                out: file.as_deref(),
                store: store.as_deref(),
                show_progress: !out.json,
            })?;
            out.emit(doc, || text);
        }
        GateCommand::Lexicon {
            dir,
            install,
            use_version,
            export,
        } => {
            let (doc, text) = lexicon(&dir, install.as_deref(), use_version, export)?;
            out.emit(doc, || text);
        }
    }
    Ok(ExitCode::SUCCESS)
}
