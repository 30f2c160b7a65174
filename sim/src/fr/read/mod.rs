//! Finding, decoding and checking dump files.
//!
//! A dump is one file per rank, and its rank is the trailing integer of the file name (after
//! an optional `--prefix` and a `.json`/`.pkl` extension): the dump itself names no rank.
//! Pickle and JSON are told apart by their first byte. Everything is bounded: file size,
//! records per dump, tensors per record, nesting, string lengths and the work a file with
//! shared references can cause; a file past a bound, corrupt, or not a dump is an error that
//! names it and says what is wrong.

pub mod dump;
pub mod json;
pub mod pickle;
pub mod tree;

use super::groups::MAX_WORLD;
use super::model::{Dump, Format};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Files larger than this are refused (a dump of 100,000 records with stack frames is a few
/// hundred MiB at most).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// A file that cannot be imported: which, and why. Shown on one line, the dump's own text in it
/// [`safe`](crate::text::safe) for a terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", crate::text::safe(.file), crate::text::safe(.message))]
pub struct ReadError {
    pub file: String,
    pub message: String,
}

fn err(file: &Path, message: impl Into<String>) -> ReadError {
    ReadError {
        file: file.display().to_string(),
        message: message.into(),
    }
}

/// What to read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Stripped from file names before the rank is read.
    pub prefix: Option<String>,
    /// The job's world size, where the user states it; else the dumps bound it (see
    /// [`check_ranks`]).
    pub world_size: Option<u32>,
}

/// The dumps found, by rank, and what was skipped on the way.
#[derive(Debug, Default)]
pub struct Loaded {
    pub dumps: Vec<Dump>,
    /// Files of directories that were skipped (not regular files, no rank in their name).
    pub skipped: Vec<Skipped>,
}

/// A file of a directory that was not read, and why (`skipped` in `import --json`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.file, self.reason)
    }
}

/// The rank a file name gives, if any: the trailing integer after `prefix` and an extension.
pub fn rank_of(name: &str, prefix: Option<&str>) -> Option<u32> {
    let name = match prefix {
        Some(p) => name.strip_prefix(p)?,
        None => name,
    };
    let stem = [".json", ".pkl", ".pickle", ".pk"]
        .iter()
        .find_map(|e| name.strip_suffix(e))
        .unwrap_or(name);
    let digits = stem.len() - stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    stem[stem.len() - digits..].parse().ok()
}

/// Files with their ranks.
type RankedFiles = Vec<(u32, PathBuf)>;

/// Expands files and directories into (rank, file), sorted by rank.
fn files(paths: &[PathBuf], opts: &ReadOptions) -> Result<(RankedFiles, Vec<Skipped>), ReadError> {
    let prefix = opts.prefix.as_deref();
    let mut out: Vec<(u32, PathBuf)> = Vec::new();
    let mut skipped = Vec::new();
    let mut skipped_names: Vec<String> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| err(p, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let mut names: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| err(p, format!("cannot list the directory: {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            names.sort();
            for f in names {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.starts_with('.') || f.is_dir() {
                    continue;
                }
                if !f.is_file() {
                    skipped.push(Skipped {
                        file: f.display().to_string(),
                        reason: "not a regular file (a FIFO, socket or device)".into(),
                    });
                    continue;
                }
                match rank_of(name, prefix) {
                    Some(r) => out.push((r, f)),
                    None => {
                        skipped_names.push(name.to_string());
                        skipped.push(Skipped {
                            file: f.display().to_string(),
                            reason: "no rank number at the end of its name".into(),
                        })
                    }
                }
            }
        } else {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let rank = rank_of(name, prefix).ok_or_else(|| {
                err(
                    p,
                    match prefix {
                        Some(pre) => format!(
                            "the file name does not start with the prefix `{pre}` followed by a \
                             rank number"
                        ),
                        None => "the file name does not end in a rank number (as torch names \
                                 dumps: `<prefix><rank>`); use --prefix if the rank is elsewhere"
                            .into(),
                    },
                )
            })?;
            out.push((rank, p.clone()));
        }
    }
    out.sort();
    if let Some((rank, path)) = out.last().filter(|(r, _)| *r >= MAX_WORLD) {
        return Err(err(
            path,
            format!(
                "the file name gives rank {rank}, beyond the largest world read ({MAX_WORLD} \
                 ranks): its name does not end in its rank (use --prefix if the rank is \
                 elsewhere)"
            ),
        ));
    }
    if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(err(
            &w[1].1,
            format!(
                "a second dump of rank {} (the first is {}): give one dump per rank",
                w[0].0,
                w[0].1.display()
            ),
        ));
    }
    if out.is_empty() {
        return Err(ReadError {
            file: paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            message: if skipped_names.is_empty() {
                "no dump files found".into()
            } else {
                format!(
                    "no dump files found ({} file{} skipped for having no rank number at the end \
                     of the name: {})",
                    skipped_names.len(),
                    if skipped_names.len() == 1 { "" } else { "s" },
                    skipped_names.join(", ")
                )
            },
        });
    }
    Ok((out, skipped))
}

