//! The event encoder: packs events into one block with delta and varint coding.
//!
//! This runs on the hot path of the preload library, so it never allocates after
//! construction, never panics on valid input, and keeps its state small:
//!
//! * times are written as two varints: the gap since the previous event's exit (the compute
//!   burst) and the call's duration, both in clock ticks;
//! * the call id, callsite, core and return code are written only when they differ from the
//!   previous event of the block;
//! * arguments are compared with the last arguments seen for the same call (a 64-entry
//!   direct-mapped cache) and only the changed slots are written, as zigzag deltas.
//!
//! A repeated call with unchanged arguments (a polling `Iprobe`) costs three bytes plus the
//! size of its two time varints. The decoder in [`crate::decode`] mirrors this state exactly.
//!
//! An encoder made by [`BlockEncoder::with_cpu`] also keeps, in a region of its buffer
//! before the events block, the CPU time of the compute bursts that events carry
//! ([`BurstCpu`]): sealed, that region becomes a CPU block written just before the events
//! block, in the same bytes, so the pair reaches the file together. Readers older than 1.2
//! skip the CPU block by its length and read the events as before.

use crate::block::{block_crc, BlockHeader, BlockKind, BLOCK_HEADER_LEN};
use crate::event::{Args, ListKind, NSLOTS};
use crate::varint::{self, zigzag, MAX_VARINT_LEN};

/// Event header flag: a call id follows.
pub(crate) const F_CALL: u8 = 0x01;
/// Event header flag: an argument section follows.
pub(crate) const F_ARGS: u8 = 0x02;
/// Event header flag: a callsite id follows.
pub(crate) const F_CALLSITE: u8 = 0x04;
/// Event header flag: a core number follows.
pub(crate) const F_CORE: u8 = 0x08;
/// Event header flag: a non-zero return code follows.
pub(crate) const F_RET: u8 = 0x10;
/// Event header flag: a count of skipped calls follows.
pub(crate) const F_SKIP: u8 = 0x20;
/// Event header flag: a list section follows.
pub(crate) const F_LISTS: u8 = 0x40;

/// Entries in the per-call argument cache.
pub(crate) const ARG_CACHE: usize = 64;
/// Core value meaning "not known".
pub const NO_CORE: u32 = u32::MAX;

/// The thread's CPU time over the compute burst before a call, as the recorder measured it.
///
/// The recorder reads the thread's CPU clock at a call's entry when the burst before it is
/// long (a clock read is a system call, too dear for every call) and keeps a reference
/// reading from at most that long before the burst started: `ns` is the CPU time from the
/// reference to the entry, `lead_ticks` how long before the burst's start (the previous
/// call's exit) the reference was read (0: exactly at it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurstCpu {
    /// CPU nanoseconds of the thread from the reference reading to the call's entry.
    pub ns: u64,
    /// Clock ticks from the reference reading to the previous call's exit.
    pub lead_ticks: u64,
}

/// A variable-length argument borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub struct RawList<'a> {
    /// What the values are.
    pub kind: ListKind,
    /// The values.
    pub values: &'a [i64],
}

/// An event as the recorder sees it: raw clock ticks, borrowed arguments.
#[derive(Debug, Clone, Copy)]
pub struct RawEvent<'a> {
    /// Call id.
    pub call: u32,
    /// Entry time in clock ticks.
    pub t_enter: u64,
    /// Exit time in clock ticks.
    pub t_exit: u64,
    /// Callsite id (0 unknown).
    pub callsite: u32,
    /// Core number or [`NO_CORE`]; `NO_CORE` means "unchanged / not read this time".
    pub core: u32,
    /// Return code.
    pub ret: i32,
    /// Unrecorded calls of this function since the last recorded one.
    pub skipped: u64,
    /// Fixed arguments.
    pub args: &'a Args,
    /// Vector arguments.
    pub lists: &'a [RawList<'a>],
    /// CPU time of the burst before the call, when measured (kept only by an encoder made
    /// with [`BlockEncoder::with_cpu`]).
    pub cpu: Option<BurstCpu>,
}

impl RawEvent<'_> {
    /// An upper bound on the encoded size of this event.
    #[inline]
    pub fn max_encoded_len(&self) -> usize {
        // header + call + callsite + core + ret + skip + gap + dur
        let fixed = 1 + 5 + 5 + 5 + 10 + 10 + 10 + 10;
        let args = 5 + 5 + NSLOTS * MAX_VARINT_LEN;
        let lists = if self.lists.is_empty() {
            0
        } else {
            5 + self
                .lists
                .iter()
                .map(|l| 1 + 5 + l.values.len() * MAX_VARINT_LEN)
                .sum::<usize>()
        };
        fixed + args + lists
    }
}

