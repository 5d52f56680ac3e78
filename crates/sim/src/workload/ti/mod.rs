//! SimGrid time-independent traces (`smpirun -trace-ti`, replayed by `smpirun -replay`).
//!
//! An index file lists one trace file per rank (or, with a single line, one shared file whose
//! lines start with the rank). Each line is `<rank> <action> <args>`; sizes are counts of a
//! datatype (`MPI_BYTE` unless `init` has an argument, then `MPI_DOUBLE`, or an explicit
//! datatype id), computations are in flops. Every action SimGrid 3.32 replays is read:
//! `init`, `finalize`, `compute`, `sleep`, `location`, `send`, `isend`, `recv`, `irecv`,
//! `test`, `wait`, `waitall`, `sendRecv`, `barrier`, `bcast`, `reduce`, `allreduce`,
//! `alltoall`, `alltoallv`, `gather`, `gatherv`, `scatter`, `scatterv`, `allgather`,
//! `allgatherv`, `reducescatter`, `scan`, `exscan`, `comm_size`, `comm_split`, `comm_dup`.
//! Non-blocking requests are found again by `(source, destination, tag)`, oldest first, as
//! SimGrid does. Unlike SimGrid 3.32, a last line without a newline is not dropped.
//!
//! Every line must be one of these actions with the fields it needs: flops, seconds,
//! sizes and counts finite and non-negative (a receive's negative size means "probe for
//! it", as in SimGrid), ranks among the trace's ranks, send tags non-negative. A line that
//! is not (garbage, an unknown action, a missing or bad field, a line of another rank in a
//! per-rank file, a line after `finalize`) is an error naming the file and the line, or,
//! with [`TiOptions::lenient`], skipped and counted in a [`SkippedLines`].
//!
//! Files are read in chunks and closed in between, so any number of ranks can be replayed
//! without holding a file open per rank.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Action, Outcome, RankWorkload, ReqHandle, WorkloadError, ANY};
use crate::coll::{CollArgs, Collective};

/// Bytes of SimGrid's datatype ids (smpi_datatype.cpp order).
fn dtype_size(id: i64) -> Option<u64> {
    Some(match id {
        0 => 8,   // MPI_DOUBLE
        1 => 4,   // MPI_INT
        2 => 1,   // MPI_CHAR
        3 => 2,   // MPI_SHORT
        4 => 8,   // MPI_LONG
        5 => 4,   // MPI_FLOAT
        6 => 1,   // MPI_BYTE
        7 => 8,   // MPI_LONG_LONG
        8 => 1,   // MPI_SIGNED_CHAR
        9 => 1,   // MPI_UNSIGNED_CHAR
        10 => 2,  // MPI_UNSIGNED_SHORT
        11 => 4,  // MPI_UNSIGNED
        12 => 8,  // MPI_UNSIGNED_LONG
        13 => 8,  // MPI_UNSIGNED_LONG_LONG
        14 => 16, // MPI_LONG_DOUBLE
        15 => 2,  // MPI_WCHAR
        16 => 1,  // MPI_C_BOOL
        17 => 1,  // MPI_INT8_T
        18 => 2,  // MPI_INT16_T
        19 => 4,  // MPI_INT32_T
        20 => 8,  // MPI_INT64_T
        21 => 1,  // MPI_UINT8_T
        22 => 2,  // MPI_UINT16_T
        23 => 4,  // MPI_UINT32_T
        24 => 8,  // MPI_UINT64_T
        25 => 8,  // MPI_C_FLOAT_COMPLEX
        26 => 16, // MPI_C_DOUBLE_COMPLEX
        _ => return None,
    })
}

/// Options for reading TI traces.
#[derive(Debug, Clone, Default)]
pub struct TiOptions {
    /// Reproduce SimGrid's `test` delays (1e-4 s, growing by 1e-4 after each failed test,
    /// one counter for all ranks).
    pub simgrid_test_delays: bool,
    /// Skip the lines that are not valid actions of their rank, counting them in this log
    /// (shared by the ranks, and by several readings of one trace); `None`: such a line is
    /// an error.
    pub lenient: Option<SkippedLines>,
}

/// The lines a lenient reading skipped (see [`TiOptions::lenient`]): a handle shared by
/// the ranks' readers. A line skipped by several readings of the same trace (the points of
/// a study) counts once.
#[derive(Debug, Clone, Default)]
pub struct SkippedLines(Arc<Mutex<Skips>>);