/// Buffers a reading thread keeps from one dump to the next: the file's bytes, the arena of
/// its decoded tree and the conversion's tables stay allocated, and warm in cache, instead of
/// being allocated afresh (and faulted in page by page) for every dump.
#[derive(Debug, Default)]
pub struct Scratch {
    bytes: Vec<u8>,
    arena: tree::Arena,
    memo: dump::Memo,
}

/// Reads one dump file: a regular file of at most [`MAX_FILE_BYTES`], enforced as it is read.
pub fn read_file(path: &Path, rank: u32, scratch: &mut Scratch) -> Result<Dump, ReadError> {
    let mut bytes = std::mem::take(&mut scratch.bytes);
    let read = crate::input::read(path, MAX_FILE_BYTES, &mut bytes).map_err(|e| match e {
        crate::input::ReadError::TooLarge(_) => {
            err(path, format!("larger than any Flight Recorder dump: {e}"))
        }
        e => err(path, format!("cannot read: {e}")),
    });
    let dump = read.and_then(|_| {
        decode(&bytes, &path.display().to_string(), rank, scratch).map_err(|m| err(path, m))
    });
    scratch.bytes = bytes;
    dump
}

/// Reads one dump from its bytes; `file` names it. The error is one line, the dump's own text
/// in it [`safe`](crate::text::safe) for a terminal.
pub fn read_bytes(buf: &[u8], file: &str, rank: u32) -> Result<Dump, String> {
    decode(buf, file, rank, &mut Scratch::default()).map_err(|m| crate::text::safe(&m).into_owned())
}

fn decode(buf: &[u8], file: &str, rank: u32, scratch: &mut Scratch) -> Result<Dump, String> {
    let first = buf.iter().copied().find(|b| !b.is_ascii_whitespace());
    let format = match first {
        None => return Err("empty file: not a Flight Recorder dump".into()),
        Some(b'{') | Some(b'[') => Format::Json,
        Some(0x80) | Some(b'}') | Some(b']') | Some(b'(') => Format::Pickle,
        Some(b) => {
            return Err(format!(
                "neither a pickle nor JSON (it starts with byte 0x{b:02x}): not a Flight \
                 Recorder dump"
            ))
        }
    };
    let arena = std::mem::take(&mut scratch.arena);
    let tree = match format {
        Format::Json => json::decode_in(buf, arena).map_err(|e| format!("malformed JSON: {e}"))?,
        Format::Pickle => {
            pickle::decode_in(buf, arena).map_err(|e| format!("malformed pickle: {e}"))?
        }
    };
    let dump = dump::to_dump(&tree, file, rank, format, &mut scratch.memo);
    scratch.arena = tree.recycle();
    dump
}

