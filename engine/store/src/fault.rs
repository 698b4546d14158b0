//! `FaultFs`: a [`StorageIo`] for tests that records every file operation of a store, fails
//! chosen ones, and rebuilds from its trace what a disk could hold after a power loss.
//!
//! It passes every operation through to the OS, so the store under test runs on real files
//! (mmap included), and appends each one to a trace: creates, writes with their bytes, `set_len`,
//! `fdatasync`, directory fsync, unlink, and the test's own [`FaultFs::mark`]s. From the trace:
//!
//! - [`DiskModel`] replays operations 0..k and builds the crash images of that point (see
//!   [`CrashImage`]): what survives a power loss is what was fsync'd, plus any subset of the
//!   pages written since, and only the directory entries a directory fsync made durable;
//! - [`audit`] checks the fsync ordering (reliability R6): every catalog commit that reaches
//!   the disk references only segments whose bytes, length and directory entry are durable,
//!   and no segment is unlinked while the durable catalog still references it.
//!
//! [`Injection`] and [`RandomFaults`] make chosen operations fail (reliability R4): the n-th
//! operation, once or from then on, as EIO, ENOSPC, or a short write; or operations at random
//! rates. A failed operation is recorded as nothing (a short write as the bytes it wrote).
//!
//! Invariants: the trace is in the order the operations completed (one lock serialises them);
//! paths in it are relative to the store root given to [`FaultFs::new`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::catalog::{self, SegmentState};
use crate::dir::{CATALOG_FILE, parse_segment_file_name};
use crate::io::{OpenMode, OsIo, StorageIo};

/// One recorded file operation. Paths are relative to the store root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A directory was created.
    CreateDir(PathBuf),
    /// A file was created (empty).
    Create(PathBuf),
    /// Bytes were written at an offset.
    Write {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What.
        bytes: Vec<u8>,
    },
    /// The file's length was set.
    SetLen {
        /// The file.
        path: PathBuf,
        /// The new length.
        len: u64,
    },
    /// The file's data and length were made durable.
    Sync(PathBuf),
    /// The directory's entries were made durable.
    SyncDir(PathBuf),
    /// A file was unlinked.
    Remove(PathBuf),
    /// A point the test marked (for example "batch n acknowledged").
    Mark(u64),
}

/// How an injected fault fails an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `EIO`.
    Eio,
    /// `ENOSPC`.
    NoSpace,
    /// A write stores its first half, then fails with `ENOSPC`; other operations fail with EIO.
    ShortWrite,
}

/// Fail the `at`-th operation (counting from 1 since the injection was set).
#[derive(Debug, Clone, Copy)]
pub struct Injection {
    /// Which operation fails first.
    pub at: u64,
    /// Whether every later operation fails too (a dead disk) or only that one.
    pub forever: bool,
    /// The error.
    pub kind: FaultKind,
}

/// Fail operations at random: each write-like operation (write, `set_len`, fsync, create,
/// unlink) with probability 1/`write_one_in`, each read with 1/`read_one_in` (0 = never).
#[derive(Debug, Clone, Copy)]
pub struct RandomFaults {
    /// Rate of failed write-like operations.
    pub write_one_in: u64,
    /// Rate of failed reads.
    pub read_one_in: u64,
    /// Seed of the choice.
    pub seed: u64,
}

#[derive(Debug, Default)]
struct FaultState {
    trace: Vec<Op>,
    counted: u64,
    injection: Option<Injection>,
    random: Option<(RandomFaults, u64)>,
    failures: u64,
}

/// The recording, failing [`StorageIo`] (see the module documentation).
#[derive(Debug)]
pub struct FaultFs {
    root: PathBuf,
    state: Mutex<FaultState>,
}

