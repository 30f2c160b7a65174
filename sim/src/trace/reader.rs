//! Reading traces back, with errors that name the line.

use super::digest::Digest;
use super::event::Event;
use super::Level;
use crate::budget::Budget;
use crate::scenario::{self, Outcome, Scenario};
use crate::units::Nanos;
use serde::Deserialize;
use std::io::BufRead;
use std::path::Path;

/// A trace that cannot be read, located by line (1-based; 0 = the file itself). Shown on one
/// line, the trace's own text in it [`safe`](crate::text::safe) for a terminal.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {}", crate::text::safe(.file), crate::text::safe(.message))]
pub struct TraceError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// The first line of a trace.
#[derive(Clone, Debug)]
pub struct Header {
    pub version: u32,
    pub ringside: String,
    pub seed: u64,
    pub scenario: Scenario,
    /// The scenario exactly as embedded.
    pub scenario_json: serde_json::Value,
    /// Set by traces of real runs (not replayable bit-for-bit).
    pub real: bool,
    /// What the trace holds (version 1 traces hold every event).
    pub level: Level,
    /// Whether the file is zstd-compressed.
    pub compressed: bool,
    /// The event budget the run was given, when it was not the default.
    pub max_events: Option<u64>,
    /// The wall-clock (Unix epoch ns) time 0 stands for, in the trace of a real job.
    pub start_unix_ns: Option<u64>,
    /// With `real`: what ran it (`tcp` for `ringside launch`, `flight-recorder` for an
    /// import of a job's dumps).
    pub driver: Option<String>,
    /// An import of Flight Recorder dumps: the member ranks that left no dump, whose calls
    /// the trace does not know.
    pub missing: Vec<u32>,
    /// The memory limit the run was given, when it was not the default.
    pub max_memory: Option<u64>,
    /// The command `ringside torchrun` ran, in the trace of a real program on the simulated
    /// cluster: `replay` runs it again.
    pub program: Option<Program>,
}

/// The header's `program` and `cwd`: the command of a `ringside torchrun` and the directory it
/// ran in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The program and its arguments (`python train.py --steps 20`).
    pub argv: Vec<String>,
    /// The directory it ran in, when recorded.
    pub cwd: Option<String>,
}

/// The most arguments a header's `program` may hold.
const MAX_ARGS: usize = 4096;

/// The footer, when the trace has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footer {
    pub outcome: Outcome,
    /// Every event of the run, written or not.
    pub events: u64,
    pub digest: String,
    /// The event lines of a trace that leaves some out.
    pub lines: Option<u64>,
    /// The budget that ended the run early, when one did.
    pub budget: Option<Budget>,
    /// 1-based line number of the footer.
    pub line: usize,
}

impl Footer {
    /// Checks the digest a reader that deferred it ([`TraceReader::defer_digest`]) computed
    /// from the events it parsed, in order.
    pub fn check_digest(&self, file: &str, digest: &Digest) -> Result<(), TraceError> {
        if self.lines.is_none() && self.digest != digest.hex() {
            return Err(err(
                file,
                self.line,
                format!(
                    "digest mismatch: the footer says {}, the events hash to {}",
                    self.digest,
                    digest.hex()
                ),
            ));
        }
        Ok(())
    }
}

/// A whole trace in memory.
#[derive(Clone, Debug)]
pub struct Trace {
    pub header: Header,
    pub events: Vec<(Nanos, Event)>,
    pub footer: Option<Footer>,
    /// The chained digest of the event lines as read.
    pub digest: String,
    /// `FILE:LINE: incomplete trace: ...` when the trace has no footer
    /// ([`TraceReader::incomplete`]).
    pub incomplete: Option<String>,
}

#[derive(Deserialize)]
struct Line {
    /// The footer carries no time.
    #[serde(default)]
    t: Nanos,
    #[serde(flatten)]
    ev: Event,
}

/// The number a line starts with when it starts `{"t":<digits>,` as the writer writes it.
fn time_prefix(text: &str) -> Option<Nanos> {
    let rest = text.strip_prefix("{\"t\":")?;
    let end = rest.bytes().position(|b| !b.is_ascii_digit())?;
    if end == 0 || !rest[end..].starts_with(',') {
        return None;
    }
    rest[..end].parse().ok()
}

