//! The decoded form of one traced call.
//!
//! An [`Event`] is what the reader hands out: which call, when it entered and left, where
//! it was called from, and its normalized arguments. Arguments live in fixed [`Slot`]s so the
//! encoder can compare them with the previous call of the same function in a few word
//! compares, and in variable-length [`List`]s for vector arguments (per-peer counts,
//! request arrays, completions).
//!
//! The slots speak of peers, tags, communicators and datatypes because that is what message
//! passing is made of, but nothing here depends on an MPI library: ranks are plain integers
//! (world ranks), communicators and operations are small ids defined in the same trace.

/// A peer value meaning "any source" (a wildcard receive or probe).
pub const PEER_ANY: i64 = -1;
/// A peer value meaning "no process" (the null process: the operation is a no-op).
pub const PEER_NULL: i64 = -2;
/// A root value meaning "this process is the root" of an intercommunicator collective.
pub const PEER_ROOT: i64 = -3;
/// A tag value meaning "any tag".
pub const TAG_ANY: i64 = -1;
/// A rank that could not be translated to a world rank (unknown communicator).
pub const PEER_UNKNOWN: i64 = -4;

/// One fixed argument slot. The numbering is part of the file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Slot {
    /// Destination or source of a point-to-point call, as a world rank (or a `PEER_*` value).
    Peer = 0,
    /// Message tag (or [`TAG_ANY`]).
    Tag = 1,
    /// Communicator id, defined by a [`crate::CommDef`] in the same file.
    Comm = 2,
    /// Element count of the (send) buffer.
    Count = 3,
    /// Size in bytes of one element of the (send) datatype.
    DtypeSize = 4,
    /// Bytes in the (send) buffer: count times datatype size (summed over peers for vectors).
    Bytes = 5,
    /// Source of the receive half of a combined call (sendrecv), as a world rank.
    RecvPeer = 6,
    /// Tag of the receive half of a combined call.
    RecvTag = 7,
    /// Element count of the receive buffer.
    RecvCount = 8,
    /// Size in bytes of one element of the receive datatype.
    RecvDtypeSize = 9,
    /// Bytes in the receive buffer.
    RecvBytes = 10,
    /// Root of a rooted collective, as a world rank (or [`PEER_ROOT`] / [`PEER_NULL`]).
    Root = 11,
    /// Reduction operation id (see [`crate::op_name`]).
    Op = 12,
    /// Id of the request this call created, started or completed.
    Request = 13,
    /// Completion status: source as a world rank.
    StatusSource = 14,
    /// Completion status: tag.
    StatusTag = 15,
    /// Completion status: bytes received.
    StatusBytes = 16,
    /// Communicator id this call created.
    NewComm = 17,
    /// Boolean result of a test or probe (0 or 1).
    Flag = 18,
    /// Index result (`Waitany`, `Testany`) or count result (`Waitsome`).
    Index = 19,
    /// Value returned by a user plugin's post-call hook.
    User = 20,
    /// Thread support level (requested or provided) or a `Pcontrol` level.
    Level = 21,
    /// Number of elements in an array argument (requests of a `Waitall`, ...).
    ArrayLen = 22,
}

/// Number of slots.
pub const NSLOTS: usize = 23;

impl Slot {
    /// Every slot, in numbering order.
    pub const ALL: [Slot; NSLOTS] = [
        Slot::Peer,
        Slot::Tag,
        Slot::Comm,
        Slot::Count,
        Slot::DtypeSize,
        Slot::Bytes,
        Slot::RecvPeer,
        Slot::RecvTag,
        Slot::RecvCount,
        Slot::RecvDtypeSize,
        Slot::RecvBytes,
        Slot::Root,
        Slot::Op,
        Slot::Request,
        Slot::StatusSource,
        Slot::StatusTag,
        Slot::StatusBytes,
        Slot::NewComm,
        Slot::Flag,
        Slot::Index,
        Slot::User,
        Slot::Level,
        Slot::ArrayLen,
    ];

    /// The short name used by `mpiscope dump`.
    pub fn name(self) -> &'static str {
        match self {
            Slot::Peer => "peer",
            Slot::Tag => "tag",
            Slot::Comm => "comm",
            Slot::Count => "count",
            Slot::DtypeSize => "dtsize",
            Slot::Bytes => "bytes",
            Slot::RecvPeer => "rpeer",
            Slot::RecvTag => "rtag",
            Slot::RecvCount => "rcount",
            Slot::RecvDtypeSize => "rdtsize",
            Slot::RecvBytes => "rbytes",
            Slot::Root => "root",
            Slot::Op => "op",
            Slot::Request => "req",
            Slot::StatusSource => "st.src",
            Slot::StatusTag => "st.tag",
            Slot::StatusBytes => "st.bytes",
            Slot::NewComm => "newcomm",
            Slot::Flag => "flag",
            Slot::Index => "index",
            Slot::User => "user",
            Slot::Level => "level",
            Slot::ArrayLen => "n",
        }
    }

    /// The slot with number `i`.
    pub fn from_index(i: usize) -> Option<Slot> {
        Slot::ALL.get(i).copied()
    }
}