impl FaultFs {
    /// A FaultFs recording paths relative to `root`, the store directory.
    pub fn new(root: impl Into<PathBuf>) -> FaultFs {
        FaultFs {
            root: root.into(),
            state: Mutex::new(FaultState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, FaultState> {
        // A test thread that panicked mid-operation leaves a usable trace.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends a mark to the trace.
    pub fn mark(&self, label: u64) {
        self.state().trace.push(Op::Mark(label));
    }

    /// The trace so far.
    pub fn trace(&self) -> Vec<Op> {
        self.state().trace.clone()
    }

    /// Fails operations as `injection` says, counting from the next one; `None` stops failing.
    pub fn inject(&self, injection: Option<Injection>) {
        let mut state = self.state();
        state.counted = 0;
        state.injection = injection;
    }

    /// Fails operations at random; `None` stops.
    pub fn randomly(&self, faults: Option<RandomFaults>) {
        self.state().random = faults.map(|f| (f, f.seed | 1));
    }

    /// How many operations were failed so far.
    pub fn failures(&self) -> u64 {
        self.state().failures
    }

    /// Operations counted since the last [`inject`](Self::inject).
    pub fn operations(&self) -> u64 {
        self.state().counted
    }

    fn relative(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
    }

    /// Counts an operation and decides whether it fails.
    fn fault(&self, state: &mut FaultState, is_read: bool) -> Option<FaultKind> {
        state.counted += 1;
        let mut kind = match state.injection {
            Some(inj) if state.counted == inj.at || (inj.forever && state.counted > inj.at) => {
                Some(inj.kind)
            }
            _ => None,
        };
        if let Some((faults, rng)) = state.random.as_mut() {
            let one_in = if is_read {
                faults.read_one_in
            } else {
                faults.write_one_in
            };
            let draw = next(rng);
            if one_in > 0 && draw.is_multiple_of(one_in) {
                kind = Some(if draw & 256 == 0 {
                    FaultKind::Eio
                } else {
                    FaultKind::NoSpace
                });
            }
        }
        if kind.is_some() {
            state.failures += 1;
        }
        kind
    }

    /// Runs a state-changing operation: fails it if chosen, else performs and records it.
    fn change(
        &self,
        path: &Path,
        perform: impl FnOnce() -> io::Result<()>,
        record: impl FnOnce(PathBuf) -> Op,
    ) -> io::Result<()> {
        let mut state = self.state();
        if let Some(kind) = self.fault(&mut state, false) {
            return Err(error(kind));
        }
        perform()?;
        let op = record(self.relative(path));
        state.trace.push(op);
        Ok(())
    }
}

fn error(kind: FaultKind) -> io::Error {
    match kind {
        FaultKind::Eio | FaultKind::ShortWrite => io::Error::from_raw_os_error(libc::EIO),
        FaultKind::NoSpace => io::Error::from_raw_os_error(libc::ENOSPC),
    }
}

impl StorageIo for FaultFs {
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.change(path, || OsIo.create_dir(path), Op::CreateDir)
    }

    fn open_file(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut state = self.state();
        let opens_existing = matches!(mode, OpenMode::ReadWrite | OpenMode::ReadOnly);
        if let Some(kind) = self.fault(&mut state, opens_existing) {
            return Err(error(kind));
        }
        let existed = path.exists();
        let file = OsIo.open_file(path, mode)?;
        if !existed {
            state.trace.push(Op::Create(self.relative(path)));
        }
        Ok(file)
    }

    fn read_at(&self, path: &Path, file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut state = self.state();
        if let Some(kind) = self.fault(&mut state, true) {
            return Err(error(kind));
        }
        drop(state);
        OsIo.read_at(path, file, buf, offset)
    }

    fn write_at(&self, path: &Path, file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.state();
        let written = match self.fault(&mut state, false) {
            None => bytes,
            Some(FaultKind::ShortWrite) => &bytes[..bytes.len() / 2],
            Some(kind) => return Err(error(kind)),
        };
        OsIo.write_at(path, file, written, offset)?;
        state.trace.push(Op::Write {
            path: self.relative(path),
            offset,
            bytes: written.to_vec(),
        });
        if written.len() < bytes.len() {
            return Err(error(FaultKind::NoSpace));
        }
        Ok(())
    }

    fn set_len(&self, path: &Path, file: &File, len: u64) -> io::Result<()> {
        self.change(
            path,
            || OsIo.set_len(path, file, len),
            |path| Op::SetLen { path, len },
        )
    }

    fn sync_data(&self, path: &Path, file: &File) -> io::Result<()> {
        self.change(path, || OsIo.sync_data(path, file), Op::Sync)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.change(path, || OsIo.sync_dir(path), Op::SyncDir)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.change(path, || OsIo.remove_file(path), Op::Remove)
    }
}

/// Which crash image [`DiskModel::image`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashImage {
    /// Unsynced data dropped: every file as of its last fsync, every entry created so far.
    Synced,
    /// `Synced` plus the latest write, if unsynced, torn: only a random multiple of 512 bytes
    /// of it reached the disk.
    TornLastWrite,
    /// `Synced` with only the directory entries a directory fsync made durable (files created
    /// since are gone, files unlinked since are back).
    DurableNames,
    /// `Synced` plus a random subset of the unsynced 4 KiB pages of each file (in whatever
    /// order the disk wrote them back), each file at its synced or its current length.
    Reordered,
    /// Everything written, as a process crash leaves it (the OS page cache survives).
    ProcessCrash,
}

impl CrashImage {
    /// Every kind.
    pub const ALL: [CrashImage; 5] = [
        CrashImage::Synced,
        CrashImage::TornLastWrite,
        CrashImage::DurableNames,
        CrashImage::Reordered,
        CrashImage::ProcessCrash,
    ];
}

const WRITEBACK_PAGE: u64 = 4096;
const SECTOR: u64 = 512;

#[derive(Debug, Clone, Default)]
struct FileModel {
    current: Vec<u8>,
    durable: Vec<u8>,
    /// Pages changed since the last fsync.
    dirty: BTreeSet<u64>,
}

/// The disk as a trace prefix leaves it: each file's current and durable bytes, and the
/// current and durable directory entries.
#[derive(Debug, Clone, Default)]
pub struct DiskModel {
    dirs: BTreeSet<PathBuf>,
    files: BTreeMap<PathBuf, FileModel>,
    names: BTreeSet<PathBuf>,
    durable_names: BTreeSet<PathBuf>,
    /// The latest write: (file, offset, length), while its bytes are not yet durable.
    last_write: Option<(PathBuf, u64, u64)>,
}

impl DiskModel {
    /// An empty disk.
    pub fn new() -> DiskModel {
        DiskModel::default()
    }

    /// Applies one operation.
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::CreateDir(path) => {
                self.dirs.insert(path.clone());
            }
            Op::Create(path) => {
                self.files.insert(path.clone(), FileModel::default());
                self.names.insert(path.clone());
            }
            Op::Write {
                path,
                offset,
                bytes,
            } => {
                let file = self.files.entry(path.clone()).or_default();
                let end = *offset as usize + bytes.len();
                if file.current.len() < end {
                    file.current.resize(end, 0);
                }
                file.current[*offset as usize..end].copy_from_slice(bytes);
                if !bytes.is_empty() {
                    file.dirty
                        .extend(offset / WRITEBACK_PAGE..=(end as u64 - 1) / WRITEBACK_PAGE);
                }
                self.last_write = Some((path.clone(), *offset, bytes.len() as u64));
            }
            Op::SetLen { path, len } => {
                let file = self.files.entry(path.clone()).or_default();
                let old = file.current.len() as u64;
                file.current.resize(*len as usize, 0);
                let (lo, hi) = (old.min(*len), old.max(*len));
                if hi > lo {
                    file.dirty
                        .extend(lo / WRITEBACK_PAGE..=(hi - 1) / WRITEBACK_PAGE);
                }
            }
            Op::Sync(path) => {
                if let Some(file) = self.files.get_mut(path) {
                    file.durable.clone_from(&file.current);
                    file.dirty.clear();
                }
                if self.last_write.as_ref().is_some_and(|(p, ..)| p == path) {
                    self.last_write = None;
                }
            }
            Op::SyncDir(dir) => {
                let in_dir = |p: &PathBuf| p.parent() == Some(dir.as_path());
                self.durable_names.retain(|p| !in_dir(p));
                let now: Vec<PathBuf> = self.names.iter().filter(|p| in_dir(p)).cloned().collect();
                self.durable_names.extend(now);
            }
            Op::Remove(path) => {
                self.names.remove(path);
            }
            Op::Mark(_) => {}
        }
    }

