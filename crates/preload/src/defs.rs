//! Definitions: what the ids in events mean (calls, communicators, operations, callsites),
//! written to the rank file before any event that uses them.
//!
//! Before the rank file exists (between the library's load and the end of `MPI_Init`),
//! definitions are kept and written by [`write_kept`] when it opens; a call id is kept as a
//! bit, every other definition as itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use mpiscope_trace::{block, CallDef, Definition, Lang, OpDef};

use crate::calls::{self, FORTRAN_BASE, NCALLS};
use crate::clock;
use crate::sink;
use crate::status::{self, State};

static CALLS_DEFINED: [AtomicU64; NCALLS.div_ceil(64)] =
    [const { AtomicU64::new(0) }; NCALLS.div_ceil(64)];
static PENDING: Mutex<Vec<Definition>> = Mutex::new(Vec::new());
static DEFINE_CALL: Mutex<()> = Mutex::new(());

fn call_def(call: u32) -> Definition {
    Definition::Call(CallDef {
        id: call,
        name: calls::name(call).into(),
        lang: if call >= FORTRAN_BASE {
            Lang::Fortran
        } else {
            Lang::C
        },
    })
}

/// Writes definitions now, or keeps them until the rank file exists.
pub fn define(defs: &[Definition]) {
    if defs.is_empty() {
        return;
    }
    if !sink::is_open() {
        if status::state() != State::Stopped {
            PENDING
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(defs.iter().cloned());
        }
        return;
    }
    let mut payload = Vec::new();
    for d in defs {
        d.encode(&mut payload);
    }
    let framed = block::frame(
        block::BlockKind::Definitions,
        0,
        defs.len() as u32,
        clock::pair(),
        &payload,
    );
    sink::write_block(&framed, 0);
}

/// Defines a call id on first use. The bit is set only once the definition is in the file
/// (or, before the file exists, once [`write_kept`] is sure to write it), so that no thread
/// can flush an event of this call before its definition.
pub fn define_call(call: u32) {
    let (w, b) = (call as usize / 64, call % 64);
    let Some(word) = CALLS_DEFINED.get(w) else {
        return;
    };
    if word.load(Ordering::Acquire) & (1 << b) != 0 {
        return;
    }
    let _g = DEFINE_CALL.lock().unwrap_or_else(|p| p.into_inner());
    if word.load(Ordering::Acquire) & (1 << b) != 0 {
        return;
    }
    if sink::is_open() {
        define(&[call_def(call)]);
    }
    // Before the file exists, `write_kept` writes every call whose bit is set.
    word.fetch_or(1 << b, Ordering::AcqRel);
}

/// Writes the definitions made before the rank file existed: calls first, then the rest.
pub(crate) fn write_kept() {
    let _g = DEFINE_CALL.lock().unwrap_or_else(|p| p.into_inner());
    let mut defs: Vec<Definition> = Vec::new();
    for (w, word) in CALLS_DEFINED.iter().enumerate() {
        let bits = word.load(Ordering::Relaxed);
        defs.extend(
            (0..64)
                .filter(|b| bits & (1 << b) != 0)
                .map(|b| call_def((w * 64 + b) as u32)),
        );
    }
    defs.extend(std::mem::take(
        &mut *PENDING.lock().unwrap_or_else(|p| p.into_inner()),
    ));
    define(&defs);
}

/// Defines a communicator.
pub fn define_comm(d: mpiscope_trace::CommDef) {
    define(&[Definition::Comm(d)]);
}

/// Defines an operation.
pub fn define_op(id: u32, name: &str) {
    define(&[Definition::Op(OpDef {
        id,
        name: name.into(),
    })]);
}