/// Fixed-size normalized arguments: a presence mask and one value per slot.
///
/// Values of absent slots are unspecified (clearing is only the mask, which keeps the
/// recorder's per-call reset cheap); equality and every accessor look at present slots only.
#[derive(Debug, Clone, Copy, Default)]
pub struct Args {
    present: u32,
    /// Room for 32 slots so that any 5-bit index is in bounds without a check.
    vals: [i64; 32],
}

impl Args {
    /// No argument recorded.
    pub const EMPTY: Args = Args {
        present: 0,
        vals: [0; 32],
    };

    /// Sets a slot.
    #[inline]
    pub fn set(&mut self, slot: Slot, v: i64) {
        self.present |= 1 << slot as u32;
        // A volatile store: with a plain one, rustc 1.95 (LLVM) compiled the recorder's
        // `set(Flag, f); if f { .. }` so that the flag's value was never stored when `f` was
        // true (MPI_Test recorded flag=0 with a completion; caught by the end-to-end tests in
        // release builds). The store costs the same; only store merging is lost.
        // SAFETY: a valid, aligned element of `vals`.
        unsafe { core::ptr::write_volatile(&mut self.vals[(slot as usize) & 31], v) };
    }

    /// Clears every slot.
    #[inline]
    pub fn reset(&mut self) {
        self.present = 0;
    }

    /// Removes a slot.
    #[inline]
    pub fn clear(&mut self, slot: Slot) {
        self.present &= !(1 << slot as u32);
        self.vals[(slot as usize) & 31] = 0;
    }

    /// The value of a slot, if recorded.
    #[inline]
    pub fn get(&self, slot: Slot) -> Option<i64> {
        (self.present & (1 << slot as u32) != 0).then(|| self.vals[(slot as usize) & 31])
    }

    /// Bit `i` set when slot `i` is present.
    #[inline]
    pub fn present_mask(&self) -> u32 {
        self.present
    }

    /// Value of slot number `i`, zero when absent.
    #[inline]
    pub fn raw(&self, i: usize) -> i64 {
        if self.present & (1 << (i & 31)) != 0 {
            self.vals[i & 31]
        } else {
            0
        }
    }

    /// Makes these the present slots of `from`, copying only their values (cheaper than a
    /// copy of the whole array when few slots are present).
    #[inline]
    pub(crate) fn copy_present(&mut self, from: &Args) {
        self.present = from.present;
        let mut m = from.present;
        while m != 0 {
            let i = (m.trailing_zeros() & 31) as usize;
            m &= m - 1;
            self.vals[i] = from.vals[i];
        }
    }

    /// Applies an encoded argument update in place: the present slots become `present`, and
    /// slot `i` of `changed` gets its previous value (0 if it was absent) plus `delta(i)`.
    #[inline]
    pub(crate) fn update<E>(
        &mut self,
        present: u32,
        changed: u32,
        mut delta: impl FnMut() -> Result<i64, E>,
    ) -> Result<(), E> {
        let old = self.present;
        let mut m = present;
        while m != 0 {
            let i = (m.trailing_zeros() & 31) as usize;
            m &= m - 1;
            let base = if old & (1 << i) != 0 { self.vals[i] } else { 0 };
            self.vals[i] = if changed & (1 << i) != 0 {
                base.wrapping_add(delta()?)
            } else {
                base
            };
        }
        self.present = present;
        Ok(())
    }

    /// Present slots and their values, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, i64)> + '_ {
        Slot::ALL
            .iter()
            .filter_map(move |&s| self.get(s).map(|v| (s, v)))
    }

    /// Same present slots with the same values (compares only the present slots, without
    /// an early exit: the loop is as predictable as the mask).
    #[inline(always)]
    pub fn same_as(&self, other: &Args) -> bool {
        if self.present != other.present {
            return false;
        }
        let mut diff = 0u64;
        let mut m = self.present;
        while m != 0 {
            let i = (m.trailing_zeros() & 31) as usize;
            m &= m - 1;
            diff |= (self.vals[i] ^ other.vals[i]) as u64;
        }
        diff == 0
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.present == 0
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.same_as(other)
    }
}

impl Eq for Args {}

/// What a variable-length list holds. The numbering is part of the file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ListKind {
    /// Per-peer element counts of the send side (v-collectives), in communicator rank order.
    SendCounts = 0,
    /// Per-peer element counts of the receive side.
    RecvCounts = 1,
    /// Ids of the requests passed in an array argument, in array order (0 for a null request).
    Requests = 2,
    /// Completions: four values per completed request: request id, source (world rank),
    /// tag, bytes received (source, tag and bytes are [`NO_VALUE`] for sends).
    Completions = 3,
    /// Indices returned by `Waitsome` / `Testsome`.
    Indices = 4,
    /// Per-peer send datatype sizes (`Alltoallw`).
    SendTypeSizes = 5,
    /// Per-peer receive datatype sizes (`Alltoallw`).
    RecvTypeSizes = 6,
    /// Program-specific values (plugins).
    User = 7,
}