    /// The files of crash image `kind`, by relative path (`rng` picks torn lengths and pages).
    pub fn image(&self, kind: CrashImage, rng: &mut u64) -> BTreeMap<PathBuf, Vec<u8>> {
        let names = match kind {
            CrashImage::DurableNames => &self.durable_names,
            _ => &self.names,
        };
        let mut image = BTreeMap::new();
        for name in names {
            let Some(file) = self.files.get(name) else {
                continue;
            };
            let bytes = match kind {
                CrashImage::ProcessCrash => file.current.clone(),
                CrashImage::Reordered => reordered(file, rng),
                _ => file.durable.clone(),
            };
            image.insert(name.clone(), bytes);
        }
        if kind == CrashImage::TornLastWrite
            && let Some((path, offset, len)) = &self.last_write
            && let (Some(bytes), Some(file)) = (image.get_mut(path), self.files.get(path))
        {
            let sectors = len.div_ceil(SECTOR);
            let kept = (next(rng) % sectors.max(1) * SECTOR).min(*len);
            let (start, end) = (*offset as usize, (*offset + kept) as usize);
            if end > start && file.current.len() >= end {
                if bytes.len() < end {
                    bytes.resize(end, 0);
                }
                bytes[start..end].copy_from_slice(&file.current[start..end]);
            }
        }
        image
    }

