//! A simple single-threaded rank-file writer.
//!
//! Used by tests, synthetic trace generators and converters. The preload library writes the
//! same format from several threads with its own buffering, but uses the same encoder and
//! framing functions.

use std::io::Write;

use crate::block::{file_header, frame, BlockKind};
use crate::defs::Definition;
use crate::encode::{BlockEncoder, RawEvent};
use crate::info::{Note, RankInfo, Trailer};

/// Writes a rank file event by event.
pub struct RankWriter<W: Write> {
    out: W,
    enc: BlockEncoder,
    last_ticks: u64,
    last_ns: u64,
    ns_per_tick: f64,
    sync0: (u64, u64),
    events: u64,
}

impl<W: Write> RankWriter<W> {
    /// Starts a file: writes the header and the info block. Blocks hold up to `block_size` bytes.
    pub fn new(mut out: W, info: &RankInfo, block_size: usize) -> std::io::Result<Self> {
        out.write_all(&file_header())?;
        let json = serde_json::to_vec(info).map_err(std::io::Error::other)?;
        let sync0 = (info.clock.sync_ticks, info.clock.sync_ns);
        out.write_all(&frame(BlockKind::Info, 0, 1, sync0, &json))?;
        let ns_per_tick = if info.clock.source == "tsc" {
            1e9 / info.clock.ticks_per_second
        } else {
            1.0
        };
        Ok(RankWriter {
            out,
            enc: BlockEncoder::with_cpu(block_size, 0),
            last_ticks: sync0.0,
            last_ns: sync0.1,
            ns_per_tick,
            sync0,
            events: 0,
        })
    }

    /// Writes definitions in their own block (after flushing pending events, which cannot
    /// refer to them).
    pub fn define(&mut self, defs: &[Definition]) -> std::io::Result<()> {
        let mut payload = Vec::new();
        for d in defs {
            d.encode(&mut payload);
        }
        self.out.write_all(&frame(
            BlockKind::Definitions,
            0,
            defs.len() as u32,
            self.sync(),
            &payload,
        ))
    }

    /// Moves the clock pair written with the next blocks to `ticks` (never backwards).
    fn advance_to(&mut self, ticks: u64) {
        self.last_ticks = self.last_ticks.max(ticks);
        self.last_ns =
            self.sync0.1 + ((self.last_ticks - self.sync0.0) as f64 * self.ns_per_tick) as u64;
    }

    fn sync(&self) -> (u64, u64) {
        (self.last_ticks, self.last_ns)
    }

    /// Appends an event (times in ticks of the info block's clock).
    pub fn event(&mut self, ev: &RawEvent) -> std::io::Result<()> {
        self.advance_to(ev.t_exit);
        if self.enc.push(ev) {
            self.events += 1;
            return Ok(());
        }
        self.flush_block()?;
        if self.enc.push(ev) {
            self.events += 1;
            return Ok(());
        }
        // Larger than a whole block: give it a block of its own.
        let mut big =
            BlockEncoder::with_cpu(ev.max_encoded_len() + crate::block::BLOCK_HEADER_LEN, 0);
        let pushed = big.push(ev);
        debug_assert!(pushed);
        let (t, n) = self.sync();
        self.out.write_all(big.seal(t, n))?;
        self.events += 1;
        Ok(())
    }

    /// Writes the pending events as a block.
    pub fn flush_block(&mut self) -> std::io::Result<()> {
        if !self.enc.is_empty() {
            let (t, n) = self.sync();
            self.out.write_all(self.enc.seal(t, n))?;
            self.enc.clear();
        }
        Ok(())
    }

    /// Writes `ev` as a call still in progress (an open block: the record ends inside it;
    /// `t_exit` is the moment of the record), after the pending events.
    pub fn open_call(&mut self, ev: &RawEvent) -> std::io::Result<()> {
        self.flush_block()?;
        self.advance_to(ev.t_exit);
        let mut enc = BlockEncoder::new(ev.max_encoded_len() + crate::block::BLOCK_HEADER_LEN, 0);
        if !enc.push(ev) {
            return Err(std::io::Error::other("event larger than its block"));
        }
        let (t, n) = self.sync();
        self.out.write_all(enc.seal_as(BlockKind::Open, t, n))
    }

    /// Writes a note (after the pending events).
    pub fn note(&mut self, note: &Note) -> std::io::Result<()> {
        self.flush_block()?;
        let json = serde_json::to_vec(note).map_err(std::io::Error::other)?;
        self.out
            .write_all(&frame(BlockKind::Note, 0, 1, self.sync(), &json))
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Flushes pending events, writes the trailer and returns the output.
    pub fn finish(mut self, trailer: Option<&Trailer>) -> std::io::Result<W> {
        self.flush_block()?;
        if let Some(t) = trailer {
            let json = serde_json::to_vec(t).map_err(std::io::Error::other)?;
            self.out.write_all(&frame(
                BlockKind::Trailer,
                0,
                1,
                (t.sync_ticks, t.sync_ns),
                &json,
            ))?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