/// One event line. The commonest kinds, spelled as the writer spells them, are read by
/// [`fast::parse`](super::fast); other lines that start as the writer starts them have their
/// time read from the prefix and the event parsed directly (it ignores the `t` key), about
/// twice as fast as going through `#[serde(flatten)]`; any other spelling of the same JSON
/// takes the general path.
fn parse_line(text: &str) -> Result<Line, serde_json::Error> {
    if let Some((t, ev)) = super::fast::parse(text) {
        return Ok(Line { t, ev });
    }
    match time_prefix(text) {
        Some(t) => Ok(Line {
            t,
            ev: serde_json::from_str(text)?,
        }),
        None => serde_json::from_str(text),
    }
}

/// Parses one event line as the writer writes it (`{"t":N,"kind":...}`); the footer is refused.
pub fn parse_event_line(text: &str) -> Result<(Nanos, Event), String> {
    let line = parse_line(text).map_err(|e| format!("malformed event: {e}"))?;
    if matches!(line.ev, Event::End { .. }) {
        return Err("a footer where an event was expected".into());
    }
    Ok((line.t, line.ev))
}

/// An event line read in order but not parsed yet (see [`TraceReader::next_unparsed`]).
#[derive(Clone, Debug)]
pub struct UnparsedEvent {
    /// 1-based line number.
    pub line: usize,
    pub text: String,
    /// Already parsed (a line not in the writer's spelling).
    parsed: Option<(Nanos, Event)>,
    /// The world size of the header's scenario and its nodes (with the store's): every rank
    /// an event names is below the latter.
    nodes: Nodes,
}

impl UnparsedEvent {
    /// The event; `file` names the trace in errors.
    pub fn parse(self, file: &str) -> Result<(Nanos, Event), TraceError> {
        if let Some(p) = self.parsed {
            return Ok(p);
        }
        let line =
            parse_line(&self.text).map_err(|e| err(file, self.line, malformed(&self.text, e)))?;
        if matches!(line.ev, Event::End { .. }) {
            return Err(err(file, self.line, "a footer with a time `t`"));
        }
        if let Some(m) = rank_beyond(&line.ev, self.nodes) {
            return Err(err(file, self.line, m));
        }
        Ok((line.t, line.ev))
    }
}

/// Reads a trace line by line; checks the header on open.
pub struct TraceReader<R: BufRead> {
    file: String,
    input: R,
    line_no: usize,
    buf: String,
    pub header: Header,
    digest: Digest,
    footer: Option<Footer>,
    /// The line cut off in the middle (no newline) that ended the trace, if one did.
    torn: Option<usize>,
    /// `buf` holds a line read ahead by [`TraceReader::next_if_same`], not yet taken.
    pending: bool,
    /// Event lines read.
    lines: u64,
    /// The digest is left to the caller ([`TraceReader::defer_digest`]).
    deferred: bool,
    /// Why a compressed trace ended early, when it did.
    cut: Option<String>,
    /// The NUL bytes of the torn last line (a crash leaves zeros where data never landed).
    torn_nul: usize,
    /// The world size of the header's scenario and its nodes (with the store's): every rank
    /// an event names is below the latter.
    nodes: Nodes,
    /// The time of the last event read: time never decreases.
    last_t: Nanos,
}

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The longest line a reader takes: a header with a large scenario fits many times over.
pub const MAX_LINE: usize = 64 << 20;

/// A trace file as read: plain or zstd-compressed, told apart by content.
pub type TraceInput = Box<dyn BufRead + Send>;

fn err(file: &str, line: usize, message: impl Into<String>) -> TraceError {
    TraceError {
        file: file.to_string(),
        line,
        message: message.into(),
    }
}

impl TraceReader<TraceInput> {
    /// Opens a trace file, plain JSON Lines or zstd-compressed (whatever its name).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let file = path.display().to_string();
        let f = crate::input::open(path)
            .map_err(|e| err(&file, 0, format!("cannot open the trace: {e}")))?;
        let mut f = std::io::BufReader::with_capacity(1 << 20, f);
        let compressed = f
            .fill_buf()
            .map_err(|e| err(&file, 0, format!("cannot read the trace: {e}")))?
            .starts_with(&ZSTD_MAGIC);
        let input: TraceInput = if compressed {
            decompress(f, &file)?
        } else {
            Box::new(f)
        };
        let mut r = TraceReader::new(input, &file)?;
        r.header.compressed = compressed;
        Ok(r)
    }
}