/// State shared by encoder and decoder: what the previous event of the block looked like.
#[derive(Clone)]
pub(crate) struct CodecState {
    pub prev_exit: u64,
    pub prev_call: u32,
    pub prev_callsite: u32,
    pub prev_core: u32,
    /// Per-call argument cache, indexed by `call % ARG_CACHE`: (call id + 1, args); 0 = empty.
    pub cache: Box<[(u32, Args); ARG_CACHE]>,
}

impl CodecState {
    pub fn new(base_ticks: u64) -> Self {
        CodecState {
            prev_exit: base_ticks,
            prev_call: 0,
            prev_callsite: 0,
            prev_core: NO_CORE,
            cache: Box::new([(0, Args::EMPTY); ARG_CACHE]),
        }
    }

    pub fn reset(&mut self, base_ticks: u64) {
        self.prev_exit = base_ticks;
        self.prev_call = 0;
        self.prev_callsite = 0;
        self.prev_core = NO_CORE;
        for e in self.cache.iter_mut() {
            e.0 = 0;
        }
    }

    /// The cached arguments of `call` (empty on a miss).
    #[inline]
    pub fn cached_args(&self, call: u32) -> &Args {
        let e = &self.cache[call as usize % ARG_CACHE];
        if e.0 == call.wrapping_add(1) {
            &e.1
        } else {
            &Args::EMPTY
        }
    }

    /// The cached arguments of `call`, for updating in place (emptied on a miss, which
    /// evicts the entry's previous call).
    #[inline]
    pub fn cached_args_mut(&mut self, call: u32) -> &mut Args {
        let e = &mut self.cache[call as usize % ARG_CACHE];
        if e.0 != call.wrapping_add(1) {
            e.0 = call.wrapping_add(1);
            e.1.reset();
        }
        &mut e.1
    }

    #[inline]
    pub fn store_args(&mut self, call: u32, args: &Args) {
        let e = &mut self.cache[call as usize % ARG_CACHE];
        e.0 = call.wrapping_add(1);
        e.1 = *args;
    }
}

/// Most bytes one CPU entry takes: event index delta, CPU ns, lead ticks.
const CPU_ENTRY_MAX: usize = 3 * MAX_VARINT_LEN;

/// Builds one event block in a buffer allocated once.
///
/// The buffer is `[CPU block header][CPU entries: cpu_room bytes][events block header][events]`
/// (no CPU part without [`BlockEncoder::with_cpu`]): CPU entries grow from the start of
/// their region, and sealing moves them (a few bytes) up against the events header.
pub struct BlockEncoder {
    buf: Box<[u8]>,
    /// Where the events block starts in `buf` (0 without a CPU region).
    ev0: usize,
    pos: usize,
    records: u32,
    thread: u16,
    base_ticks: u64,
    state: CodecState,
    /// Bytes of CPU entries written (they start at `BLOCK_HEADER_LEN`).
    cpu_len: usize,
    /// CPU entries written.
    cpu_records: u32,
    /// Index of the event of the last CPU entry.
    cpu_last: u32,
    /// Sealed: the entries were moved against the events block (a push with a CPU time
    /// then waits for [`BlockEncoder::clear`]).
    cpu_moved: bool,
}

impl BlockEncoder {
    /// An encoder whose blocks hold at most `capacity` bytes (header included).
    pub fn new(capacity: usize, thread: u16) -> Self {
        BlockEncoder::make(capacity, 0, thread)
    }

    /// As [`BlockEncoder::new`], keeping the CPU time of bursts ([`RawEvent::cpu`]) in a CPU
    /// block of at most `capacity / 16` bytes written with each events block.
    pub fn with_cpu(capacity: usize, thread: u16) -> Self {
        let capacity = capacity.max(BLOCK_HEADER_LEN + 512);
        BlockEncoder::make(capacity, BLOCK_HEADER_LEN + capacity / 16, thread)
    }

