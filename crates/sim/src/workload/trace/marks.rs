//! The simulated dates at which each rank enters and leaves a part of its record given in
//! traced times (its main loop: `mpiscope replay --phase loop`).
//!
//! A rank's part is the calls of its first thread entering within `[start, end)` ns of the
//! traced run. The replay reads the simulated clock ([`Action::Clock`], which takes no
//! time) just before the first of them (after the computation that precedes it) and just
//! after the last (before the computation that follows it, or at the end of the record);
//! the whole record is replayed, so every message still finds its match.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::workload::{Action, Outcome};

/// The dates of one rank, picoseconds of simulated time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankDates {
    /// Just before its part's first call.
    pub enter_ps: Option<u64>,
    /// Just after its part's last call.
    pub leave_ps: Option<u64>,
}

/// The parts of every rank and the dates the replay found (shared with the workloads).
#[derive(Debug, Clone, Default)]
pub struct PhaseMarks {
    ranges: Arc<Vec<(u64, u64)>>,
    dates: Arc<Mutex<Vec<RankDates>>>,
}

impl PhaseMarks {
    /// Marks for these parts: per rank, by rank, `(start, end)` ns of the traced run.
    pub fn new(ranges: Vec<(u64, u64)>) -> Self {
        let n = ranges.len();
        PhaseMarks {
            ranges: Arc::new(ranges),
            dates: Arc::new(Mutex::new(vec![RankDates::default(); n])),
        }
    }

    /// The dates found so far, by rank.
    pub fn dates(&self) -> Vec<RankDates> {
        self.dates.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The marker of `rank`, if it has a part.
    pub(super) fn marker(&self, rank: u32) -> Option<Marker> {
        let &(start, end) = self.ranges.get(rank as usize)?;
        Some(Marker {
            marks: self.clone(),
            rank,
            start,
            end,
            state: State::Before,
            queued: VecDeque::new(),
            pending: None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Before,
    Inside,
    After,
}

/// Where one rank's replay stands against its part.
#[derive(Debug)]
pub(super) struct Marker {
    marks: PhaseMarks,
    rank: u32,
    start: u64,
    end: u64,
    state: State,
    /// The clock reads queued, in order: entering (true) or leaving.
    queued: VecDeque<bool>,
    /// The clock read just handed to the engine: entering (true) or leaving.
    pending: Option<bool>,
}

impl Marker {
    /// Takes the outcome of the previous action (the date, after a clock read).
    pub(super) fn outcome(&mut self, last: Outcome) {
        if let (Some(entering), Outcome::Time(ps)) = (self.pending.take(), last) {
            let mut d = self.marks.dates.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(d) = d.get_mut(self.rank as usize) {
                if entering {
                    d.enter_ps = Some(ps);
                } else {
                    d.leave_ps = Some(ps);
                }
            }
        }
    }

    /// An action is handed to the engine: a clock read is the next outcome's date.
    pub(super) fn handing(&mut self, a: &Action) {
        if matches!(a, Action::Clock) {
            self.pending = self.queued.pop_front();
        }
    }

    /// Before a call entering at `t_enter` is translated: does it leave the part (a clock
    /// read goes before its actions)?
    pub(super) fn leaves_before(&mut self, t_enter: u64) -> bool {
        if self.state == State::Inside && t_enter >= self.end {
            self.state = State::After;
            self.queued.push_back(false);
            return true;
        }
        false
    }

    /// Does the call entering at `t_enter` start the part (a clock read goes after the
    /// computation before it)?
    pub(super) fn enters_at(&mut self, t_enter: u64) -> bool {
        if self.state == State::Before && t_enter >= self.start {
            self.state = State::Inside;
            self.queued.push_back(true);
            return true;
        }
        false
    }

    /// At the end of the record: is the part still open (a clock read closes it)?
    pub(super) fn leaves_at_end(&mut self) -> bool {
        if self.state == State::Inside {
            self.state = State::After;
            self.queued.push_back(false);
            return true;
        }
        false
    }
}