/// Filler in a completion for a field that does not apply (the status of a send).
pub const NO_VALUE: i64 = i64::MIN;

impl ListKind {
    /// The list kind numbered `k`.
    pub fn from_u8(k: u8) -> Option<ListKind> {
        Some(match k {
            0 => ListKind::SendCounts,
            1 => ListKind::RecvCounts,
            2 => ListKind::Requests,
            3 => ListKind::Completions,
            4 => ListKind::Indices,
            5 => ListKind::SendTypeSizes,
            6 => ListKind::RecvTypeSizes,
            7 => ListKind::User,
            _ => return None,
        })
    }

    /// The short name used by `mpiscope dump`.
    pub fn name(self) -> &'static str {
        match self {
            ListKind::SendCounts => "scounts",
            ListKind::RecvCounts => "rcounts",
            ListKind::Requests => "reqs",
            ListKind::Completions => "done",
            ListKind::Indices => "indices",
            ListKind::SendTypeSizes => "stsizes",
            ListKind::RecvTypeSizes => "rtsizes",
            ListKind::User => "user",
        }
    }
}

/// A variable-length argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List {
    /// What the values mean.
    pub kind: ListKind,
    /// The values.
    pub values: Vec<i64>,
}

/// One completed request, decoded from a [`ListKind::Completions`] list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Request id (as created by the call that started it).
    pub request: i64,
    /// Source world rank, for receives.
    pub source: Option<i64>,
    /// Tag, for receives.
    pub tag: Option<i64>,
    /// Bytes received, for receives.
    pub bytes: Option<i64>,
}

/// One traced call, as decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// Thread index within the rank (0 is the thread that initialized MPI).
    pub thread: u16,
    /// Call id, defined by a [`crate::CallDef`] in the same file.
    pub call: u32,
    /// Entry time, nanoseconds since the run's epoch.
    pub t_enter: u64,
    /// Exit time, nanoseconds since the run's epoch.
    pub t_exit: u64,
    /// Callsite id (0: unknown), defined by a [`crate::CallsiteDef`].
    pub callsite: u32,
    /// CPU core the call ran on, when known.
    pub core: Option<u32>,
    /// Return code (0 is success).
    pub ret: i32,
    /// Calls of this function on this thread that were not recorded (sampling, time window)
    /// since the previous recorded one.
    pub skipped: u64,
    /// Fixed arguments.
    pub args: Args,
    /// Vector arguments.
    pub lists: Vec<List>,
    /// The thread's CPU time, in nanoseconds, over the compute burst before this call (from
    /// the previous call's exit on this thread to this call's entry), when the recorder
    /// measured it (format 1.2, long bursts only; see `docs/FORMAT.md`). Less than the
    /// burst's wall time when the thread waited for a core.
    pub cpu_ns: Option<u64>,
    /// The thread was still inside this call when its record ended (a signal, `MPI_Abort`,
    /// a hang): `t_exit` is the moment of the record, not a return, and outputs (statuses,
    /// new requests) are absent.
    pub unfinished: bool,
}

impl Event {
    /// Duration in nanoseconds.
    pub fn duration(&self) -> u64 {
        self.t_exit.saturating_sub(self.t_enter)
    }

    /// The list of a kind, if present.
    pub fn list(&self, kind: ListKind) -> Option<&[i64]> {
        self.lists
            .iter()
            .find(|l| l.kind == kind)
            .map(|l| l.values.as_slice())
    }

    /// The requests the call names: its [`ListKind::Requests`] list (`Startall`,
    /// `Waitall`, ...) or its `Request` slot.
    pub fn requests(&self) -> Vec<i64> {
        match self.list(ListKind::Requests) {
            Some(list) => list.to_vec(),
            None => self.args.get(Slot::Request).into_iter().collect(),
        }
    }

    /// Completed requests, from the [`ListKind::Completions`] list or, for single-request
    /// completions, from the `Request` and `Status*` slots. Only meaningful for completion
    /// calls (`Wait`, `Test`, ...): for a call that starts a request, the `Request` slot names
    /// the request it created.
    pub fn completions(&self) -> Vec<Completion> {
        let opt = |v: i64| (v != NO_VALUE).then_some(v);
        if let Some(vals) = self.list(ListKind::Completions) {
            return vals
                .chunks_exact(4)
                .map(|c| Completion {
                    request: c[0],
                    source: opt(c[1]),
                    tag: opt(c[2]),
                    bytes: opt(c[3]),
                })
                .collect();
        }
        match self.args.get(Slot::Request) {
            Some(request) => vec![Completion {
                request,
                source: self.args.get(Slot::StatusSource),
                tag: self.args.get(Slot::StatusTag),
                bytes: self.args.get(Slot::StatusBytes),
            }],
            _ => Vec::new(),
        }
    }
}
