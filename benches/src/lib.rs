//! Shared helpers of the benchmark programs in `src/bin/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Environment variable naming the Python interpreter that runs the peer scripts in `peers/`
/// (for example a virtual environment's `bin/python` with sentence-transformers or faiss-cpu).
pub const PEER_PYTHON_ENV: &str = "MEMDB_PEER_PYTHON";

/// The interpreter for peer scripts: `$MEMDB_PEER_PYTHON`, else `python3`.
pub fn peer_python() -> String {
    std::env::var(PEER_PYTHON_ENV)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

/// The shared folder with data and reference figures: `$MEMDB_SHARED_DIR`, else `../shared`
/// beside the repository.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("MEMDB_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

/// The item texts of one LoCoMo file, sessions in number order, turns in list order, as
/// DESIGN.md §6 gives an item's text: `[<session date_time>] <speaker>: <text>`, plus
/// ` [image: <blip_caption>]` when the turn has one.
pub fn locomo_texts(file: &Path) -> Result<Vec<String>, String> {
    Ok(locomo_turns(file)?
        .into_iter()
        .map(|(_, text)| text)
        .collect())
}

/// Like [`locomo_texts`], each text with its turn's `dia_id`.
pub fn locomo_turns(file: &Path) -> Result<Vec<(String, String)>, String> {
    let bad = |why: &str| format!("{}: {why}", file.display());
    let bytes = std::fs::read(file).map_err(|e| bad(&e.to_string()))?;
    let object: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    let object = object.as_object().ok_or_else(|| bad("not a JSON object"))?;
    let mut sessions: Vec<(u32, &Vec<Value>)> = object
        .iter()
        .filter_map(|(key, value)| {
            let n = key.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, value.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut texts = Vec::new();
    for (n, turns) in sessions {
        let date = object
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad(&format!("session {n} has no date_time")))?;
        for turn in turns {
            let (Some(speaker), Some(text), Some(dia_id)) = (
                turn.get("speaker").and_then(Value::as_str),
                turn.get("text").and_then(Value::as_str),
                turn.get("dia_id").and_then(Value::as_str),
            ) else {
                return Err(bad(&format!(
                    "a turn of session {n} lacks speaker, text or dia_id"
                )));
            };
            let mut item = format!("[{date}] {speaker}: {text}");
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                item.push_str(&format!(" [image: {caption}]"));
            }
            texts.push((dia_id.to_owned(), item));
        }
    }
    Ok(texts)
}

/// A field of /proc/self/status in KiB (VmHWM: peak RSS, VmRSS: current); 0 if unreadable.
pub fn proc_status_kib(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0), so the next peak is that of what follows.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Runs a peer script (`command` already holds the interpreter, script and arguments) and parses
/// the JSON document it prints last on stdout; its stderr goes into the error when it fails.
pub fn run_peer_json(mut command: Command, script: &Path) -> Result<Value, String> {
    let out = command
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "peer failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().ok_or("the peer printed nothing")?;
    serde_json::from_str(last).map_err(|e| format!("peer output is not JSON ({e}): {last:.200}"))
}

/// The value after `flag` in `args` (`--flag VALUE`), if both are there.
pub fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The installed all-MiniLM-L6-v2 encoder on two threads (these machines have two cores), and
/// the folder it came from; panics with the reason when it is not installed.
pub fn minilm_two_threads() -> (memdb_encode::MiniLm, memdb_encode::model::ModelDir) {
    let model_dir = memdb_encode::model::locate().unwrap_or_else(|e| panic!("{e}"));
    let encoder = memdb_encode::MiniLm::load(
        &model_dir,
        memdb_encode::EncoderOptions {
            threads: Some(2),
            ..memdb_encode::EncoderOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (encoder, model_dir)
}

/// Registers the embedded DejaVu Sans as plotters' `sans-serif` (no system font library).
pub fn register_plot_font() {
    static FONT: &[u8] = include_bytes!("../../engine/assets/fonts/DejaVuSans.ttf");
    let _ = plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT);
}

/// A white chart area with the benches' caption, margin and label areas.
pub fn chart_on<'a, 'b, DB: plotters::prelude::DrawingBackend>(
    root: &'a plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
) -> Result<plotters::prelude::ChartBuilder<'a, 'b, DB>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&plotters::style::WHITE)?;
    let mut chart = plotters::prelude::ChartBuilder::on(root);
    chart
        .caption(caption, ("sans-serif", 20))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(55);
    Ok(chart)
}

/// The CPU features a run had (the SIMD paths the kernels and crates below could pick), for
/// the header of a bench's table.
pub fn cpu_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut out = vec!["x86_64"];
        if std::arch::is_x86_feature_detected!("sse4.2") {
            out.push("sse4.2");
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            out.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            out.push("avx512f");
        }
        out.join(" ")
    }
    #[cfg(target_arch = "aarch64")]
    {
        "aarch64 neon".to_owned()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        std::env::consts::ARCH.to_owned()
    }
}

/// Bytes of every file under `path` (or of the file itself).
pub fn tree_bytes(path: &Path) -> u64 {
    if path.is_file() {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| tree_bytes(&e.path())).sum())
        .unwrap_or(0)
}

/// Every file under `dir`, recursively, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
