//! The event decoder: the mirror of [`crate::encode::BlockEncoder`].

use crate::encode::{
    BurstCpu, CodecState, F_ARGS, F_CALL, F_CALLSITE, F_CORE, F_LISTS, F_RET, F_SKIP, NO_CORE,
};
use crate::event::{Event, List, ListKind, NSLOTS};
use crate::varint::{self, unzigzag};

/// Decodes the events of one block payload. The payload is passed to each call so that the
/// reader can keep decoder and buffer side by side.
pub struct EventDecoder {
    pos: usize,
    state: CodecState,
    remaining: u32,
    /// List buffers of earlier events, reused.
    spare_lists: Vec<List>,
}

impl EventDecoder {
    /// A decoder for a payload holding `records` events whose first gap is relative to
    /// `base_ticks`.
    pub fn new(records: u32, base_ticks: u64) -> Self {
        EventDecoder {
            pos: 0,
            state: CodecState::new(base_ticks),
            remaining: records,
            spare_lists: Vec::new(),
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

    /// Decodes the next event of `payload` into `out` (times in clock ticks, `thread`
    /// untouched), reusing its list buffers; `None` after the last. The lists of a call for
    /// which `lists(call)` is false are skipped over, not decoded (`out.lists` is then empty).
    /// Errors are short descriptions.
    pub fn next_into(
        &mut self,
        payload: &[u8],
        out: &mut Event,
        lists: impl FnMut(u32) -> bool,
    ) -> Option<Result<(), &'static str>> {
        if self.remaining == 0 {
            return if self.pos == payload.len() {
                None
            } else {
                Some(Err("bytes after the last event"))
            };
        }
        self.remaining -= 1;
        Some(self.decode_into(payload, out, lists))
    }

    #[inline]
    fn decode_into(
        &mut self,
        buf: &[u8],
        out: &mut Event,
        mut lists: impl FnMut(u32) -> bool,
    ) -> Result<(), &'static str> {
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
        // The call's cached arguments are updated in place and copied out once, present
        // slots only. The cache changes only with the arguments (as in the encoder): an
        // event without them leaves another call's entry in place.
        if h & F_ARGS != 0 {
            let present = u32::try_from(u(p)?).map_err(|_| "argument mask out of range")?;
            let changed = u32::try_from(u(p)?).map_err(|_| "argument mask out of range")?;
            if present >> NSLOTS != 0 || changed & !present != 0 {
                return Err("bad argument mask");
            }
            let cached = st.cached_args_mut(call);
            cached.update(present, changed, || u(p).map(unzigzag))?;
            out.args.copy_present(cached);
        } else {
            out.args.copy_present(st.cached_args(call));
        }
        let mut nlists = 0;
        if h & F_LISTS != 0 {
            let n = u(p)? as usize;
            if n > 16 {
                return Err("too many lists in one event");
            }
            let decode = lists(call);
            for _ in 0..n {
                let k = *buf.get(*p).ok_or("truncated list")?;
                *p += 1;
                let kind = ListKind::from_u8(k).ok_or("unknown list kind")?;
                let len = u(p)? as usize;
                if !decode {
                    varint::skip(buf, p, len).map_err(|_| "bad varint in event")?;
                    continue;
                }
                if len > buf.len() - (*p).min(buf.len()) {
                    return Err("list longer than its block");
                }
                if nlists == out.lists.len() {
                    out.lists
                        .push(self.spare_lists.pop().unwrap_or_else(|| List {
                            kind,
                            values: Vec::with_capacity(len),
                        }));
                }
                let list = &mut out.lists[nlists];
                list.kind = kind;
                list.values.clear();
                for _ in 0..len {
                    list.values.push(unzigzag(u(p)?));
                }
                nlists += 1;
            }
        }
        // Lists no longer used keep their buffers for the next events that have lists.
        while out.lists.len() > nlists {
            let spare = out.lists.pop().expect("longer than nlists");
            self.spare_lists.push(spare);
        }
        st.prev_exit = t_exit;
        st.prev_call = call;
        st.prev_callsite = callsite;
        out.call = call;
        out.t_enter = t_enter;
        out.t_exit = t_exit;
        out.callsite = callsite;
        out.core = (st.prev_core != NO_CORE).then_some(st.prev_core);
        out.ret = ret;
        out.skipped = skipped;
        Ok(())
    }
}

/// Decodes the payload of a CPU block holding `records` entries into `out` (cleared first):
/// the index of each entry's event within its events block, increasing, and its burst's CPU
/// time. Errors are short descriptions.
pub fn decode_cpu(
    payload: &[u8],
    records: u32,
    out: &mut Vec<(u32, BurstCpu)>,
) -> Result<(), &'static str> {
    out.clear();
    let mut p = 0;
    let u = |p: &mut usize| varint::get(payload, p).map_err(|_| "bad varint in CPU block");
    let mut index: Option<u32> = None;
    for _ in 0..records {
        let delta = u32::try_from(u(&mut p)?).map_err(|_| "CPU entry index out of range")?;
        let i = match index {
            None => delta,
            Some(_) if delta == 0 => return Err("CPU entries out of order"),
            Some(last) => last
                .checked_add(delta)
                .ok_or("CPU entry index out of range")?,
        };
        let ns = u(&mut p)?;
        let lead_ticks = u(&mut p)?;
        out.push((i, BurstCpu { ns, lead_ticks }));
        index = Some(i);
    }
    if p != payload.len() {
        return Err("bytes after the last CPU entry");
    }
    Ok(())
}