/// Reads every dump of `paths` (files, or directories of them), on all cores.
pub fn read_paths(paths: &[PathBuf], opts: &ReadOptions) -> Result<Loaded, ReadError> {
    let (files, skipped) = files(paths, opts)?;
    let n = files.len();
    let results: Vec<Mutex<Option<Result<Dump, ReadError>>>> =
        (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(n)
        .max(1);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut scratch = Scratch::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let (rank, path) = &files[i];
                    let r = read_file(path, *rank, &mut scratch);
                    let failed = r.is_err();
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                    if failed {
                        // the first error (in rank order) is reported; later files need not
                        // be read
                        next.fetch_max(n, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let mut dumps = Vec::with_capacity(n);
    for (i, slot) in results.into_iter().enumerate() {
        match slot.into_inner().ok().flatten() {
            Some(Ok(d)) => dumps.push(d),
            Some(Err(e)) => return Err(e),
            None => return Err(err(&files[i].1, "not read")),
        }
    }
    check_ranks(&dumps, opts.world_size)?;
    Ok(Loaded { dumps, skipped })
}

/// A dump's rank is only what its file's name says, and a name is easily wrong (a rank from
/// another job, a host number at its end) or forged: it would size the world. So the world is
/// bounded by what the dumps themselves show, and a dump whose rank lies beyond it is refused,
/// naming the file and the evidence it contradicts:
/// - `world`, when the user states it (`--world-size`): every rank lies below it, a listed
///   default group has exactly its ranks, and no `pg_config` lists more;
/// - else the default group (`default_pg`) where a dump's `pg_config` lists it: its ranks are
///   the world;
/// - else (gloo's tables list one group, in group ranks) the names are believed only up to twice
///   what the dumps show: the longest rank list of any `pg_config` (or its highest rank, where
///   the list names the dumping rank), or the number of dumps if larger. A job of a thousand
///   ranks whose dumps come from three of them, and whose tables name a smaller group, needs
///   `--world-size`.
pub fn check_ranks(dumps: &[Dump], world: Option<u32>) -> Result<(), ReadError> {
    let Some(last) = dumps.iter().max_by_key(|d| d.rank) else {
        return Ok(());
    };
    let refuse = |d: &Dump, why: String| {
        Err(ReadError {
            file: d.file.clone(),
            message: format!(
                "the file name gives rank {}, but {why}: this is not rank {}'s dump, or its name \
                 ends in another number (use --prefix if the rank is elsewhere)",
                d.rank, d.rank
            ),
        })
    };
    let this_or = |by: &Dump, d: &Dump| {
        if std::ptr::eq(d, by) {
            "this dump".to_string()
        } else {
            by.file.clone()
        }
    };
    let shown = |d: &Dump| {
        (d.pg_config.iter())
            .filter_map(|c| c.ranks.as_ref())
            .map(|r| {
                let top = r.iter().max().map_or(0, |&m| m + 1);
                (r.len() as u32).max(if r.contains(&d.rank) { top } else { 0 })
            })
            .max()
    };
    let default_pg = |d: &Dump| {
        (d.pg_config.iter())
            .filter(|c| c.desc == "default_pg")
            .filter_map(|c| c.ranks.as_ref())
            .filter_map(|r| r.iter().max().map(|&m| m + 1))
            .max()
    };
    let listed_world = (dumps.iter())
        .filter_map(|d| Some((default_pg(d)?, d)))
        .max_by_key(|(w, d)| (*w, std::cmp::Reverse(d.rank)));
    if let Some(n) = world {
        if last.rank >= n {
            return refuse(last, format!("--world-size is {n}"));
        }
        if let Some((w, by)) = listed_world.filter(|(w, _)| *w != n) {
            return Err(ReadError {
                file: by.file.clone(),
                message: format!(
                    "its pg_config lists the default group (the world) as ranks 0-{}, but \
                     --world-size is {n}",
                    w - 1
                ),
            });
        }
        if let Some((w, by)) = (dumps.iter())
            .filter_map(|d| Some((shown(d)?, d)))
            .find(|(w, _)| *w > n)
        {
            return Err(ReadError {
                file: by.file.clone(),
                message: format!(
                    "its pg_config lists a group of {w} ranks, more than --world-size {n}"
                ),
            });
        }
        return Ok(());
    }
    if let Some((w, by)) = listed_world {
        return match dumps.iter().find(|d| d.rank >= w) {
            None => Ok(()),
            Some(d) => refuse(
                d,
                format!(
                    "the pg_config of {} lists the default group (the world) as ranks 0-{}",
                    this_or(by, d),
                    w - 1
                ),
            ),
        };
    }
    let (table, by) = (dumps.iter())
        .filter_map(|d| Some((shown(d)?, d)))
        .max_by_key(|(w, d)| (*w, std::cmp::Reverse(d.rank)))
        .unwrap_or((0, last));
    let evidence = table.max(dumps.len() as u32);
    if u64::from(last.rank) < 2 * u64::from(evidence) {
        return Ok(());
    }
    let tables = if table == 0 {
        "no pg_config lists ranks".to_string()
    } else {
        format!(
            "the largest pg_config group, in {}, has {table}",
            this_or(by, last)
        )
    };
    Err(ReadError {
        file: last.file.clone(),
        message: format!(
            "the file name gives rank {}, but the dumps show a world of {evidence} ranks at most \
             ({}; {tables}) and a name is believed up to twice that: give --world-size if the job \
             had {} ranks or more, or --prefix if the rank is elsewhere in the name",
            last.rank,
            crate::report::text::count(dumps.len(), "dump"),
            u64::from(last.rank) + 1
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_file_names() {
        assert_eq!(rank_of("rank_3", None), Some(3));
        assert_eq!(rank_of("rank_12.json", None), Some(12));
        assert_eq!(rank_of("nccl_trace_rank_host7_5", None), Some(5));
        assert_eq!(rank_of("comm_lib_trace_rank_0.pkl", None), Some(0));
        assert_eq!(rank_of("README.md", None), None);
        assert_eq!(rank_of("trace_", None), None);
        assert_eq!(rank_of("x_1", Some("y_")), None);
        assert_eq!(rank_of("y_17", Some("y_")), Some(17));
        assert_eq!(rank_of("r99999999999", None), None);
    }

    /// Dumps of `ranks`, each whose `pg_config` lists `table` (desc `desc`).
    fn dumps(ranks: &[u32], desc: &str, table: &str) -> Vec<Dump> {
        (ranks.iter())
            .map(|&r| {
                let json = format!(
                    r#"{{"version": "2.10", "pg_config": {{"0": {{"name": "0", "desc": "{desc}",
                    "ranks": "{table}"}}}}, "entries": []}}"#
                );
                read_bytes(json.as_bytes(), &format!("rank_{r}"), r).expect("a dump")
            })
            .collect()
    }

    #[test]
    fn names_are_believed_only_as_far_as_the_dumps_show_the_world() {
        let ok = |d: &[Dump], w| check_ranks(d, w).map_err(|e| e.to_string());
        // gloo's table lists a group of 2 in group ranks: four dumps show a world of 4, and
        // names are believed up to rank 7
        assert!(ok(&dumps(&[0, 1, 2, 3], "", "[0, 1]"), None).is_ok());
        assert!(ok(&dumps(&[0, 1, 2, 7], "", "[0, 1]"), None).is_ok());
        let e = ok(&dumps(&[0, 1, 2, 8], "", "[0, 1]"), None).unwrap_err();
        assert!(e.starts_with("rank_8: the file name gives rank 8, but the dumps show a world of 4 ranks at most (4 dumps; the largest pg_config group, in rank_0, has 2)"), "{e}");
        // a group listed in world ranks that names the dumping rank shows its highest rank
        assert!(ok(&dumps(&[5, 40], "tp", "[5, 40]"), None).is_ok());
        // the default group is the world
        assert!(ok(&dumps(&[0, 3], "default_pg", "[0, 1, 2, 3]"), None).is_ok());
        let e = ok(&dumps(&[0, 4], "default_pg", "[0, 1, 2, 3]"), None).unwrap_err();
        assert!(
            e.contains("lists the default group (the world) as ranks 0-3"),
            "{e}"
        );
        // a stated world bounds the names and the tables
        assert!(ok(&dumps(&[0, 999], "", "[0, 1]"), Some(1000)).is_ok());
        let e = ok(&dumps(&[0, 1000], "", "[0, 1]"), Some(1000)).unwrap_err();
        assert!(e.contains("but --world-size is 1000"), "{e}");
        let e = ok(&dumps(&[0], "", "[0, 1, 2]"), Some(2)).unwrap_err();
        assert!(
            e.contains("a group of 3 ranks, more than --world-size 2"),
            "{e}"
        );
    }
}