#[cfg(feature = "zstd")]
fn decompress(f: std::io::BufReader<std::fs::File>, file: &str) -> Result<TraceInput, TraceError> {
    let z = zstd::Decoder::with_buffer(f)
        .map_err(|e| err(file, 0, format!("cannot read the compressed trace: {e}")))?;
    Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, z)))
}

#[cfg(not(feature = "zstd"))]
fn decompress(_: std::io::BufReader<std::fs::File>, file: &str) -> Result<TraceInput, TraceError> {
    Err(err(file, 0, super::NO_ZSTD))
}

impl Header {
    /// The header line of a trace (`buf`, the first line of `file`).
    fn parse(buf: &str, file: &str) -> Result<Header, TraceError> {
        if buf.trim().is_empty() {
            return Err(err(file, 1, "empty file: not a ringside trace"));
        }
        let v: serde_json::Value = serde_json::from_str(buf.trim_end()).map_err(|e| {
            let why = nul_bytes(buf, "the header").unwrap_or_else(|| e.to_string());
            err(file, 1, format!("the header is not JSON: {why}"))
        })?;
        let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != super::FORMAT {
            return Err(err(
                file,
                1,
                format!(
                    "not a ringside trace: header `format` is {:?}, expected {:?}",
                    format,
                    super::FORMAT
                ),
            ));
        }
        let version = version(&v, file)?;
        let seed = v
            .get("seed")
            .and_then(|s| s.as_u64())
            .ok_or_else(|| err(file, 1, "the header has no numeric `seed`"))?;
        let scenario_json = v
            .get("scenario")
            .cloned()
            .ok_or_else(|| err(file, 1, "the header has no `scenario`"))?;
        let scenario = scenario::parse_json(&scenario_json, file).map_err(|e| {
            err(
                file,
                1,
                format!("the embedded scenario is invalid: {}: {}", e.key, e.message),
            )
        })?;
        let level = level(&v, file)?;
        let max_events = positive(&v, "max_events", file)?;
        let max_memory = positive(&v, "max_memory", file)?;
        let world = scenario.world.size;
        let missing = match v.get("missing") {
            None => Vec::new(),
            Some(m) => ranks_field(m, world).ok_or_else(|| {
                err(
                    file,
                    1,
                    format!(
                        "the header's `missing` must be a list of distinct ranks below the world \
                         size {world}"
                    ),
                )
            })?,
        };
        Ok(Header {
            max_events,
            max_memory,
            level,
            driver: v.get("driver").and_then(|d| d.as_str()).map(str::to_string),
            missing,
            compressed: false,
            version: version as u32,
            ringside: v
                .get("ringside")
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string(),
            seed,
            scenario,
            scenario_json,
            real: v.get("real").and_then(|r| r.as_bool()).unwrap_or(false),
            start_unix_ns: v.get("start_unix_ns").and_then(|t| t.as_u64()),
            program: program(&v, file)?,
        })
    }
}