    fn make(capacity: usize, cpu_region: usize, thread: u16) -> Self {
        let capacity = capacity.max(BLOCK_HEADER_LEN + 512);
        BlockEncoder {
            buf: vec![0u8; cpu_region + capacity].into_boxed_slice(),
            ev0: cpu_region,
            pos: cpu_region + BLOCK_HEADER_LEN,
            records: 0,
            thread,
            base_ticks: 0,
            state: CodecState::new(0),
            cpu_len: 0,
            cpu_records: 0,
            cpu_last: 0,
            cpu_moved: false,
        }
    }

    /// Block capacity in bytes, header included (of the events block).
    pub fn capacity(&self) -> usize {
        self.buf.len() - self.ev0
    }

    /// Events in the current block.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// True when the block holds no event.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Bytes used so far, header included (of the events block).
    pub fn len(&self) -> usize {
        self.pos - self.ev0
    }

    /// Would `ev` fit in an empty block of this encoder?
    pub fn fits_empty(&self, ev: &RawEvent) -> bool {
        BLOCK_HEADER_LEN + ev.max_encoded_len() <= self.capacity()
    }

    /// Appends `ev`; returns false (and writes nothing) when it might not fit.
    ///
    /// The repeated-call case is small and inlined into the caller; the rest is not.
    #[inline(always)]
    pub fn push(&mut self, ev: &RawEvent) -> bool {
        // The hot case: the same call as the previous event, from the same place, with the
        // same arguments (a polling loop). One header byte and the two time varints.
        let st = &mut self.state;
        if self.records != 0
            && ev.call == st.prev_call
            && ev.callsite == st.prev_callsite
            && (ev.core == NO_CORE || ev.core == st.prev_core)
            && ev.ret == 0
            && ev.skipped == 0
            && ev.lists.is_empty()
            && ev.cpu.is_none()
            && self.buf.len() - self.pos > 2 * MAX_VARINT_LEN
            && st.cached_args(ev.call).same_as(ev.args)
        {
            let gap = ev.t_enter.saturating_sub(st.prev_exit);
            let t_exit = ev.t_exit.max(st.prev_exit + gap);
            let buf = &mut self.buf[..];
            let mut p = self.pos;
            buf[p] = 0;
            // SAFETY: room for the header and two varints was checked above.
            unsafe {
                p = varint::put_unchecked(buf, p + 1, gap);
                p = varint::put_unchecked(buf, p, t_exit - (st.prev_exit + gap));
            }
            st.prev_exit = t_exit;
            self.pos = p;
            self.records += 1;
            return true;
        }
        self.push_general(ev)
    }