#[derive(Debug, Default)]
struct Skips {
    /// (file, line) of every line skipped.
    seen: std::collections::BTreeSet<(String, u64)>,
    /// The first ones' messages, in the order they were met.
    first: Vec<String>,
}

impl SkippedLines {
    /// How many messages [`SkippedLines::first`] keeps.
    pub const KEPT: usize = 5;

    /// Records a line skipped because of `error`.
    fn record(&self, error: WorkloadError) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = match &error {
            WorkloadError::Syntax { path, line, .. } => (path.clone(), *line),
            WorkloadError::Io { path, .. } | WorkloadError::Unsupported { path, .. } => {
                (path.clone(), 0)
            }
        };
        if s.seen.insert(key) && s.first.len() < Self::KEPT {
            s.first.push(error.to_string());
        }
    }

    /// Lines skipped so far.
    pub fn count(&self) -> u64 {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).seen.len() as u64
    }

    /// The messages of the first lines skipped (at most [`SkippedLines::KEPT`]), each
    /// naming its file and line.
    pub fn first(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first
            .clone()
    }
}

/// Where a rank's lines come from.
#[derive(Debug)]
enum Source {
    /// A file of this rank alone, read in chunks from `offset`; the current chunk is kept
    /// as one string and split into lines on demand.
    File {
        path: PathBuf,
        offset: u64,
        eof: bool,
    },
    /// Lines already split out of a shared file.
    Lines,
}

/// One rank of a TI trace.
pub struct TiRank {
    rank: u32,
    size: u32,
    source: Source,
    lines: VecDeque<(u64, String)>,
    /// The last chunk read from a per-rank file, and how far it has been consumed.
    chunk_text: String,
    chunk_pos: usize,
    line_no: u64,
    name: String,
    dtype: u64,
    /// Stored non-blocking requests by (src, dst, tag), oldest first.
    stored: HashMap<(i64, i64, i64), VecDeque<ReqHandle>>,
    order: Vec<ReqHandle>,
    next_handle: ReqHandle,
    queue: VecDeque<Action>,
    /// Test in progress: (key, handle).
    testing: Option<((i64, i64, i64), ReqHandle)>,
    test_counter: Arc<Mutex<u64>>,
    chunk: usize,
    options: TiOptions,
    finished: bool,
}

/// Bytes read per refill: large for few ranks, small for many (buffered text stays below
/// about 64 MiB whatever the rank count, and 4 KiB per rank beyond 16,384 ranks).
fn chunk_for(ranks: usize) -> usize {
    ((64usize << 20) / ranks.max(1)).clamp(4 << 10, 256 << 10)
}