/// The header's `program` (with its `cwd`), in the trace of a `ringside torchrun`.
fn program(v: &serde_json::Value, file: &str) -> Result<Option<Program>, TraceError> {
    let Some(p) = v.get("program") else {
        return Ok(None);
    };
    let bad = |what: &str| err(file, 1, format!("the header's `program` {what}"));
    let list = p
        .as_array()
        .ok_or_else(|| bad("must be a list of strings (the program and its arguments)"))?;
    if list.is_empty() {
        return Err(bad("is empty: it names no program"));
    }
    if list.len() > MAX_ARGS {
        return Err(bad(&format!(
            "has {} arguments (at most {MAX_ARGS})",
            list.len()
        )));
    }
    let argv = list
        .iter()
        .enumerate()
        .map(|(i, a)| {
            a.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("[{i}] is {a}, not a string")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = match v.get("cwd") {
        None => None,
        Some(serde_json::Value::String(c)) => Some(c.clone()),
        Some(other) => {
            return Err(err(
                file,
                1,
                format!("the header's `cwd` is {other}, not a string"),
            ))
        }
    };
    Ok(Some(Program { argv, cwd }))
}

/// The header's `version`: 1 or 2.
fn version(v: &serde_json::Value, file: &str) -> Result<u64, TraceError> {
    let version = match v.get("version") {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(other) => {
            return Err(err(
                file,
                1,
                format!("the header's `version` must be a number, not {other}"),
            ))
        }
        None => return Err(err(file, 1, "the header has no `version`")),
    };
    let version = match version {
        Some(n @ 1..=2) => n,
        _ => {
            return Err(err(
                file,
                1,
                format!(
                    "unsupported trace version {}: this ringside reads versions 1 and {}",
                    v.get("version").map(|x| x.to_string()).unwrap_or_default(),
                    super::VERSION
                ),
            ))
        }
    };
    Ok(version)
}

/// The header's `level` (`full` when absent).
fn level(v: &serde_json::Value, file: &str) -> Result<Level, TraceError> {
    Ok(match v.get("level") {
        None => Level::Full,
        Some(serde_json::Value::String(l)) => l.parse().map_err(|_| {
            err(
                file,
                1,
                format!("the header's `level` is {l:?}, expected \"full\" or \"calls\""),
            )
        })?,
        Some(other) => {
            return Err(err(
                file,
                1,
                format!("the header's `level` is {other}, not a string"),
            ))
        }
    })
}

/// The header's `key`, a positive integer when present.
fn positive(v: &serde_json::Value, key: &str, file: &str) -> Result<Option<u64>, TraceError> {
    Ok(match v.get(key) {
        None => None,
        Some(n) => match n.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                return Err(err(
                    file,
                    1,
                    format!("the header's `{key}` must be a positive integer, not {n}"),
                ))
            }
        },
    })
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(mut input: R, file: &str) -> Result<Self, TraceError> {
        let mut buf = String::new();
        read_limited(&mut input, &mut buf).map_err(|e| err(file, 1, String::from(e)))?;
        let header = Header::parse(&buf, file)?;
        let nodes = Nodes {
            world: header.scenario.world.size,
            all: header.scenario.nodes(),
        };
        Ok(TraceReader {
            nodes,
            last_t: 0,
            torn_nul: 0,
            file: file.to_string(),
            input,
            line_no: 1,
            buf,
            header,
            digest: Digest::new(),
            footer: None,
            torn: None,
            pending: false,
            lines: 0,
            deferred: false,
            cut: None,
        })
    }

    /// Reads up to the next event line (left in `self.buf`) and digests it, consuming and
    /// checking the footer on the way. Returns None at the end, else the parsed line, which
    /// is parsed only when `parse` is set or the line is not spelled as the writer spells
    /// events (then it may be the footer).
    fn advance(&mut self, parse: bool) -> Result<Option<Option<Line>>, TraceError> {
        loop {
            if !std::mem::take(&mut self.pending) && !self.read_line()? {
                return Ok(None);
            }
            let text = self.buf.trim_end();
            if text.is_empty() {
                continue;
            }
            if self.footer.is_some() {
                return Err(err(
                    &self.file,
                    self.line_no,
                    "content after the `end` footer",
                ));
            }
            // version 1 digests the line's text: it can be left unparsed; version 2 digests the
            // parsed event
            let prefix = time_prefix(text);
            if let (false, true, Some(t)) =
                (parse, self.header.version == 1 || self.deferred, prefix)
            {
                if t < self.last_t {
                    return Err(err(&self.file, self.line_no, backwards(t, self.last_t)));
                }
                self.last_t = t;
                if self.header.version == 1 {
                    self.digest.update_line(text.as_bytes());
                }
                self.lines += 1;
                return Ok(Some(None));
            }
            let line =
                parse_line(text).map_err(|e| err(&self.file, self.line_no, malformed(text, e)))?;
            if let Event::End {
                outcome,
                events,
                digest,
                lines,
                budget,
            } = line.ev
            {
                let partial = self.header.level != Level::Full;
                if partial != lines.is_some() {
                    return Err(err(
                        &self.file,
                        self.line_no,
                        format!(
                            "the footer {} `lines`, but the header's level is {}",
                            if lines.is_some() { "has" } else { "lacks" },
                            self.header.level
                        ),
                    ));
                }
                let (counted, read) = match lines {
                    Some(n) => (n, self.lines),
                    None => (events, self.lines),
                };
                if counted != read {
                    return Err(err(
                        &self.file,
                        self.line_no,
                        format!("the footer counts {counted} event lines but the trace has {read}"),
                    ));
                }
                // a trace that leaves events out is checked by `replay`, which re-runs it
                if !partial && !self.deferred && digest != self.digest.hex() {
                    return Err(err(
                        &self.file,
                        self.line_no,
                        format!(
                            "digest mismatch: the footer says {digest}, the events hash to {}",
                            self.digest.hex()
                        ),
                    ));
                }
                self.footer = Some(Footer {
                    outcome,
                    events,
                    digest,
                    lines,
                    budget,
                    line: self.line_no,
                });
                continue;
            }
            if line.t < self.last_t {
                return Err(err(
                    &self.file,
                    self.line_no,
                    backwards(line.t, self.last_t),
                ));
            }
            if let Some(m) = rank_beyond(&line.ev, self.nodes) {
                return Err(err(&self.file, self.line_no, m));
            }
            self.last_t = line.t;
            self.lines += 1;
            if self.header.version == 1 {
                self.digest.update_line(text.as_bytes());
            } else if !self.deferred {
                self.digest.update(line.t, &line.ev);
            }
            return Ok(Some(Some(line)));
        }
    }

    /// Reads the next line into `buf`; false at the end (or at a torn last line).
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        let n = match read_limited(&mut self.input, &mut self.buf) {
            Ok(n) => n,
            Err(LineError::Read(e)) if self.header.compressed => {
                // a compressed stream cut short: what came before it stands, as for a torn line
                self.cut = Some(e);
                self.torn = Some(self.line_no + 1);
                return Ok(false);
            }
            Err(e) => return Err(err(&self.file, self.line_no + 1, String::from(e))),
        };
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        if !self.buf.ends_with('\n') {
            // torn last line of an interrupted run
            self.torn = Some(self.line_no);
            self.torn_nul = self.buf.bytes().filter(|&b| b == 0).count();
            return Ok(false);
        }
        Ok(true)
    }

    /// When the next event line is byte for byte `expected` (the encoded line of event `ev` at
    /// `t`), takes it without parsing it — it is the encoding of that event — and returns true.
    /// Otherwise leaves it for [`TraceReader::next_raw`], which parses it, and returns false.
    /// Replay compares most lines this way.
    pub fn next_if_same(
        &mut self,
        expected: &[u8],
        t: Nanos,
        ev: &Event,
    ) -> Result<bool, TraceError> {
        if self.pending || self.footer.is_some() {
            return Ok(false);
        }
        loop {
            if !self.read_line()? {
                return Ok(false);
            }
            let text = self.buf.trim_end();
            if text.is_empty() {
                continue;
            }
            if text.as_bytes() == expected {
                self.last_t = t;
                self.lines += 1;
                if self.header.version == 1 {
                    self.digest.update_line(expected);
                } else {
                    self.digest.update(t, ev);
                }
                return Ok(true);
            }
            self.pending = true;
            return Ok(false);
        }
    }

    /// The next event with its raw line, or None at the end (footer consumed and checked).
    /// A final line without a newline (a run killed mid-write) is ignored.
    pub fn next_raw(&mut self) -> Result<Option<(Nanos, Event, &str)>, TraceError> {
        match self.advance(true)? {
            None => Ok(None),
            Some(line) => {
                let line = line.expect("advance(true) parses every line");
                Ok(Some((line.t, line.ev, self.buf.trim_end())))
            }
        }
    }

    /// The next event line, checked in sequence (digest, footer, torn end) but left unparsed,
    /// for readers that parse lines on other threads with [`UnparsedEvent::parse`].
    pub fn next_unparsed(&mut self) -> Result<Option<UnparsedEvent>, TraceError> {
        Ok(self.advance(false)?.map(|parsed| UnparsedEvent {
            line: self.line_no,
            text: if parsed.is_some() {
                String::new()
            } else {
                self.buf.trim_end().to_string()
            },
            parsed: parsed.map(|l| (l.t, l.ev)),
            nodes: self.nodes,
        }))
    }

    pub fn next_event(&mut self) -> Result<Option<(Nanos, Event)>, TraceError> {
        Ok(self.next_raw()?.map(|(t, e, _)| (t, e)))
    }

    /// 1-based number of the line last read.
    pub fn line_no(&self) -> usize {
        self.line_no
    }

    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// The line that was cut off in the middle (no newline) and ended the trace, if any.
    pub fn torn_line(&self) -> Option<usize> {
        self.torn
    }

    /// Why a compressed trace ended before its stream did, if it did.
    pub fn cut_short(&self) -> Option<&str> {
        self.cut.as_deref()
    }

    /// Once the trace is read to its end: `FILE:LINE: incomplete trace: WHY` when it has no
    /// footer, naming the line where it stops and why (a torn line, NUL bytes left by a
    /// crash, a compressed stream cut short, or no footer after whole lines).
    pub fn incomplete(&self) -> Option<String> {
        if self.footer.is_some() {
            return None;
        }
        let line = self.torn.unwrap_or(self.line_no);
        let why = match (&self.cut, self.torn) {
            (Some(e), _) => format!("its compressed stream ends early ({e})"),
            (None, Some(_)) if self.torn_nul > 0 => format!(
                "it ends in {} NUL bytes where its next line should be, as a crash leaves a \
                 file whose last writes never reached the disk",
                self.torn_nul
            ),
            (None, _) => "it ends without its `end` footer: the run was interrupted or the \
                          file was cut short"
                .to_string(),
        };
        Some(format!("{}:{line}: incomplete trace: {why}", self.file))
    }

    /// Leaves the digest of a version 2 trace to the caller, who parses the lines
    /// [`TraceReader::next_unparsed`] gives (on other threads) and checks the footer with
    /// [`Footer::check_digest`]. The footer's event count is still checked here.
    pub fn defer_digest(&mut self) {
        self.deferred = self.header.version >= 2;
    }

    /// Whether the caller checks the digest ([`TraceReader::defer_digest`]).
    pub fn digest_deferred(&self) -> bool {
        self.deferred
    }

    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    pub fn file(&self) -> &str {
        &self.file
    }
}