    #[inline(never)]
    fn push_general(&mut self, ev: &RawEvent) -> bool {
        if self.buf.len() - self.pos < ev.max_encoded_len() {
            return false;
        }
        let keep_cpu = ev.cpu.filter(|_| self.ev0 != 0);
        if keep_cpu.is_some()
            && (self.cpu_moved || self.ev0 - BLOCK_HEADER_LEN - self.cpu_len < CPU_ENTRY_MAX)
        {
            return false;
        }
        if self.records == 0 {
            self.base_ticks = ev.t_enter;
            self.state.reset(ev.t_enter);
        }
        if let Some(c) = keep_cpu {
            let buf = &mut self.buf[..];
            let mut p = BLOCK_HEADER_LEN + self.cpu_len;
            let delta = if self.cpu_records == 0 {
                self.records
            } else {
                self.records - self.cpu_last
            };
            p = varint::put(buf, p, u64::from(delta));
            p = varint::put(buf, p, c.ns);
            p = varint::put(buf, p, c.lead_ticks);
            self.cpu_len = p - BLOCK_HEADER_LEN;
            self.cpu_records += 1;
            self.cpu_last = self.records;
        }
        let st = &mut self.state;
        let buf = &mut self.buf[..];
        let hpos = self.pos;
        let mut p = hpos + 1;
        let mut h = 0u8;
        if ev.call != st.prev_call || self.records == 0 {
            h |= F_CALL;
            p = varint::put(buf, p, u64::from(ev.call));
        }
        if ev.callsite != st.prev_callsite {
            h |= F_CALLSITE;
            p = varint::put(buf, p, u64::from(ev.callsite));
        }
        if ev.core != NO_CORE && ev.core != st.prev_core {
            h |= F_CORE;
            p = varint::put(buf, p, u64::from(ev.core));
            st.prev_core = ev.core;
        }
        if ev.ret != 0 {
            h |= F_RET;
            p = varint::put(buf, p, zigzag(i64::from(ev.ret)));
        }
        if ev.skipped != 0 {
            h |= F_SKIP;
            p = varint::put(buf, p, ev.skipped);
        }
        let gap = ev.t_enter.saturating_sub(st.prev_exit);
        let t_exit = ev.t_exit.max(st.prev_exit + gap);
        p = varint::put(buf, p, gap);
        p = varint::put(buf, p, t_exit - (st.prev_exit + gap));
        let cached = st.cached_args(ev.call);
        if !cached.same_as(ev.args) {
            h |= F_ARGS;
            let present = ev.args.present_mask();
            let mut changed = 0u32;
            let mut m = present;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                if ev.args.raw(i) != cached.raw(i) {
                    changed |= 1 << i;
                }
            }
            p = varint::put(buf, p, u64::from(present));
            p = varint::put(buf, p, u64::from(changed));
            let mut m = changed;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                p = varint::put(buf, p, zigzag(ev.args.raw(i).wrapping_sub(cached.raw(i))));
            }
            st.store_args(ev.call, ev.args);
        }
        if !ev.lists.is_empty() {
            h |= F_LISTS;
            p = varint::put(buf, p, ev.lists.len() as u64);
            for l in ev.lists {
                buf[p] = l.kind as u8;
                p += 1;
                p = varint::put(buf, p, l.values.len() as u64);
                for &v in l.values {
                    p = varint::put(buf, p, zigzag(v));
                }
            }
        }
        buf[hpos] = h;
        st.prev_exit = t_exit;
        st.prev_call = ev.call;
        st.prev_callsite = ev.callsite;
        self.pos = p;
        self.records += 1;
        true
    }

    /// Writes the block header (with the given clock pair) and returns the whole block,
    /// preceded by its CPU block when events carry CPU times.
    ///
    /// The encoder is ready for a new block once the caller calls [`BlockEncoder::clear`].
    pub fn seal(&mut self, sync_ticks: u64, sync_ns: u64) -> &[u8] {
        self.seal_as(BlockKind::Events, sync_ticks, sync_ns)
    }

    /// As [`BlockEncoder::seal`], for a block of another kind in the events encoding
    /// ([`BlockKind::Open`]: calls still in progress).
    pub fn seal_as(&mut self, kind: BlockKind, sync_ticks: u64, sync_ns: u64) -> &[u8] {
        let (ev0, pos) = (self.ev0, self.pos);
        let mut hdr = BlockHeader {
            kind,
            thread: self.thread,
            payload_len: (pos - ev0 - BLOCK_HEADER_LEN) as u32,
            records: self.records,
            base_ticks: self.base_ticks,
            sync_ticks,
            sync_ns,
            crc: 0,
        };
        let (head, payload) = self.buf[ev0..].split_at_mut(BLOCK_HEADER_LEN);
        hdr.write_fields(head);
        let crc = block_crc(head, &payload[..pos - ev0 - BLOCK_HEADER_LEN]);
        head[40..44].copy_from_slice(&crc.to_le_bytes());
        if self.cpu_records == 0 {
            return &self.buf[ev0..pos];
        }
        // The CPU entries, moved up against the events block, behind their own header.
        let len = self.cpu_len;
        let start = ev0 - BLOCK_HEADER_LEN - len;
        if !self.cpu_moved {
            self.buf
                .copy_within(BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + len, ev0 - len);
        }
        hdr.kind = BlockKind::Cpu;
        hdr.payload_len = len as u32;
        hdr.records = self.cpu_records;
        let (head, payload) = self.buf[start..ev0].split_at_mut(BLOCK_HEADER_LEN);
        hdr.write_fields(head);
        let crc = block_crc(head, payload);
        head[40..44].copy_from_slice(&crc.to_le_bytes());
        self.cpu_moved = true;
        &self.buf[start..pos]
    }

    /// Entry ticks of the block's first event (meaningful while the block is not empty).
    #[inline(always)]
    pub fn base_ticks(&self) -> u64 {
        self.base_ticks
    }

    /// Sets the thread index written in the headers of later blocks.
    pub fn set_thread(&mut self, thread: u16) {
        self.thread = thread;
    }

    /// Starts a new, empty block.
    pub fn clear(&mut self) {
        self.pos = self.ev0 + BLOCK_HEADER_LEN;
        self.records = 0;
        self.cpu_len = 0;
        self.cpu_records = 0;
        self.cpu_last = 0;
        self.cpu_moved = false;
    }
}
