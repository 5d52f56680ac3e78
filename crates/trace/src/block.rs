//! File and block headers: the framing that lets a reader find, check and skip blocks.
//!
//! A rank file is a 16-byte file header followed by blocks. Each block is a 44-byte header
//! and a payload; the header carries the payload length and a CRC-32 of header and payload,
//! so a file cut anywhere (a rank killed with SIGKILL, a full disk) reads up to its last
//! complete block. See `docs/FORMAT.md` for the byte-level description.

/// First eight bytes of every rank file.
pub const FILE_MAGIC: [u8; 8] = *b"MPSTRACE";
/// Major version: readers refuse files with another major version.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version: additions that old readers can skip.
pub const VERSION_MINOR: u16 = 2;
/// Size of the file header.
pub const FILE_HEADER_LEN: usize = 16;
/// First four bytes of every block.
pub const BLOCK_MAGIC: [u8; 4] = *b"MPSB";
/// Size of a block header.
pub const BLOCK_HEADER_LEN: usize = 44;
/// Largest payload a reader accepts (a sanity bound against corrupt lengths).
pub const MAX_PAYLOAD_LEN: u32 = 1 << 30;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockKind {
    /// Encoded events of one thread.
    Events = 0,
    /// Definitions (calls, callsites, modules, communicators, operations).
    Definitions = 1,
    /// The rank's description (JSON), written once when the rank starts tracing.
    Info = 2,
    /// The rank's closing summary (JSON), written at finalize, exit or fatal signal.
    Trailer = 3,
    /// Calls a thread was inside when its record was taken (a signal, `MPI_Abort`, a hang):
    /// events in the events encoding whose exit time is the moment of the record (since 1.1).
    Open = 4,
    /// Something that happened to the process, not a call (JSON [`crate::Note`]): a signal
    /// the program handled, a hang noticed, tracing stopped by an error (since 1.1).
    Note = 5,
    /// The CPU time of compute bursts: for some events of the events block of the same
    /// thread that follows it (same base ticks), the thread's CPU time between the previous
    /// call and the event's entry (since 1.2; see [`crate::encode::BurstCpu`]).
    Cpu = 6,
    /// A kind this reader does not know (a later minor version): skipped by its length.
    Unknown = 255,
}

impl BlockKind {
    /// The kind numbered `k`.
    pub fn from_u8(k: u8) -> Option<BlockKind> {
        Some(match k {
            0 => BlockKind::Events,
            1 => BlockKind::Definitions,
            2 => BlockKind::Info,
            3 => BlockKind::Trailer,
            4 => BlockKind::Open,
            5 => BlockKind::Note,
            6 => BlockKind::Cpu,
            _ => return None,
        })
    }
}

/// Returns the 16-byte file header.
pub fn file_header() -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[..8].copy_from_slice(&FILE_MAGIC);
    h[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    h[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    h
}

/// A decoded block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// What the payload holds.
    pub kind: BlockKind,
    /// Thread index (event blocks).
    pub thread: u16,
    /// Payload length in bytes.
    pub payload_len: u32,
    /// Number of records in the payload.
    pub records: u32,
    /// Clock ticks that the first event's gap is relative to.
    pub base_ticks: u64,
    /// Clock reading (ticks) taken when the block was sealed.
    pub sync_ticks: u64,
    /// CLOCK_MONOTONIC nanoseconds read together with `sync_ticks`.
    pub sync_ns: u64,
    /// CRC-32 of the header (without this field) and the payload.
    pub crc: u32,
}

impl BlockHeader {
    /// Writes the header fields (all but the CRC) into `out[..40]`.
    pub fn write_fields(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&BLOCK_MAGIC);
        out[4] = self.kind as u8;
        out[5] = 0;
        out[6..8].copy_from_slice(&self.thread.to_le_bytes());
        out[8..12].copy_from_slice(&self.payload_len.to_le_bytes());
        out[12..16].copy_from_slice(&self.records.to_le_bytes());
        out[16..24].copy_from_slice(&self.base_ticks.to_le_bytes());
        out[24..32].copy_from_slice(&self.sync_ticks.to_le_bytes());
        out[32..40].copy_from_slice(&self.sync_ns.to_le_bytes());
    }

    /// Parses a header; checks the magic, kind and length bound, not the CRC.
    pub fn parse(b: &[u8; BLOCK_HEADER_LEN]) -> Result<BlockHeader, &'static str> {
        if b[0..4] != BLOCK_MAGIC {
            return Err("bad block magic");
        }
        let kind = BlockKind::from_u8(b[4]).unwrap_or(BlockKind::Unknown);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let payload_len = u32_at(8);
        if payload_len > MAX_PAYLOAD_LEN {
            return Err("block length out of range");
        }
        Ok(BlockHeader {
            kind,
            thread: u16::from_le_bytes([b[6], b[7]]),
            payload_len,
            records: u32_at(12),
            base_ticks: u64_at(16),
            sync_ticks: u64_at(24),
            sync_ns: u64_at(32),
            crc: u32_at(40),
        })
    }
}

/// CRC-32 of a block: its header fields and its payload.
pub fn block_crc(header_fields: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header_fields[..40]);
    h.update(payload);
    h.finalize()
}

/// Frames `payload` as a complete block (header + payload) in a new vector.
///
/// Used for the rare blocks (definitions, info, trailer); event blocks are sealed in place by
/// [`crate::encode::BlockEncoder`].
pub fn frame(
    kind: BlockKind,
    thread: u16,
    records: u32,
    sync: (u64, u64),
    payload: &[u8],
) -> Vec<u8> {
    let mut out = vec![0u8; BLOCK_HEADER_LEN + payload.len()];
    let hdr = BlockHeader {
        kind,
        thread,
        payload_len: payload.len() as u32,
        records,
        base_ticks: sync.0,
        sync_ticks: sync.0,
        sync_ns: sync.1,
        crc: 0,
    };
    hdr.write_fields(&mut out[..BLOCK_HEADER_LEN]);
    out[BLOCK_HEADER_LEN..].copy_from_slice(payload);
    let crc = block_crc(&out[..40], payload);
    out[40..44].copy_from_slice(&crc.to_le_bytes());
    out
}