/// A list of distinct ranks below `world`, sorted; None when `v` is not one.
fn ranks_field(v: &serde_json::Value, world: u32) -> Option<Vec<u32>> {
    let list = v.as_array()?;
    let mut ranks = Vec::with_capacity(list.len().min(world as usize));
    for r in list {
        let r = u32::try_from(r.as_u64()?).ok().filter(|&r| r < world)?;
        ranks.push(r);
    }
    ranks.sort_unstable();
    let n = ranks.len();
    ranks.dedup();
    (ranks.len() == n).then_some(ranks)
}

/// Why a line could not be read as an event: NUL bytes, or what the JSON parser says.
fn malformed(text: &str, e: serde_json::Error) -> String {
    nul_bytes(text, "an event").unwrap_or_else(|| format!("malformed event: {e}"))
}

/// A line holding NUL bytes: what a crash leaves where data never reached the disk.
fn nul_bytes(text: &str, what: &str) -> Option<String> {
    let n = text.bytes().filter(|&b| b == 0).count();
    (n > 0).then(|| {
        format!(
            "{n} NUL bytes where {what} should be: the file was damaged, as a crash leaves a \
             file whose writes never reached the disk"
        )
    })
}

/// An event earlier than the one before it.
fn backwards(t: Nanos, last: Nanos) -> String {
    format!("time goes backwards: this event is at t = {t} ns, after an event at t = {last} ns")
}

