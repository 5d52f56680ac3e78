//! Time windows: the part of a run a report covers (`mpiscope report --window FROM:TO`),
//! and phases (`--phase loop`: where each rank's main loop lies, found by `phase`)
//! as a window per rank.

/// A time window: events entering in `[start, end)` ns since the run's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First ns included.
    pub start: u64,
    /// First ns excluded.
    pub end: u64,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window {
        start: 0,
        end: u64::MAX,
    };

    /// Parses `FROM:TO` in seconds since the run's epoch; either side may be empty.
    pub fn parse(text: &str) -> Result<Window, String> {
        let (a, b) = text
            .split_once(':')
            .ok_or_else(|| format!("window `{text}`: expected FROM:TO in seconds"))?;
        let secs = |s: &str, default: u64| -> Result<u64, String> {
            if s.trim().is_empty() {
                return Ok(default);
            }
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("window `{text}`: `{s}` is not a number of seconds"))?;
            if !(0.0..1e9).contains(&v) {
                return Err(format!("window `{text}`: `{s}` is out of range"));
            }
            Ok((v * 1e9) as u64)
        };
        let w = Window {
            start: secs(a, 0)?,
            end: secs(b, u64::MAX)?,
        };
        if w.end <= w.start {
            return Err(format!("window `{text}`: it ends before it starts"));
        }
        Ok(w)
    }

    /// Does the window hold time `t`?
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start && t < self.end
    }

    /// Is it the whole run?
    pub fn is_all(&self) -> bool {
        *self == Window::ALL
    }
}

impl Window {
    /// The part of both windows (empty, holding no time, when they do not meet).
    pub fn intersect(&self, o: &Window) -> Window {
        let start = self.start.max(o.start);
        Window {
            start,
            end: self.end.min(o.end).max(start),
        }
    }
}

/// The part of a run an analysis covers (`--phase`): the whole run, or its main loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Every call.
    #[default]
    All,
    /// The main loop of each rank: from the first call of its first iteration to the last
    /// call of its last, found in the loop structure.
    Loop,
}

impl Phase {
    /// Every phase, in the order of `--phase`'s values.
    pub const ALL: [Phase; 2] = [Phase::All, Phase::Loop];

    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Phase::All => "all",
            Phase::Loop => "loop",
        }
    }

    /// The phase named `text`.
    pub fn parse(text: &str) -> Result<Phase, String> {
        Phase::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| format!("phase `{text}`: expected `all` or `loop`"))
    }
}

/// How a rank's main loop was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RangeKind {
    /// An approximate loop of communication calls: the one covering most of them.
    Calls,
    /// No repeated pattern of calls, but one compute burst holds most of the time between
    /// the rank's first and last communication call (a loop that makes no MPI call, as a
    /// code on one rank): the burst with the calls around it.
    Burst,
}

/// Where a phase lies on one rank.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RankRange {
    /// World rank.
    pub rank: u32,
    /// How it was found.
    pub kind: RangeKind,
    /// The entry of its first call, ns since the run's epoch.
    pub start_ns: u64,
    /// The exit of its last call, ns since the run's epoch.
    pub end_ns: u64,
    /// The entry of its last call (so that a last call of no duration is in
    /// [`RankRange::window`]).
    #[serde(skip)]
    pub last_enter_ns: u64,
    /// Its first event, numbered from 0 over all the events of the rank's record.
    pub first_event: u64,
    /// Its last event, numbered the same way.
    pub last_event: u64,
    /// Iterations of the loop (1 for a burst).
    pub iterations: u64,
    /// Communication calls and compute bursts in it (structure symbols).
    pub symbols: u64,
    /// Its share of the rank's symbols.
    pub symbol_share: f64,
}

impl RankRange {
    /// The calls it covers: those entering from its start to its end.
    pub fn window(&self) -> Window {
        Window {
            start: self.start_ns,
            end: self.end_ns.max(self.last_enter_ns + 1),
        }
    }
}

/// A window per rank: where a phase lies on each rank (the main loop starts and ends at
/// different times on each), within one window of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RankWindows {
    /// The window of the run (`--window`).
    pub outer: Window,
    /// Per rank, by rank: its phase's window (ranks past the end: the outer window).
    pub ranks: Vec<Window>,
}

impl Default for RankWindows {
    fn default() -> Self {
        RankWindows::same(Window::ALL)
    }
}

impl RankWindows {
    /// `w` on every rank.
    pub fn same(w: Window) -> Self {
        RankWindows {
            outer: w,
            ranks: Vec::new(),
        }
    }

    /// The ranges of a phase, within `outer`.
    pub fn of_ranges(ranges: &[RankRange], outer: Window) -> Self {
        let n = ranges
            .iter()
            .map(|r| r.rank as usize + 1)
            .max()
            .unwrap_or(0);
        let mut ranks = vec![outer; n];
        for r in ranges {
            ranks[r.rank as usize] = r.window().intersect(&outer);
        }
        RankWindows { outer, ranks }
    }

    /// The window of `rank`.
    pub fn of(&self, rank: u32) -> Window {
        self.ranks.get(rank as usize).copied().unwrap_or(self.outer)
    }

    /// Is it the whole run on every rank?
    pub fn is_all(&self) -> bool {
        self.outer.is_all() && self.ranks.iter().all(Window::is_all)
    }
}

/// A phase and where it lies on each rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolved {
    /// The phase.
    pub phase: Phase,
    /// Per rank, by rank (empty for [`Phase::All`]).
    pub ranges: Vec<RankRange>,
}

impl Resolved {
    /// The window of each rank, within `outer`.
    pub fn windows(&self, outer: Window) -> RankWindows {
        match self.phase {
            Phase::All => RankWindows::same(outer),
            Phase::Loop => RankWindows::of_ranges(&self.ranges, outer),
        }
    }

    /// One line per rank: where its phase lies (nothing for the whole run).
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if self.phase == Phase::All {
            return s;
        }
        let _ = writeln!(
            s,
            "Phase: main loop (calls entering from its first call to its last call's exit, per rank):"
        );
        for r in &self.ranges {
            let how = match r.kind {
                RangeKind::Calls => format!(
                    "{} iterations, {:.0}% of its calls and bursts",
                    r.iterations,
                    100.0 * r.symbol_share
                ),
                RangeKind::Burst => "one compute burst without MPI calls".to_string(),
            };
            let _ = writeln!(
                s,
                "  rank {}: {:.6} s to {:.6} s ({:.6} s), events {} to {}; {how}",
                r.rank,
                r.start_ns as f64 * 1e-9,
                r.end_ns as f64 * 1e-9,
                r.end_ns.saturating_sub(r.start_ns) as f64 * 1e-9,
                r.first_event,
                r.last_event
            );
        }
        s.push('\n');
        s
    }
}
