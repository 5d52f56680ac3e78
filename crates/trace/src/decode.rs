//! The event decoder: the mirror of [`crate::encode::BlockEncoder`].

use crate::encode::{
    CodecState, F_ARGS, F_CALL, F_CALLSITE, F_CORE, F_LISTS, F_RET, F_SKIP, NO_CORE,
};
use crate::event::{Args, List, ListKind, NSLOTS};
use crate::varint::{self, unzigzag};

/// An event with times still in clock ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickEvent {
    /// Call id.
    pub call: u32,
    /// Entry, in ticks.
    pub t_enter: u64,
    /// Exit, in ticks.
    pub t_exit: u64,
    /// Callsite id.
    pub callsite: u32,
    /// Core, if known.
    pub core: Option<u32>,
    /// Return code.
    pub ret: i32,
    /// Unrecorded calls before this one.
    pub skipped: u64,
    /// Fixed arguments.
    pub args: Args,
    /// Vector arguments.
    pub lists: Vec<List>,
}

/// Decodes the events of one block payload. The payload is passed to each call so that the
/// reader can keep decoder and buffer side by side.
pub struct EventDecoder {
    pos: usize,
    state: CodecState,
    remaining: u32,
}

impl EventDecoder {
    /// A decoder for a payload holding `records` events whose first gap is relative to
    /// `base_ticks`.
    pub fn new(records: u32, base_ticks: u64) -> Self {
        EventDecoder {
            pos: 0,
            state: CodecState::new(base_ticks),
            remaining: records,
        }
    }

    /// Restarts for a new block, keeping the allocated cache.
    pub fn restart(&mut self, records: u32, base_ticks: u64) {
        self.pos = 0;
        self.remaining = records;
        self.state.reset(base_ticks);
    }

    /// Offset of the next event within the payload.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next event of `payload`; `None` after the last. Errors are short descriptions.
    pub fn next_event(&mut self, payload: &[u8]) -> Option<Result<TickEvent, &'static str>> {
        if self.remaining == 0 {
            return if self.pos == payload.len() {
                None
            } else {
                Some(Err("bytes after the last event"))
            };
        }
        self.remaining -= 1;
        Some(self.decode_one(payload))
    }

    fn decode_one(&mut self, buf: &[u8]) -> Result<TickEvent, &'static str> {
        let st = &mut self.state;
        let p = &mut self.pos;
        let u = |p: &mut usize| varint::get(buf, p).map_err(|_| "bad varint in event");
        let h = *buf.get(*p).ok_or("truncated event")?;
        *p += 1;
        if h & 0x80 != 0 {
            return Err("unknown event header");
        }
        let call = if h & F_CALL != 0 {
            u32::try_from(u(p)?).map_err(|_| "call id out of range")?
        } else {
            st.prev_call
        };
        let callsite = if h & F_CALLSITE != 0 {
            u32::try_from(u(p)?).map_err(|_| "callsite id out of range")?
        } else {
            st.prev_callsite
        };
        if h & F_CORE != 0 {
            st.prev_core = u32::try_from(u(p)?).map_err(|_| "core out of range")?;
        }
        let ret = if h & F_RET != 0 {
            i32::try_from(unzigzag(u(p)?)).map_err(|_| "return code out of range")?
        } else {
            0
        };
        let skipped = if h & F_SKIP != 0 { u(p)? } else { 0 };
        let gap = u(p)?;
        let dur = u(p)?;
        let t_enter = st.prev_exit.checked_add(gap).ok_or("time overflow")?;
        let t_exit = t_enter.checked_add(dur).ok_or("time overflow")?;
        let args = if h & F_ARGS != 0 {
            let cached = *st.cached_args(call);
            let present = u32::try_from(u(p)?).map_err(|_| "argument mask out of range")?;
            let changed = u32::try_from(u(p)?).map_err(|_| "argument mask out of range")?;
            if present >> NSLOTS != 0 || changed & !present != 0 {
                return Err("bad argument mask");
            }
            let mut a = Args::EMPTY;
            let mut m = present;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let v = if changed & (1 << i) != 0 {
                    cached.raw(i).wrapping_add(unzigzag(u(p)?))
                } else {
                    cached.raw(i)
                };
                a.set_raw(i, v);
            }
            st.store_args(call, &a);
            a
        } else {
            *st.cached_args(call)
        };
        let mut lists = Vec::new();
        if h & F_LISTS != 0 {
            let n = u(p)? as usize;
            if n > 16 {
                return Err("too many lists in one event");
            }
            for _ in 0..n {
                let k = *buf.get(*p).ok_or("truncated list")?;
                *p += 1;
                let kind = ListKind::from_u8(k).ok_or("unknown list kind")?;
                let len = u(p)? as usize;
                if len > buf.len() - (*p).min(buf.len()) {
                    return Err("list longer than its block");
                }
                let mut values = Vec::with_capacity(len);
                for _ in 0..len {
                    values.push(unzigzag(u(p)?));
                }
                lists.push(List { kind, values });
            }
        }
        st.prev_exit = t_exit;
        st.prev_call = call;
        st.prev_callsite = callsite;
        Ok(TickEvent {
            call,
            t_enter,
            t_exit,
            callsite,
            core: (st.prev_core != NO_CORE).then_some(st.prev_core),
            ret,
            skipped,
            args,
            lists,
        })
    }
}