/// The ranks a trace's events may name: the world's, and the store's node when there is one.
#[derive(Clone, Copy, Debug)]
struct Nodes {
    world: u32,
    all: u32,
}

/// An event naming a rank the header's scenario does not have.
fn rank_beyond(ev: &Event, nodes: Nodes) -> Option<String> {
    let (field, r) = ev.rank_beyond(nodes.all)?;
    let ranks = match nodes.world {
        0 => "no ranks".to_string(),
        1 => "1 rank (0)".to_string(),
        n => format!("{n} ranks (0 to {})", n - 1),
    };
    let store = if nodes.all > nodes.world {
        format!(" and the store (node {})", nodes.world)
    } else {
        String::new()
    };
    Some(format!(
        "a `{}` event whose `{field}` is {r}, but the header's scenario has {ranks}{store}",
        ev.kind()
    ))
}

/// Reads one line into `buf`, up to [`MAX_LINE`] bytes; the byte count (0 at the end).
fn read_limited<R: BufRead>(input: &mut R, buf: &mut String) -> Result<usize, LineError> {
    use std::io::Read;
    let n = input
        .take(MAX_LINE as u64 + 1)
        .read_line(buf)
        .map_err(|e| LineError::Read(format!("cannot read: {e}")))?;
    if n > MAX_LINE {
        return Err(LineError::TooLong);
    }
    Ok(n)
}

