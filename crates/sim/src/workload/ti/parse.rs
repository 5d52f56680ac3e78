//! One rank's TI lines into actions: the parser's state (the datatype `init` chose, the
//! non-blocking requests waiting for their `wait`, the pending actions) and one method per
//! group of actions (point-to-point, requests, collectives).
//!
//! Requests are found again by `(source, destination, tag)`, oldest first, as SimGrid does;
//! `waitall` waits every request still stored, in posting order. A `test` takes the oldest
//! request of its key and puts it back last, or, when it succeeded, a null request
//! ([`NULL`]) that the next `wait` or `test` of the key takes and does nothing with, as
//! SimGrid's replay does.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::fields::Fields;
use crate::coll::{CollArgs, Collective};
use crate::workload::{Action, Outcome, ReqHandle, WorkloadError};

/// `(source, destination, tag)` of a stored request.
type Key = (i64, i64, i64);

/// The stored request a successful `test` leaves (handles start at 1).
const NULL: ReqHandle = 0;

/// The parser of one rank's lines.
pub(super) struct Parser {
    rank: u32,
    size: u32,
    /// Names the input in errors (shared with the fields of each line: no copy per line).
    name: Arc<str>,
    /// Bytes of a count without a datatype: 1 (`MPI_BYTE`) unless `init` has an argument.
    dtype: u64,
    /// Stored non-blocking requests by (src, dst, tag), oldest first.
    stored: HashMap<Key, VecDeque<ReqHandle>>,
    /// Emptied queues of `stored`, kept for the next key (no allocation per request).
    spare: Vec<VecDeque<ReqHandle>>,
    order: Vec<ReqHandle>,
    next_handle: ReqHandle,
    /// Actions parsed and not yet handed out.
    pub(super) queue: VecDeque<Action>,
    /// Test in progress: (key, handle).
    testing: Option<(Key, ReqHandle)>,
    /// `finalize` was read.
    pub(super) finished: bool,
}

impl Parser {
    /// The parser of rank `rank` of `size` reading `name`.
    pub(super) fn new(rank: u32, size: u32, name: String) -> Parser {
        Parser {
            rank,
            size,
            name: Arc::from(name),
            dtype: 1,
            stored: HashMap::new(),
            spare: Vec::new(),
            order: Vec::new(),
            next_handle: 1,
            queue: VecDeque::new(),
            testing: None,
            finished: false,
        }
    }

    /// The name errors give the input.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Takes in the outcome of the previous action: the request a test took goes back to
    /// its key, last, or a null request in its place when the test succeeded.
    pub(super) fn outcome(&mut self, last: Outcome) {
        let (Some((key, h)), Outcome::Flag(flag)) = (self.testing, last) else {
            return;
        };
        self.testing = None;
        self.store(key, if flag { NULL } else { h });
    }