    /// Writes crash image `kind` under `dir` (which must exist); returns how many files.
    pub fn write_image(&self, kind: CrashImage, rng: &mut u64, dir: &Path) -> io::Result<usize> {
        for sub in &self.dirs {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let image = self.image(kind, rng);
        for (name, bytes) in &image {
            std::fs::write(dir.join(name), bytes)?;
        }
        Ok(image.len())
    }
}

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// A file's durable bytes, at its durable or current length, plus a random subset of its
/// dirty pages as they are now.
fn reordered(file: &FileModel, rng: &mut u64) -> Vec<u8> {
    let len = if next(rng) & 1 == 0 {
        file.durable.len()
    } else {
        file.current.len()
    };
    let mut bytes = file.durable.clone();
    bytes.resize(len, 0);
    for &page in &file.dirty {
        if next(rng) & 1 == 0 {
            continue;
        }
        let start = (page * WRITEBACK_PAGE) as usize;
        let end = (start + WRITEBACK_PAGE as usize)
            .min(len)
            .min(file.current.len());
        if end > start {
            bytes[start..end].copy_from_slice(&file.current[start..end]);
        }
    }
    bytes
}

/// A breach of the fsync ordering found by [`audit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Index of the operation in the trace.
    pub op_index: usize,
    /// What was wrong.
    pub what: String,
}

/// The segments a catalog's bytes reference: id → (state, committed length). `scratch` is a
/// directory for the copy redb opens.
pub fn catalog_segments(
    catalog_bytes: &[u8],
    scratch: &Path,
) -> crate::Result<BTreeMap<u64, (bool, u64)>> {
    use crate::error::CatalogResult;
    use redb::ReadableDatabase;
    let path = scratch.join("audit-catalog.redb");
    std::fs::write(&path, catalog_bytes).map_err(crate::Error::io("write", &path))?;
    let rows = {
        let db = redb::Database::create(&path).ctx("open catalog copy")?;
        let txn = db.begin_read().ctx("begin read")?;
        catalog::segment_rows(&txn.open_table(catalog::SEGMENTS).ctx("open segments")?)?
    };
    let _ = std::fs::remove_file(&path);
    Ok(rows
        .into_iter()
        .map(|(id, row)| (id, (row.state == SegmentState::Sealed, row.len)))
        .collect())
}

/// Checks the fsync ordering of a trace (reliability R6): at every fsync of the catalog, each
/// segment the durable catalog references has a durable directory entry, a durable length of
/// at least its committed length and no unsynced page below it; and no segment file is
/// unlinked while the durable catalog references it. `scratch` is a directory for redb.
pub fn audit(trace: &[Op], scratch: &Path) -> Vec<Violation> {
    let catalog_path = PathBuf::from(CATALOG_FILE);
    let mut disk = DiskModel::new();
    let mut referenced: BTreeMap<u64, (bool, u64)> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut decoded_once = false;
    for (index, op) in trace.iter().enumerate() {
        if let Op::Remove(path) = op
            && let Some(id) = segment_id(path)
            && referenced.contains_key(&id)
        {
            violations.push(Violation {
                op_index: index,
                what: format!("segment {id:016x} unlinked while the durable catalog references it"),
            });
        }
        disk.apply(op);
        if !matches!(op, Op::Sync(path) if *path == catalog_path) {
            continue;
        }
        let Some(catalog) = disk.files.get(&catalog_path) else {
            continue;
        };
        referenced = match catalog_segments(&catalog.durable, scratch) {
            Ok(rows) => {
                decoded_once = true;
                rows
            }
            // redb syncs its file before its first commit is complete: nothing is referenced
            // until one is.
            Err(_) if !decoded_once => BTreeMap::new(),
            Err(e) => {
                violations.push(Violation {
                    op_index: index,
                    what: format!("the durable catalog does not open: {e}"),
                });
                continue;
            }
        };
        for (&id, &(_, len)) in &referenced {
            let name =
                PathBuf::from(super::dir::SEGMENTS_DIR).join(super::dir::segment_file_name(id));
            let what = match disk.files.get(&name) {
                _ if !disk.durable_names.contains(&name) => {
                    Some("its directory entry is not durable".to_owned())
                }
                None => Some("no such file".to_owned()),
                Some(file) if (file.durable.len() as u64) < len => Some(format!(
                    "durable length {} < committed {len}",
                    file.durable.len()
                )),
                Some(file)
                    if file
                        .dirty
                        .range(..len.div_ceil(WRITEBACK_PAGE))
                        .next()
                        .is_some() =>
                {
                    Some("unsynced pages below its committed length".to_owned())
                }
                Some(_) => None,
            };
            if let Some(what) = what {
                violations.push(Violation {
                    op_index: index,
                    what: format!("catalog commit references segment {id:016x}: {what}"),
                });
            }
        }
    }
    violations
}

