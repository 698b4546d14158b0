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
    minilm_two_threads_with(memdb_encode::EncoderOptions::default().int8)
}

/// [`minilm_two_threads`] with 8-bit projections where the CPU has the kernel (`int8`, the
/// default) or f32 throughout.
pub fn minilm_two_threads_with(
    int8: bool,
) -> (memdb_encode::MiniLm, memdb_encode::model::ModelDir) {
    let model_dir = memdb_encode::model::locate().unwrap_or_else(|e| panic!("{e}"));
    let encoder = memdb_encode::MiniLm::load(
        &model_dir,
        memdb_encode::EncoderOptions {
            threads: Some(2),
            int8,
            ..memdb_encode::EncoderOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (encoder, model_dir)
}

/// Registers the embedded DejaVu Sans as plotters' `sans-serif` (no system font library).
pub fn register_plot_font() {
    static FONT: &[u8] = include_bytes!("../../engine/render/assets/fonts/DejaVuSans.ttf");
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
        if std::arch::is_x86_feature_detected!("fma") {
            out.push("fma");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            out.push("avx512f");
        }
        if std::arch::is_x86_feature_detected!("avx512vnni") {
            out.push("avx512vnni");
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

/// The machine's sequential read bandwidth in GB/s (10⁹ bytes) on `threads` threads: the best of
/// three passes summing a 512 MiB buffer (far past any cache), each thread its own contiguous
/// share. The limit a memory-bound scan is measured against.
pub fn read_bandwidth_gbs(threads: usize) -> f64 {
    const BYTES: usize = 512 << 20;
    const HUGE_PAGE: usize = 2 << 20;
    let threads = threads.max(1);
    // Huge pages, as the vector blocks get (memdb_vectors' buffers ask for them), so TLB misses
    // do not lower the figure below what a block scan sees.
    let mut storage: Vec<u64> = Vec::with_capacity((BYTES + HUGE_PAGE) / 8);
    let skip = (HUGE_PAGE - storage.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE / 8;
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: the range starts `skip` values into the allocation, which has room for
    // `skip · 8 + BYTES` bytes (skip < HUGE_PAGE / 8); madvise only changes how the kernel backs
    // those pages, not their contents or validity.
    unsafe {
        libc::madvise(
            storage.as_mut_ptr().add(skip).cast(),
            BYTES,
            libc::MADV_HUGEPAGE,
        );
    }
    storage.extend((0..(BYTES + HUGE_PAGE) / 8).map(|i| i as u64));
    let buffer = &storage[skip..skip + BYTES / 8];
    let share = buffer.len().div_ceil(threads);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let total: u64 = std::thread::scope(|scope| {
            let workers: Vec<_> = buffer
                .chunks(share)
                .map(|part| {
                    scope.spawn(move || {
                        // Sixteen independent sums (two 512-bit registers' worth), so the adds
                        // never hold back the loads.
                        let mut sums = [0u64; 16];
                        for chunk in part.chunks_exact(16) {
                            for (s, &v) in sums.iter_mut().zip(chunk) {
                                *s = s.wrapping_add(v);
                            }
                        }
                        sums.iter().fold(0u64, |a, &b| a.wrapping_add(b))
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(0))
                .fold(0u64, u64::wrapping_add)
        });
        std::hint::black_box(total);
        best = best.min(start.elapsed().as_secs_f64());
    }
    BYTES as f64 / best / 1e9
}

/// The f32 matrix-product rate this machine reaches, in GFLOP/s, on `threads` threads: 256 × 384
/// by 384 × 512 products (in-cache operands, the batched scan's shape) through the gemm crate,
/// one per thread, repeated for about half a second. A measured ceiling for compute-bound
/// kernels (the cores' nominal peak is higher; this is what a well-tuned sgemm achieves here).
pub fn sgemm_gflops(threads: usize) -> f64 {
    let (m, n, k) = (256usize, 512usize, 384usize);
    let threads = threads.max(1);
    let lhs: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
    let rhs: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.1).collect();
    let reps = 200usize;
    let start = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (lhs, rhs) = (&lhs, &rhs);
            scope.spawn(move || {
                let mut dst = vec![0.0f32; m * n];
                for _ in 0..reps {
                    #[allow(unsafe_code)]
                    // SAFETY: lhs is m × k row-major (m·k values), rhs k × n row-major (k·n), dst
                    // m × n row-major (m·n), all live, and dst a unique borrow; the strides
                    // below address exactly those elements.
                    unsafe {
                        gemm::gemm(
                            m,
                            n,
                            k,
                            dst.as_mut_ptr(),
                            1,
                            n as isize,
                            false,
                            lhs.as_ptr(),
                            1,
                            k as isize,
                            rhs.as_ptr(),
                            1,
                            n as isize,
                            0.0f32,
                            1.0f32,
                            false,
                            false,
                            false,
                            gemm::Parallelism::None,
                        );
                    }
                    std::hint::black_box(&dst);
                }
            });
        }
    });
    (2 * m * n * k * reps * threads) as f64 / start.elapsed().as_secs_f64() / 1e9
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

/// An embedder that computes each text's vector once (the encoder's time is left out of what is
/// compared, and a text asked for again costs a lookup).
pub struct Memo<'a> {
    encoder: &'a dyn memdb::Embedder,
    seen: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

impl<'a> Memo<'a> {
    /// A memo in front of `encoder`.
    pub fn new(encoder: &'a dyn memdb::Embedder) -> Self {
        Memo {
            encoder,
            seen: std::sync::Mutex::default(),
        }
    }
}

impl memdb::Embedder for Memo<'_> {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, memdb::EmbedError> {
        let mut seen = self
            .seen
            .lock()
            .map_err(|_| memdb::EmbedError::Message("memo lock".into()))?;
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !seen.contains_key(*t))
            .collect();
        if !missing.is_empty() {
            for (text, v) in missing.iter().zip(self.encoder.embed(&missing)?) {
                seen.insert((*text).to_owned(), v);
            }
        }
        Ok(texts.iter().map(|t| seen[*t].clone()).collect())
    }
}