fn syntax(path: &str, line: u64, message: impl Into<String>) -> WorkloadError {
    WorkloadError::Syntax {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

/// Reads a TI trace: one workload per rank.
pub fn load(index: &Path, options: TiOptions) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    let ipath = index.display().to_string();
    let text = std::fs::read_to_string(index).map_err(|e| WorkloadError::Io {
        path: ipath.clone(),
        message: e.to_string(),
    })?;
    let base = index.parent().unwrap_or(Path::new("."));
    let entries: Vec<(u64, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if entries.is_empty() {
        return Err(syntax(&ipath, 1, "the index lists no trace file"));
    }
    let resolve = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() || p.exists() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let counter = Arc::new(Mutex::new(1u64));
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::new();
    if entries.len() == 1 {
        // One shared file: split its lines by rank.
        let path = resolve(entries[0].1);
        let shared = std::fs::read_to_string(&path).map_err(|e| WorkloadError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        out = split_shared(&shared, &path.display().to_string(), counter, &options)?;
    } else {
        let n = entries.len() as u32;
        for (r, (_, p)) in entries.iter().enumerate() {
            let path = resolve(p);
            if !path.is_file() {
                return Err(WorkloadError::Io {
                    path: path.display().to_string(),
                    message: format!("trace of rank {r} (listed in {ipath}) not found"),
                });
            }
            let name = path.display().to_string();
            out.push(Box::new(TiRank::new(
                r as u32,
                n,
                Source::File {
                    path,
                    offset: 0,
                    eof: false,
                },
                VecDeque::new(),
                name,
                counter.clone(),
                options.clone(),
            )));
        }
    }
    Ok(out)
}

/// Reads a TI trace held in memory, in the shared-file form (every line starts with its
/// rank); `name` is used in error messages.
pub fn from_str(
    text: &str,
    name: &str,
    options: TiOptions,
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    split_shared(text, name, Arc::new(Mutex::new(1)), &options)
}

/// One workload per rank from the lines of a shared file.
fn split_shared(
    shared: &str,
    name: &str,
    counter: Arc<Mutex<u64>>,
    options: &TiOptions,
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::new();
    let mut per: BTreeMap<usize, VecDeque<(u64, String)>> = BTreeMap::new();
    for (i, line) in shared.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        let Ok(r) = first.parse::<u32>() else {
            let e = syntax(
                name,
                i as u64 + 1,
                format!("`{first}` is not a rank: expected `<rank> <action> ...`"),
            );
            match &options.lenient {
                Some(log) => {
                    log.record(e);
                    continue;
                }
                None => return Err(e),
            }
        };
        let r = r as usize;
        per.entry(r)
            .or_default()
            .push_back((i as u64 + 1, t.to_owned()));
    }
    // Ranks are 0..n-1, each with lines (a typo must not make millions of empty ranks).
    if let Some((k, _)) = per.keys().enumerate().find(|&(k, &r)| k != r) {
        let (&r, lines) = per.range(k..).next().expect("a rank past the gap");
        return Err(syntax(
            name,
            lines.front().map_or(0, |l| l.0),
            format!("rank {r} appears but rank {k} has no line (ranks must be 0..N-1)"),
        ));
    }
    let per: Vec<VecDeque<(u64, String)>> = per.into_values().collect();
    let n = per.len() as u32;
    for (r, lines) in per.into_iter().enumerate() {
        out.push(Box::new(TiRank::new(
            r as u32,
            n,
            Source::Lines,
            lines,
            name.to_owned(),
            counter.clone(),
            options.clone(),
        )));
    }
    Ok(out)
}

impl TiRank {
    fn new(
        rank: u32,
        size: u32,
        source: Source,
        lines: VecDeque<(u64, String)>,
        name: String,
        test_counter: Arc<Mutex<u64>>,
        options: TiOptions,
    ) -> TiRank {
        TiRank {
            rank,
            size,
            source,
            lines,
            chunk_text: String::new(),
            chunk_pos: 0,
            line_no: 0,
            name,
            dtype: 1,
            stored: HashMap::new(),
            order: Vec::new(),
            next_handle: 1,
            queue: VecDeque::new(),
            testing: None,
            test_counter,
            options,
            finished: false,
            chunk: chunk_for(size as usize),
        }
    }

    /// Reads the next chunk of this rank's file.
    fn refill(&mut self) -> Result<(), WorkloadError> {
        let Source::File { path, offset, eof } = &mut self.source else {
            return Ok(());
        };
        if *eof {
            return Ok(());
        }
        let io = |e: std::io::Error| WorkloadError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let mut f = std::fs::File::open(&*path).map_err(io)?;
        f.seek(SeekFrom::Start(*offset)).map_err(io)?;
        // Read at least one whole line: grow the buffer for very long lines (alltoallv at
        // many ranks).
        let mut chunk = self.chunk;
        let mut buf: Vec<u8> = Vec::new();
        let complete = loop {
            let had = buf.len();
            buf.resize(chunk, 0);
            let mut n = had;
            while n < chunk {
                let k = f.read(&mut buf[n..]).map_err(io)?;
                if k == 0 {
                    break;
                }
                n += k;
            }
            buf.truncate(n);
            if n < chunk {
                *eof = true;
                break n;
            }
            if let Some(p) = buf.iter().rposition(|&b| b == b'\n') {
                break p + 1;
            }
            if chunk >= 1 << 30 {
                return Err(syntax(
                    &path.display().to_string(),
                    self.line_no + 1,
                    "line longer than 1 GiB",
                ));
            }
            chunk *= 2;
        };
        *offset += complete as u64;
        buf.truncate(complete);
        self.chunk_text = match String::from_utf8(buf) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        self.chunk_pos = 0;
        Ok(())
    }

    /// The next non-empty, non-comment line and its number.
    fn next_line(&mut self) -> Result<Option<(u64, String)>, WorkloadError> {
        if let Some(l) = self.lines.pop_front() {
            return Ok(Some(l));
        }
        loop {
            if self.chunk_pos >= self.chunk_text.len() {
                let more = matches!(self.source, Source::File { eof: false, .. });
                if !more {
                    return Ok(None);
                }
                self.refill()?;
                if self.chunk_text.is_empty() {
                    return Ok(None);
                }
            }
            let rest = &self.chunk_text[self.chunk_pos..];
            let end = rest.find('\n').unwrap_or(rest.len());
            self.chunk_pos += (end + 1).min(rest.len());
            self.line_no += 1;
            let t = rest[..end].trim();
            if !t.is_empty() && !t.starts_with('#') {
                return Ok(Some((self.line_no, t.to_owned())));
            }
        }
    }

    fn handle(&mut self) -> ReqHandle {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    fn store(&mut self, key: (i64, i64, i64), h: ReqHandle) {
        self.stored.entry(key).or_default().push_back(h);
        self.order.push(h);
    }

    fn take(&mut self, key: (i64, i64, i64)) -> Option<ReqHandle> {
        let q = self.stored.get_mut(&key)?;
        let h = q.pop_front()?;
        if q.is_empty() {
            self.stored.remove(&key);
        }
        self.order.retain(|&x| x != h);
        Some(h)
    }

    /// Parses one line into actions.
    fn parse(&mut self, line_no: u64, line: &str) -> Result<(), WorkloadError> {
        let tok: Vec<&str> = line.split_whitespace().collect();
        let path = self.name.clone();
        let err = |m: String| syntax(&path, line_no, m);
        match tok.first().map(|t| t.parse::<u32>()) {
            // SimGrid skips the lines of other ranks in a per-rank file; they are errors
            // here (a file listed for the wrong rank, or lines lost from another).
            Some(Ok(r)) if r != self.rank => {
                return Err(err(format!(
                    "a line of rank {r} in the trace of rank {}",
                    self.rank
                )))
            }
            Some(Ok(_)) if tok.len() >= 2 => {}
            _ => return Err(err(format!("`{line}`: expected `<rank> <action> ...`"))),
        }
        let a = &tok[2..];
        let num = |i: usize, what: &str| -> Result<f64, WorkloadError> {
            let s = a
                .get(i)
                .ok_or_else(|| err(format!("{}: missing {what}", tok[1])))?;
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| err(format!("{}: {what} `{s}` is not a number", tok[1])))
        };
        // Flops, seconds, sizes and counts: finite and non-negative.
        let amount = |i: usize, what: &str| -> Result<f64, WorkloadError> {
            let v = num(i, what)?;
            if v < 0.0 {
                return Err(err(format!("{}: {what} {v} is negative", tok[1])));
            }
            Ok(v)
        };
        let count = |i: usize, what: &str| amount(i, what).map(|v| v as u64);
        let int = |i: usize, what: &str| -> Result<i64, WorkloadError> {
            let s = a
                .get(i)
                .ok_or_else(|| err(format!("{}: missing {what}", tok[1])))?;
            s.parse::<i64>()
                .map_err(|_| err(format!("{}: {what} `{s}` is not an integer", tok[1])))
        };
        // A tag: non-negative, or ANY (-1) where a receive may use it.
        let tag = |i: usize, any: bool| -> Result<i64, WorkloadError> {
            let v = int(i, "tag")?;
            let least = if any { ANY } else { 0 };
            if v < least {
                return Err(err(format!(
                    "{}: tag {v} is negative{}",
                    tok[1],
                    if any { " (and not -1, any tag)" } else { "" }
                )));
            }
            Ok(v)
        };
        let peer = |i: usize, what: &str, n: u32| -> Result<u32, WorkloadError> {
            let v = int(i, what)?;
            if v < 0 || v >= i64::from(n) {
                return Err(err(format!(
                    "{}: {what} {v} is not a rank of the {n} ranks",
                    tok[1]
                )));
            }
            Ok(v as u32)
        };
        let dt = |i: usize, default: u64| -> Result<u64, WorkloadError> {
            match a.get(i) {
                None => Ok(default),
                Some(s) => {
                    let id: i64 = s
                        .parse()
                        .map_err(|_| err(format!("{}: datatype `{s}` is not an id", tok[1])))?;
                    dtype_size(id)
                        .ok_or_else(|| err(format!("{}: unknown datatype id {id}", tok[1])))
                }
            }
        };
        let n = self.size;
        let me = self.rank;
        let d = self.dtype;
        let counts = |from: usize, what: &str| -> Result<Vec<u64>, WorkloadError> {
            (0..n as usize)
                .map(|i| {
                    let v = int(from + i, what)?;
                    u64::try_from(v).map_err(|_| err(format!("{}: negative {what}", tok[1])))
                })
                .collect()
        };
        let coll = |kind: Collective,
                    root: u32,
                    count: u64,
                    recv_count: u64,
                    ds: u64,
                    dr: u64,
                    sc: Vec<u64>,
                    rc: Vec<u64>| {
            CollArgs {
                kind,
                size: n,
                rank: me,
                root,
                count,
                recv_count,
                dtype_size: ds,
                recv_dtype_size: dr,
                send_counts: sc,
                recv_counts: rc,
            }
        };
        let push_coll = |q: &mut VecDeque<Action>, args: CollArgs, comp: f64| {
            q.push_back(Action::Collective {
                args,
                comm: 0,
                comp_flops: comp,
                req: None,
            });
        };
        match tok[1] {
            "init" => self.dtype = if a.is_empty() { 1 } else { 8 },
            "finalize" => {
                self.queue.push_back(Action::Finalize);
                self.finished = true;
            }
            "comm_size" | "comm_split" | "comm_dup" | "location" => {}
            "compute" => self.queue.push_back(Action::Compute {
                flops: amount(0, "flops")?,
            }),
            "sleep" => self.queue.push_back(Action::Sleep {
                secs: amount(0, "seconds")?,
            }),
            "send" | "isend" => {
                let dst = peer(0, "destination", n)?;
                let tag = tag(1, false)?;
                let bytes = count(2, "size")?.saturating_mul(dt(3, d)?);
                let req = if tok[1] == "isend" {
                    let h = self.handle();
                    self.store((i64::from(me), i64::from(dst), tag), h);
                    Some(h)
                } else {
                    None
                };
                self.queue.push_back(Action::Send {
                    dst,
                    tag,
                    bytes,
                    comm: 0,
                    req,
                    sync: false,
                });
            }
            "recv" | "irecv" => {
                let src = peer(0, "source", n)?;
                let tag = tag(1, true)?;
                // A negative size: the receiver probes for it (as SimGrid).
                let size = num(2, "size")?;
                let bytes = (size.max(0.0) as u64).saturating_mul(dt(3, d)?);
                if size < 0.0 {
                    self.queue.push_back(Action::Probe {
                        src: i64::from(src),
                        tag,
                        comm: 0,
                    });
                }
                let req = if tok[1] == "irecv" {
                    let h = self.handle();
                    self.store((i64::from(src), i64::from(me), tag), h);
                    Some(h)
                } else {
                    None
                };
                self.queue.push_back(Action::Recv {
                    src: i64::from(src),
                    tag,
                    bytes,
                    comm: 0,
                    req,
                });
            }
            "wait" => {
                let key = (int(0, "source")?, int(1, "destination")?, int(2, "tag")?);
                let h = self
                    .take(key)
                    .ok_or_else(|| err("wait: not preceded by a matching isend or irecv".into()))?;
                self.queue.push_back(Action::Wait { reqs: vec![h] });
            }
            "test" => {
                let key = (int(0, "source")?, int(1, "destination")?, int(2, "tag")?);
                let front = self.stored.get(&key).and_then(|q| q.front().copied());
                if let Some(h) = front {
                    if self.options.simgrid_test_delays {
                        let c = *self.test_counter.lock().unwrap_or_else(|p| p.into_inner());
                        self.queue.push_back(Action::Sleep {
                            secs: c as f64 * 1e-4,
                        });
                    }
                    self.testing = Some((key, h));
                    self.queue.push_back(Action::Test { req: h });
                }
            }
            "waitall" => {
                let reqs = std::mem::take(&mut self.order);
                self.stored.clear();
                self.queue.push_back(Action::Wait { reqs });
            }
            "sendRecv" => {
                if a.len() < 6 {
                    return Err(err(format!(
                        "sendRecv: {} items given, 6 expected",
                        a.len()
                    )));
                }
                let sbytes = count(0, "send count")?.saturating_mul(dt(4, d)?);
                let dst = peer(1, "destination", n)?;
                let rbytes = count(2, "receive count")?.saturating_mul(dt(5, d)?);
                let src = peer(3, "source", n)?;
                let (hs, hr) = (self.handle(), self.handle());
                self.queue.push_back(Action::Send {
                    dst,
                    tag: 0,
                    bytes: sbytes,
                    comm: 0,
                    req: Some(hs),
                    sync: false,
                });
                self.queue.push_back(Action::Recv {
                    src: i64::from(src),
                    tag: 0,
                    bytes: rbytes,
                    comm: 0,
                    req: Some(hr),
                });
                self.queue.push_back(Action::Wait { reqs: vec![hs, hr] });
            }
            "barrier" => push_coll(
                &mut self.queue,
                coll(Collective::Barrier, 0, 0, 0, 1, 1, vec![], vec![]),
                0.0,
            ),
            "bcast" => {
                let c = count(0, "size")?;
                let root = if a.len() > 1 { peer(1, "root", n)? } else { 0 };
                let s = dt(2, d)?;
                push_coll(
                    &mut self.queue,
                    coll(Collective::Bcast, root, c, c, s, s, vec![], vec![]),
                    0.0,
                );
            }
            "reduce" => {
                let c = count(0, "count")?;
                let comp = amount(1, "comp")?;
                let root = if a.len() > 2 { peer(2, "root", n)? } else { 0 };
                let s = dt(3, d)?;
                push_coll(
                    &mut self.queue,
                    coll(Collective::Reduce, root, c, c, s, s, vec![], vec![]),
                    comp,
                );
            }
            "allreduce" | "scan" | "exscan" => {
                let c = count(0, "count")?;
                let comp = amount(1, "comp")?;
                let s = dt(2, d)?;
                let kind = match tok[1] {
                    "allreduce" => Collective::Allreduce,
                    "scan" => Collective::Scan,
                    _ => Collective::Exscan,
                };
                push_coll(
                    &mut self.queue,
                    coll(kind, 0, c, c, s, s, vec![], vec![]),
                    comp,
                );
            }
            "alltoall" | "allgather" => {
                let sc = count(0, "send count")?;
                let rc = count(1, "receive count")?;
                let (ds, dr) = (dt(2, d)?, dt(3, d)?);
                let kind = if tok[1] == "alltoall" {
                    Collective::Alltoall
                } else {
                    Collective::Allgather
                };
                push_coll(
                    &mut self.queue,
                    coll(kind, 0, sc, rc, ds, dr, vec![], vec![]),
                    0.0,
                );
            }
            "gather" | "scatter" => {
                let sc = count(0, "send count")?;
                let rc = count(1, "receive count")?;
                let root = if a.len() > 2 { peer(2, "root", n)? } else { 0 };
                let (ds, dr) = (dt(3, d)?, dt(4, d)?);
                let kind = if tok[1] == "gather" {
                    Collective::Gather
                } else {
                    Collective::Scatter
                };
                push_coll(
                    &mut self.queue,
                    coll(kind, root, sc, rc, ds, dr, vec![], vec![]),
                    0.0,
                );
            }
            "alltoallv" => {
                let sc = counts(1, "send counts")?;
                let rc = counts(2 + n as usize, "receive counts")?;
                let base = 2 + 2 * n as usize;
                let (ds, dr) = (dt(base, d)?, dt(base + 1, d)?);
                push_coll(
                    &mut self.queue,
                    coll(Collective::Alltoallv, 0, 0, 0, ds, dr, sc, rc),
                    0.0,
                );
            }
            "gatherv" => {
                let sc = count(0, "send count")?;
                let rc = counts(1, "receive counts")?;
                let base = 1 + n as usize;
                let root = if a.len() > base {
                    peer(base, "root", n)?
                } else {
                    0
                };
                let (ds, dr) = (dt(base + 1, d)?, dt(base + 2, d)?);
                push_coll(
                    &mut self.queue,
                    coll(Collective::Gatherv, root, sc, 0, ds, dr, vec![], rc),
                    0.0,
                );
            }
            "scatterv" => {
                let sc = counts(0, "send counts")?;
                let base = n as usize;
                let rc = count(base, "receive count")?;
                let root = if a.len() > base + 1 {
                    peer(base + 1, "root", n)?
                } else {
                    0
                };
                let (ds, dr) = (dt(base + 2, d)?, dt(base + 3, d)?);
                push_coll(
                    &mut self.queue,
                    coll(Collective::Scatterv, root, 0, rc, ds, dr, sc, vec![]),
                    0.0,
                );
            }
            "allgatherv" => {
                let sc = count(0, "send count")?;
                let rc = counts(1, "receive counts")?;
                // Total tokens T (with rank and action); datatypes as SimGrid 3.32 finds them.
                let t = tok.len();
                let nn = n as usize;
                let (ds, dr) = if t > 3 + 2 * nn {
                    (dt(1 + nn, d)?, dt(2 + nn, d)?)
                } else if t > 5 + nn {
                    (d, d)
                } else {
                    (dt(1 + nn, d)?, dt(2 + nn, d)?)
                };
                push_coll(
                    &mut self.queue,
                    coll(Collective::Allgatherv, 0, sc, 0, ds, dr, vec![], rc),
                    0.0,
                );
            }
            "reducescatter" => {
                let rc = counts(0, "receive counts")?;
                let comp = amount(n as usize, "comp")?;
                let s = dt(n as usize + 1, d)?;
                push_coll(
                    &mut self.queue,
                    coll(Collective::ReduceScatter, 0, 0, 0, s, s, vec![], rc),
                    comp,
                );
            }
            other => return Err(err(format!("unknown action `{other}`"))),
        }
        Ok(())
    }
}

impl RankWorkload for TiRank {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        if let (Some((key, h)), Outcome::Flag(flag)) = (self.testing, last) {
            self.testing = None;
            if self.options.simgrid_test_delays {
                let mut c = self.test_counter.lock().unwrap_or_else(|p| p.into_inner());
                *c = if flag { 1 } else { *c + 1 };
            }
            if flag {
                if let Some(q) = self.stored.get_mut(&key) {
                    q.retain(|&x| x != h);
                    if q.is_empty() {
                        self.stored.remove(&key);
                    }
                }
                self.order.retain(|&x| x != h);
            }
        }
        loop {
            if let Some(a) = self.queue.pop_front() {
                return Some(Ok(a));
            }
            if self.finished {
                return None;
            }
            match self.next_line() {
                Err(e) => return Some(Err(e)),
                Ok(None) => {
                    self.finished = true;
                    return Some(Ok(Action::Finalize));
                }
                Ok(Some((no, line))) => {
                    if let Err(e) = self.parse(no, &line) {
                        if let Some(e) = self.unless_lenient(e) {
                            return Some(Err(e));
                        }
                    }
                    if self.finished {
                        if let Err(e) = self.nothing_after_finalize() {
                            return Some(Err(e));
                        }
                    }
                }
            }
        }
    }
}

impl TiRank {
    /// `error` back, unless the reading is lenient: then the line is counted as skipped.
    fn unless_lenient(&self, error: WorkloadError) -> Option<WorkloadError> {
        match &self.options.lenient {
            Some(log) => {
                log.record(error);
                None
            }
            None => Some(error),
        }
    }

    /// After `finalize`, no line may follow (a lenient reading skips them all).
    fn nothing_after_finalize(&mut self) -> Result<(), WorkloadError> {
        while let Some((no, line)) = self.next_line()? {
            let e = syntax(&self.name, no, format!("`{line}` after `finalize`"));
            if let Some(e) = self.unless_lenient(e) {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod strict_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(text: &str, rank: u32, n: u32) -> Vec<Action> {
        let lines: VecDeque<(u64, String)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim().to_owned()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        let mut w = TiRank::new(
            rank,
            n,
            Source::Lines,
            lines,
            "t".into(),
            Arc::new(Mutex::new(1)),
            TiOptions::default(),
        );
        let mut out = Vec::new();
        while let Some(a) = w.next(Outcome::None) {
            out.push(a.unwrap());
        }
        out
    }

    #[test]
    fn shared_file_ranks_must_be_dense() {
        let w = from_str("0 init\n1 init\n0 finalize\n", "t", TiOptions::default()).unwrap();
        assert_eq!(w.len(), 2);
        let e = from_str(
            "0 init\n# x\n10110000 init\n",
            "t.txt",
            TiOptions::default(),
        )
        .err()
        .expect("a gap in ranks")
        .to_string();
        assert!(e.contains("t.txt") && e.contains(":3"), "{e}");
        assert!(
            e.contains("rank 10110000 appears but rank 1 has no line"),
            "{e}"
        );
        let e = from_str("x init\n", "t.txt", TiOptions::default())
            .err()
            .expect("not a rank")
            .to_string();
        assert!(e.contains("`x` is not a rank"), "{e}");
    }

    #[test]
    fn chunked_reading_keeps_every_line_and_its_number() {
        // Lines longer than the chunk, blank lines, comments, CRLF, no final newline.
        let long = format!("0 compute {}", "9".repeat(40));
        let text = format!("0 init\r\n\n# note\n{long}\n  0 send 1 0 8  \n\n0 finalize");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r0.txt");
        std::fs::write(&path, &text).unwrap();
        let expected: Vec<(u64, String)> = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim().to_owned()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .collect();
        for chunk in [1, 3, 7, 16, 1 << 12] {
            let mut w = TiRank::new(
                0,
                1,
                Source::File {
                    path: path.clone(),
                    offset: 0,
                    eof: false,
                },
                VecDeque::new(),
                "r0.txt".into(),
                Arc::new(Mutex::new(1)),
                TiOptions::default(),
            );
            w.chunk = chunk;
            let mut got = Vec::new();
            while let Some(l) = w.next_line().unwrap() {
                got.push(l);
            }
            assert_eq!(got, expected, "chunk {chunk}");
        }
    }

    #[test]
    fn point_to_point_and_requests() {
        let a = actions(
            "0 init\n0 isend 1 5 100\n0 irecv 1 6 10 1\n0 wait 1 0 6\n0 wait 0 1 5\n0 finalize\n",
            0,
            2,
        );
        assert_eq!(
            a[0],
            Action::Send {
                dst: 1,
                tag: 5,
                bytes: 100,
                comm: 0,
                req: Some(1),
                sync: false
            }
        );
        assert_eq!(
            a[1],
            Action::Recv {
                src: 1,
                tag: 6,
                bytes: 40,
                comm: 0,
                req: Some(2)
            }
        );
        assert_eq!(a[2], Action::Wait { reqs: vec![2] });
        assert_eq!(a[3], Action::Wait { reqs: vec![1] });
        assert_eq!(a[4], Action::Finalize);
    }

    #[test]
    fn datatypes_follow_init() {
        let a = actions("1 init 1\n1 send 0 0 3\n1 bcast 10 0 1\n", 1, 2);
        assert_eq!(
            a[0],
            Action::Send {
                dst: 0,
                tag: 0,
                bytes: 24,
                comm: 0,
                req: None,
                sync: false
            }
        );
        match &a[1] {
            Action::Collective { args, .. } => {
                assert_eq!((args.count, args.dtype_size, args.root), (10, 4, 0))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn vector_collectives() {
        let a = actions(
            "0 init\n0 alltoallv 6 1 2 3 9 2 3 4\n0 reducescatter 1 2 3 100\n",
            0,
            3,
        );
        match &a[0] {
            Action::Collective { args, .. } => {
                assert_eq!(args.send_counts, vec![1, 2, 3]);
                assert_eq!(args.recv_counts, vec![2, 3, 4]);
            }
            other => panic!("{other:?}"),
        }
        match &a[1] {
            Action::Collective {
                args, comp_flops, ..
            } => {
                assert_eq!(args.recv_counts, vec![1, 2, 3]);
                assert_eq!(*comp_flops, 100.0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let lines: VecDeque<(u64, String)> =
            vec![(1, "0 init".to_string()), (2, "0 send x 1 2".to_string())].into();
        let mut w = TiRank::new(
            0,
            2,
            Source::Lines,
            lines,
            "trace.txt".into(),
            Arc::new(Mutex::new(1)),
            TiOptions::default(),
        );
        let e = w.next(Outcome::None).unwrap().unwrap_err().to_string();
        assert!(e.contains("trace.txt:2"), "{e}");
        assert!(e.contains("destination"), "{e}");
        let lines: VecDeque<(u64, String)> = vec![(7, "0 frobnicate".to_string())].into();
        let mut w = TiRank::new(
            0,
            2,
            Source::Lines,
            lines,
            "t".into(),
            Arc::new(Mutex::new(1)),
            TiOptions::default(),
        );
        assert!(w
            .next(Outcome::None)
            .unwrap()
            .unwrap_err()
            .to_string()
            .contains("t:7: unknown action"));
    }
}