    fn handle(&mut self) -> ReqHandle {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    fn store(&mut self, key: Key, h: ReqHandle) {
        let spare = &mut self.spare;
        self.stored
            .entry(key)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(h);
        if h != NULL {
            self.order.push(h);
        }
    }

    fn take(&mut self, key: Key) -> Option<ReqHandle> {
        let q = self.stored.get_mut(&key)?;
        let h = q.pop_front()?;
        if q.is_empty() {
            if let Some(q) = self.stored.remove(&key) {
                // Bounded by the keys in flight at once.
                self.spare.push(q);
            }
        }
        self.order.retain(|&x| x != h);
        Some(h)
    }

    /// Parses one line (number `line_no`) into actions.
    pub(super) fn parse(&mut self, line_no: u64, line: &str) -> Result<(), WorkloadError> {
        // Most lines have a few fields: those stay on the stack.
        let mut few: [&str; 16] = [""; 16];
        let mut many: Vec<&str> = Vec::new();
        let mut n = 0;
        for t in line.split_whitespace() {
            if n < few.len() {
                few[n] = t;
            } else {
                if n == few.len() {
                    many.extend_from_slice(&few);
                }
                many.push(t);
            }
            n += 1;
        }
        let tok: &[&str] = if n <= few.len() { &few[..n] } else { &many };
        let path = Arc::clone(&self.name);
        let f = match tok.first().map(|t| t.parse::<u32>()) {
            // SimGrid skips the lines of other ranks in a per-rank file; they are errors
            // here (a file listed for the wrong rank, or lines lost from another).
            Some(Ok(r)) if r != self.rank => {
                return Err(super::fields::syntax(
                    &path,
                    line_no,
                    format!("a line of rank {r} in the trace of rank {}", self.rank),
                ))
            }
            Some(Ok(_)) if tok.len() >= 2 => Fields::new(&path, line_no, tok),
            _ => {
                return Err(super::fields::syntax(
                    &path,
                    line_no,
                    format!("`{line}`: expected `<rank> <action> ...`"),
                ))
            }
        };
        match f.action {
            "init" => self.dtype = if f.is_empty() { 1 } else { 8 },
            "finalize" => {
                self.queue.push_back(Action::Finalize);
                self.finished = true;
            }
            "comm_size" | "comm_split" | "comm_dup" | "location" => {}
            "compute" => self.queue.push_back(Action::Compute {
                flops: f.amount(0, "flops")?,
            }),
            "sleep" => self.queue.push_back(Action::Sleep {
                secs: f.amount(0, "seconds")?,
            }),
            "send" | "isend" | "recv" | "irecv" | "sendRecv" => self.point_to_point(&f)?,
            "wait" | "test" | "waitall" => self.requests(&f)?,
            action => match Collective::of_ti_action(action) {
                Some(kind) => self.collective(&f, kind)?,
                None => return Err(f.err(format!("unknown action `{action}`"))),
            },
        }
        Ok(())
    }

    /// `send`, `isend`, `recv`, `irecv`, `sendRecv`.
    fn point_to_point(&mut self, f: &Fields) -> Result<(), WorkloadError> {
        let (n, me, d) = (self.size, self.rank, self.dtype);
        match f.action {
            "send" | "isend" => {
                let dst = f.peer(0, "destination", n)?;
                let tag = f.tag(1, false)?;
                let bytes = f.count(2, "size")?.saturating_mul(f.dt(3, d)?);
                let req = if f.action == "isend" {
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
                let src = f.peer(0, "source", n)?;
                let tag = f.tag(1, true)?;
                // A negative size: the receiver probes for it (as SimGrid).
                let size = f.num(2, "size")?;
                let bytes = (size.max(0.0) as u64).saturating_mul(f.dt(3, d)?);
                if size < 0.0 {
                    self.queue.push_back(Action::Probe {
                        src: i64::from(src),
                        tag,
                        comm: 0,
                    });
                }
                let req = if f.action == "irecv" {
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
            _ => self.sendrecv(f)?,
        }
        Ok(())
    }

    /// `sendRecv`: an `Isend`, an `Irecv` and a wait of both.
    fn sendrecv(&mut self, f: &Fields) -> Result<(), WorkloadError> {
        let (n, d) = (self.size, self.dtype);
        if f.len() < 6 {
            return Err(f.err(format!("sendRecv: {} items given, 6 expected", f.len())));
        }
        let sbytes = f.count(0, "send count")?.saturating_mul(f.dt(4, d)?);
        let dst = f.peer(1, "destination", n)?;
        let rbytes = f.count(2, "receive count")?.saturating_mul(f.dt(5, d)?);
        let src = f.peer(3, "source", n)?;
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
        Ok(())
    }

    /// `wait`, `test`, `waitall`.
    fn requests(&mut self, f: &Fields) -> Result<(), WorkloadError> {
        match f.action {
            "wait" => {
                let key = (
                    f.int(0, "source")?,
                    f.int(1, "destination")?,
                    f.int(2, "tag")?,
                );
                // SimGrid refuses a wait only when nothing at all is stored; one of a key
                // with nothing stored (its request caught by a test) does nothing.
                if self.stored.is_empty() {
                    return Err(f.err("wait: not preceded by a matching isend or irecv".into()));
                }
                match self.take(key) {
                    Some(NULL) | None => {}
                    Some(h) => self.queue.push_back(Action::Wait { reqs: vec![h] }),
                }
            }
            "test" => {
                let key = (
                    f.int(0, "source")?,
                    f.int(1, "destination")?,
                    f.int(2, "tag")?,
                );
                // SimGrid takes the oldest request (a null one: nothing to do) and puts
                // it back after the test.
                match self.take(key) {
                    Some(NULL) | None => {}
                    Some(h) => {
                        self.testing = Some((key, h));
                        self.queue.push_back(Action::Test { req: h });
                    }
                }
            }
            _ => {
                let reqs = std::mem::take(&mut self.order);
                self.stored.clear();
                self.queue.push_back(Action::Wait { reqs });
            }
        }
        Ok(())
    }

    /// The arguments of a `kind` call by this rank with nothing else set: root 0, no data,
    /// one-byte datatypes, no per-rank counts.
    fn call(&self, kind: Collective) -> CollArgs {
        CollArgs {
            kind,
            size: self.size,
            rank: self.rank,
            root: 0,
            count: 0,
            recv_count: 0,
            dtype_size: 1,
            recv_dtype_size: 1,
            send_counts: Vec::new(),
            recv_counts: Vec::new(),
        }
    }

    /// A collective action (each with the fields SimGrid 3.32 writes, datatypes last and
    /// optional).
    fn collective(&mut self, f: &Fields, kind: Collective) -> Result<(), WorkloadError> {
        let (n, d) = (self.size, self.dtype);
        let (args, comp) = match kind {
            Collective::Barrier => (self.call(kind), 0.0),
            Collective::Bcast => {
                let c = f.count(0, "size")?;
                let root = f.root_at(1, n)?;
                let s = f.dt(2, d)?;
                (self.same(kind, root, c, c, (s, s)), 0.0)
            }
            Collective::Reduce => {
                let c = f.count(0, "count")?;
                let comp = f.amount(1, "comp")?;
                let root = f.root_at(2, n)?;
                let s = f.dt(3, d)?;
                (self.same(kind, root, c, c, (s, s)), comp)
            }
            Collective::Allreduce | Collective::Scan | Collective::Exscan => {
                let c = f.count(0, "count")?;
                let comp = f.amount(1, "comp")?;
                let s = f.dt(2, d)?;
                (self.same(kind, 0, c, c, (s, s)), comp)
            }
            Collective::Alltoall | Collective::Allgather => {
                let sc = f.count(0, "send count")?;
                let rc = f.count(1, "receive count")?;
                let types = (f.dt(2, d)?, f.dt(3, d)?);
                (self.same(kind, 0, sc, rc, types), 0.0)
            }
            Collective::Gather | Collective::Scatter => {
                let sc = f.count(0, "send count")?;
                let rc = f.count(1, "receive count")?;
                let root = f.root_at(2, n)?;
                let types = (f.dt(3, d)?, f.dt(4, d)?);
                (self.same(kind, root, sc, rc, types), 0.0)
            }
            _ => self.vector_collective(f, kind)?,
        };
        self.queue.push_back(Action::Collective {
            args,
            comm: 0,
            comp_flops: comp,
            req: None,
        });
        Ok(())
    }

    /// A call moving `count` elements of `types.0` bytes and receiving `recv_count` of
    /// `types.1` bytes, rooted at `root`.
    fn same(
        &self,
        kind: Collective,
        root: u32,
        count: u64,
        recv_count: u64,
        types: (u64, u64),
    ) -> CollArgs {
        CollArgs {
            root,
            count,
            recv_count,
            dtype_size: types.0,
            recv_dtype_size: types.1,
            ..self.call(kind)
        }
    }

    /// The collectives with per-rank counts: `alltoallv`, `gatherv`, `scatterv`,
    /// `allgatherv`, `reducescatter`. Returns the call and the flops computed after it.
    fn vector_collective(
        &self,
        f: &Fields,
        kind: Collective,
    ) -> Result<(CollArgs, f64), WorkloadError> {
        let (n, d) = (self.size, self.dtype);
        let nn = n as usize;
        let args = match kind {
            Collective::Alltoallv => {
                let sc = f.counts(1, "send counts", n)?;
                let rc = f.counts(2 + nn, "receive counts", n)?;
                let base = 2 + 2 * nn;
                let types = (f.dt(base, d)?, f.dt(base + 1, d)?);
                CollArgs {
                    send_counts: sc,
                    recv_counts: rc,
                    ..self.same(kind, 0, 0, 0, types)
                }
            }
            Collective::Gatherv => {
                let sc = f.count(0, "send count")?;
                let rc = f.counts(1, "receive counts", n)?;
                let base = 1 + nn;
                let root = f.root_at(base, n)?;
                let types = (f.dt(base + 1, d)?, f.dt(base + 2, d)?);
                CollArgs {
                    recv_counts: rc,
                    ..self.same(kind, root, sc, 0, types)
                }
            }
            Collective::Scatterv => {
                let sc = f.counts(0, "send counts", n)?;
                let rc = f.count(nn, "receive count")?;
                let root = f.root_at(nn + 1, n)?;
                let types = (f.dt(nn + 2, d)?, f.dt(nn + 3, d)?);
                CollArgs {
                    send_counts: sc,
                    ..self.same(kind, root, 0, rc, types)
                }
            }
            Collective::Allgatherv => {
                let sc = f.count(0, "send count")?;
                let rc = f.counts(1, "receive counts", n)?;
                // Total tokens T (with rank and action); datatypes as SimGrid 3.32 finds them.
                let t = f.len() + 2;
                let types = if t > 3 + 2 * nn {
                    (f.dt(1 + nn, d)?, f.dt(2 + nn, d)?)
                } else if t > 5 + nn {
                    (d, d)
                } else {
                    (f.dt(1 + nn, d)?, f.dt(2 + nn, d)?)
                };
                CollArgs {
                    recv_counts: rc,
                    ..self.same(kind, 0, sc, 0, types)
                }
            }
            _ => {
                // reducescatter, the last one.
                let rc = f.counts(0, "receive counts", n)?;
                let comp = f.amount(nn, "comp")?;
                let s = f.dt(nn + 1, d)?;
                let args = CollArgs {
                    recv_counts: rc,
                    ..self.same(kind, 0, 0, 0, (s, s))
                };
                return Ok((args, comp));
            }
        };
        Ok((args, 0.0))
    }
}