/// Why a line could not be read.
enum LineError {
    /// The input failed (a compressed stream cut short fails this way).
    Read(String),
    /// Longer than [`MAX_LINE`].
    TooLong,
}

impl From<LineError> for String {
    fn from(e: LineError) -> String {
        match e {
            LineError::Read(why) => why,
            LineError::TooLong => format!(
                "line longer than {} MiB: not a ringside trace line",
                MAX_LINE >> 20
            ),
        }
    }
}

/// Reads a whole trace into memory.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let mut r = TraceReader::open(path)?;
    let mut events = Vec::new();
    while let Some(e) = r.next_event()? {
        events.push(e);
    }
    Ok(Trace {
        header: r.header.clone(),
        events,
        footer: r.footer.clone(),
        digest: r.digest.hex(),
        incomplete: r.incomplete(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without the `zstd` feature refuses a compressed trace, to read or to write, with
    /// an error naming the file: never a panic, and no file left behind by a refused write.
    #[cfg(not(feature = "zstd"))]
    #[test]
    fn a_compressed_trace_is_refused_without_the_zstd_feature() {
        let dir = std::env::temp_dir().join(format!("ringside-no-zstd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let read = dir.join("read.jsonl.zst");
        std::fs::write(&read, [0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0]).unwrap();
        let e = TraceReader::open(&read).err().expect("refused");
        assert_eq!(e.line, 0);
        assert!(
            e.to_string()
                .contains("read.jsonl.zst:0: a zstd-compressed trace"),
            "{e}"
        );
        let written = dir.join("written.jsonl.zst");
        let s = crate::scenario::parse(
            "name = \"x\"\n[world]\nsize = 2\n[[workload.ops]]\nop = \"barrier\"\n",
            "x.toml",
        )
        .unwrap();
        let opts = crate::run::RunOptions {
            trace: Some(&written),
            ..crate::run::RunOptions::default()
        };
        let e = crate::run::run(&s, &opts).err().expect("refused");
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("no `zstd` feature"), "{e}");
        assert!(!written.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn both_paths_read_the_same_event() {
        let fast = r#"{"t":12,"kind":"deliver","id":3,"from":0,"to":1}"#;
        let slow = r#"{"kind":"deliver","id":3,"t":12,"from":0,"to":1}"#;
        assert_eq!(time_prefix(fast), Some(12));
        assert_eq!(time_prefix(slow), None);
        let (a, b) = (parse_line(fast).unwrap(), parse_line(slow).unwrap());
        assert_eq!((a.t, &a.ev), (b.t, &b.ev));
        assert_eq!(a.t, 12);
        assert_eq!(time_prefix(r#"{"t":,"kind":"end"}"#), None);
        assert_eq!(time_prefix(r#"{"t":7}"#), None);
        assert!(parse_line(r#"{"t":1,"kind":"nope"}"#).is_err());
    }

    #[test]
    fn unparsed_lines_parse_to_the_same_events() {
        let text = concat!(
            r#"{"format":"ringside-trace","version":1,"seed":0,"scenario":{"name":"x","#,
            r#""world":{"size":2},"workload":{"ops":[{"op":"barrier"}]}}}"#,
            "\n",
            r#"{"t":0,"kind":"process_start","rank":0,"incarnation":0}"#,
            "\n\n",
            r#"{"kind":"deliver","t":5,"id":0,"from":1,"to":0}"#,
            "\n",
        );
        let mut a = TraceReader::new(text.as_bytes(), "a").unwrap();
        let mut b = TraceReader::new(text.as_bytes(), "b").unwrap();
        let mut n = 0;
        while let Some(e) = a.next_event().unwrap() {
            let u = b.next_unparsed().unwrap().expect("as many lines");
            assert_eq!(u.parse("b").unwrap(), e);
            n += 1;
        }
        assert_eq!(n, 2);
        assert!(b.next_unparsed().unwrap().is_none());
        assert_eq!(a.digest(), b.digest());
        let bad = UnparsedEvent {
            line: 9,
            text: r#"{"t":1,"kind":"nope"}"#.into(),
            parsed: None,
            nodes: Nodes { world: 2, all: 2 },
        };
        assert_eq!(bad.parse("f").unwrap_err().line, 9);
    }
}
