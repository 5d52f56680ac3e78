//! The mpiscope trace format.
//!
//! A traced run is a directory with a `manifest.json` ([`Manifest`]) and one binary file per
//! rank (`rank-00000.mpst`, ...). A rank file is a short header followed by self-checking
//! blocks: an info block ([`RankInfo`]), definition blocks ([`Definition`]), event blocks
//! and, when the rank ended normally, a trailer ([`Trailer`]). Events are delta and varint
//! coded ([`encode`]); the reader ([`RankReader`]) streams them in constant memory and stops
//! cleanly at the first damaged or missing block.
//!
//! This crate is the small stable core that the recorder, the analyses and the simulator
//! share. It knows nothing of MPI libraries: ranks are integers, communicators and
//! operations are ids defined in the file. The byte-level description is `docs/FORMAT.md`.

pub mod block;
pub mod clock;
pub mod decode;
pub mod defs;
pub mod encode;
pub mod event;
pub mod info;
pub mod input;
pub mod manifest;
pub mod reader;
pub mod varint;
pub mod writer;

pub use clock::ClockMap;
pub use defs::{
    CallDef, CallsiteDef, CommDef, CommKind, Definition, Frame, Lang, ModuleDef, OpDef,
};
pub use encode::{BlockEncoder, BurstCpu, RawEvent, RawList, NO_CORE};
pub use event::{
    Args, Completion, Event, List, ListKind, Slot, NO_VALUE, NSLOTS, PEER_ANY, PEER_NULL,
    PEER_ROOT, PEER_UNKNOWN, TAG_ANY,
};
pub use info::{CallTotal, ClockInfo, Note, RankInfo, Trailer};
pub use manifest::{
    rank_file_name, BatchEnd, BatchEndCause, BatchJob, ClockSummary, Manifest, MpiLibrary,
    RankPlacement, RunDir, RunDirError, MANIFEST_FILE,
};
pub use reader::{skim_ending, Ending, RankReader, ReadError, Tables};
pub use writer::RankWriter;

/// The format version as `major.minor`.
pub fn format_version() -> String {
    format!("{}.{}", block::VERSION_MAJOR, block::VERSION_MINOR)
}