/// What `check` finds wrong in the bytes of sealed segment `id` (the whole file): the same
/// verification `Store::check` runs, on bytes in memory, so tests can damage them by the
/// million (reliability R5).
pub fn sealed_segment_problems(bytes: &[u8], id: u64) -> Vec<crate::Problem> {
    crate::check::sealed_segment_problems(bytes, id)
}

fn segment_id(path: &Path) -> Option<u64> {
    parse_segment_file_name(path.file_name()?.to_str()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &str, offset: u64, bytes: &[u8]) -> Op {
        Op::Write {
            path: path.into(),
            offset,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn images_keep_synced_bytes_and_durable_names_only_where_they_should() {
        let mut disk = DiskModel::new();
        for op in [
            Op::CreateDir("d".into()),
            Op::Create("d/a".into()),
            write("d/a", 0, b"hello"),
            Op::Sync("d/a".into()),
            Op::SyncDir("d".into()),
            write("d/a", 5, &[7u8; 5000]),
            Op::Create("d/b".into()),
            write("d/b", 0, b"new"),
            Op::Sync("d/b".into()),
        ] {
            disk.apply(&op);
        }
        let mut rng = 7;
        let synced = disk.image(CrashImage::Synced, &mut rng);
        assert_eq!(synced[Path::new("d/a")], b"hello");
        assert_eq!(synced[Path::new("d/b")], b"new");
        let names = disk.image(CrashImage::DurableNames, &mut rng);
        assert!(
            !names.contains_key(Path::new("d/b")),
            "b's entry never synced"
        );
        let crash = disk.image(CrashImage::ProcessCrash, &mut rng);
        assert_eq!(crash[Path::new("d/a")].len(), 5005);
        // The torn write is the last unsynced one: a's, whose sectors arrive in part.
        disk.apply(&write("d/a", 5, &[9u8; 5000]));
        let mut seen = BTreeSet::new();
        for _ in 0..64 {
            let torn = disk.image(CrashImage::TornLastWrite, &mut rng);
            let a = &torn[Path::new("d/a")];
            let kept = a.iter().skip(5).take_while(|&&b| b == 9).count();
            assert!(kept % 512 == 0 && kept < 5000, "{kept}");
            seen.insert(kept);
            let reordered = disk.image(CrashImage::Reordered, &mut rng);
            let a = &reordered[Path::new("d/a")];
            assert!(a.len() == 5 || a.len() == 5005);
            assert_eq!(&a[..5], b"hello");
        }
        assert!(seen.len() > 3, "torn lengths vary: {seen:?}");
        disk.apply(&Op::Remove("d/a".into()));
        assert!(
            !disk
                .image(CrashImage::Synced, &mut rng)
                .contains_key(Path::new("d/a"))
        );
        assert!(
            disk.image(CrashImage::DurableNames, &mut rng)
                .contains_key(Path::new("d/a")),
            "an unlink is not durable before the directory fsync"
        );
    }

    #[test]
    fn injected_faults_fail_the_chosen_operation_and_are_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new(dir.path());
        let path = dir.path().join("f");
        let file = fs.open_file(&path, OpenMode::CreateNew).unwrap();
        fs.inject(Some(Injection {
            at: 2,
            forever: false,
            kind: FaultKind::ShortWrite,
        }));
        fs.write_at(&path, &file, b"abcd", 0).unwrap();
        let err = fs.write_at(&path, &file, b"efgh", 4).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        fs.sync_data(&path, &file).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef");
        fs.inject(Some(Injection {
            at: 1,
            forever: true,
            kind: FaultKind::Eio,
        }));
        assert!(fs.sync_data(&path, &file).is_err());
        assert!(fs.remove_file(&path).is_err());
        assert_eq!(fs.failures(), 3);
        assert_eq!(
            fs.trace(),
            vec![
                Op::Create("f".into()),
                write("f", 0, b"abcd"),
                write("f", 4, b"ef"),
                Op::Sync("f".into()),
            ]
        );
    }
}
