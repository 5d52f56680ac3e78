//! The standard `HPL.dat`: parsing and expansion into runs in HPL's order.
//!
//! Like HPL's `HPL_pdinfo`, every line is read positionally and only its leading
//! whitespace-separated values count (the rest is a comment). Lists are expanded in the
//! loop order of `HPL_pddriver`: grids, N, NB, DEPTH, BCAST, RFACT, PFACT, NBMIN, NDIV.
//!
//! Values are checked as `HPL_pdinfo` checks them (N >= 0, NB >= 1, P and Q >= 1, PFACT and
//! RFACT 0 to 2, NBMIN >= 1, NDIV >= 2, BCAST 0 to 5, DEPTH >= 0, SWAP 0 to 2, the 0/1 flags,
//! alignment >= 1), plus what a simulation needs: a finite threshold, at most
//! [`MAX_RANKS`] processes in a grid and [`MAX_RUNS`] runs in all. An error names the file
//! and the line of the value, the line `HPL.dat` gives it.

use std::fmt;

/// A panel factorization variant (PFACT or RFACT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// Left-looking (0).
    Left,
    /// Crout (1).
    Crout,
    /// Right-looking (2).
    Right,
}

impl Fact {
    /// HPL's letter for the `WR..` line.
    pub fn letter(self) -> char {
        match self {
            Fact::Left => 'L',
            Fact::Crout => 'C',
            Fact::Right => 'R',
        }
    }
}

/// A panel broadcast variant (BCAST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bcast {
    /// Increasing ring (0).
    OneRing,
    /// Modified increasing ring (1).
    OneRingM,
    /// Increasing 2-ring (2).
    TwoRing,
    /// Modified increasing 2-ring (3).
    TwoRingM,
    /// Long: scatter then ring allgather (4).
    Long,
    /// Modified long (5).
    LongM,
}

impl Bcast {
    /// HPL's digit for the `WR..` line.
    pub fn digit(self) -> u32 {
        self as u32
    }
}

/// Row swapping (SWAP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    /// Binary exchange (0).
    BinaryExchange,
    /// Spread-roll, "long" (1).
    Long,
    /// Binary exchange up to the threshold's number of columns, long above (2).
    Mix,
}

/// How the skeleton simulates the pivot exchanges of a panel factorization (not an HPL.dat
/// parameter: a choice of the simulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pivots {
    /// One HPL_pdmxswp exchange pattern per panel column, message by message.
    Messages,
    /// The first, second and last columns message by message; the second is timed on the
    /// simulated clock, and the columns between cost their summed flops plus that time each
    /// (the exchanges are latency-bound and identical from column to column): three
    /// exchange patterns per panel instead of NB.
    #[default]
    Aggregated,
}

/// How the skeleton simulates the trailing update's probes of a pending broadcast (not an
/// HPL.dat parameter: a choice of the simulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Polls {
    /// One computation and one `Iprobe` per NB columns, as HPL.
    Chunks,
    /// The NB-column chunks followed by a probe run as one
    /// [`mpiscope_sim::workload::Action::ComputeWhilePolling`], cut short after the chunk
    /// the broadcast arrives in: the same dates (a send arriving at the very instant a chunk
    /// ends counts as seen), two actions instead of two per chunk.
    #[default]
    Aggregated,
}

/// One run: a single value of every parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Matrix order.
    pub n: u64,
    /// Block size.
    pub nb: u64,
    /// Process rows.
    pub p: u32,
    /// Process columns.
    pub q: u32,
    /// Row-major process mapping (PMAP 0) or column-major (PMAP 1).
    pub row_major: bool,
    /// Panel factorization.
    pub pfact: Fact,
    /// Recursive stopping criterion.
    pub nbmin: u64,
    /// Panels in recursion.
    pub ndiv: u64,
    /// Recursive panel factorization.
    pub rfact: Fact,
    /// Panel broadcast.
    pub bcast: Bcast,
    /// Look-ahead depth.
    pub depth: u32,
    /// Row swapping.
    pub swap: Swap,
    /// Swapping threshold (columns).
    pub swap_threshold: u64,
    /// L1 stored transposed.
    pub l1_transposed: bool,
    /// U stored transposed.
    pub u_transposed: bool,
    /// Equilibration.
    pub equilibration: bool,
    /// How the pivot exchanges are simulated (not from HPL.dat).
    pub pivots: Pivots,
    /// How the update's probes are simulated (not from HPL.dat).
    pub polls: Polls,
    /// Mark each rank's actions with their HPL phase as callsites ([`crate::phase_name`];
    /// not from HPL.dat): for timelines, off by default.
    pub phases: bool,
}

impl Run {
    /// HPL's `T/V` code, e.g. `WR00L2L2` (order, depth, bcast, rfact, ndiv, pfact, nbmin).
    pub fn code(&self) -> String {
        format!(
            "W{}{}{}{}{}{}{}",
            if self.row_major { 'R' } else { 'C' },
            self.depth,
            self.bcast.digit(),
            self.rfact.letter(),
            self.ndiv,
            self.pfact.letter(),
            self.nbmin
        )
    }

    /// HPL's operation count: 2/3 N^3 + 3/2 N^2.
    pub fn flops(&self) -> f64 {
        let n = self.n as f64;
        2.0 / 3.0 * n * n * n + 1.5 * n * n
    }
}

/// A parsed `HPL.dat`.
#[derive(Debug, Clone, PartialEq)]
pub struct HplDat {
    /// Output file name (line 3).
    pub output_file: String,
    /// Output device (6 stdout, 7 stderr, else the file).
    pub device: i64,
    /// Ns.
    pub ns: Vec<u64>,
    /// NBs.
    pub nbs: Vec<u64>,
    /// Row-major mapping.
    pub row_major: bool,
    /// Grids (P, Q).
    pub grids: Vec<(u32, u32)>,
    /// Residual threshold.
    pub threshold: f64,
    /// PFACTs.
    pub pfacts: Vec<Fact>,
    /// NBMINs.
    pub nbmins: Vec<u64>,
    /// NDIVs.
    pub ndivs: Vec<u64>,
    /// RFACTs.
    pub rfacts: Vec<Fact>,
    /// BCASTs.
    pub bcasts: Vec<Bcast>,
    /// DEPTHs.
    pub depths: Vec<u32>,
    /// SWAP.
    pub swap: Swap,
    /// Swapping threshold.
    pub swap_threshold: u64,
    /// L1 transposed.
    pub l1_transposed: bool,
    /// U transposed.
    pub u_transposed: bool,
    /// Equilibration.
    pub equilibration: bool,
    /// Memory alignment in doubles.
    pub alignment: u64,
}

/// An error in an `HPL.dat`, naming the file and the 1-based line.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct DatError {
    /// The file.
    pub path: String,
    /// The line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Most processes (P x Q) of a grid: the largest platforms the simulator builds.
pub const MAX_RANKS: u64 = 1 << 24;

/// Most runs (the product of the lists' lengths) an `HPL.dat` may describe: each is a
/// simulation, and the runs are expanded in memory.
pub const MAX_RUNS: u64 = 1_000_000;

struct Lines<'a> {
    path: &'a str,
    lines: Vec<&'a str>,
    /// Runs described by the lists read so far.
    runs: std::cell::Cell<u64>,
}

impl Lines<'_> {
    fn err(&self, line: usize, message: impl fmt::Display) -> DatError {
        DatError {
            path: self.path.to_owned(),
            line,
            message: message.to_string(),
        }
    }

    /// The first `k` values of 1-based line `line`, parsed.
    fn values<T: std::str::FromStr>(
        &self,
        line: usize,
        k: usize,
        what: &str,
    ) -> Result<Vec<T>, DatError> {
        let text = self
            .lines
            .get(line - 1)
            .ok_or_else(|| self.err(line, format!("missing line: expected {what}")))?;
        let words: Vec<&str> = text.split_whitespace().take(k).collect();
        if words.len() < k {
            return Err(self.err(
                line,
                format!("expected {k} value(s) for {what}, found {}", words.len()),
            ));
        }
        words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                w.parse().map_err(|_| {
                    if w.starts_with('-') && w.parse::<i64>().is_ok() {
                        self.err(line, format!("{what}: {w} is negative"))
                    } else if i > 0 && w.parse::<f64>().is_err() {
                        // The comment after the values: the count line asked for more.
                        self.err(
                            line,
                            format!("expected {k} value(s) for {what}, found {i} before `{w}`"),
                        )
                    } else {
                        self.err(line, format!("{what}: `{w}` is not a valid value"))
                    }
                })
            })
            .collect()
    }

    fn one<T: std::str::FromStr>(&self, line: usize, what: &str) -> Result<T, DatError> {
        Ok(self.values(line, 1, what)?.remove(0))
    }

    /// A count line followed by a list line.
    fn list<T: std::str::FromStr>(&self, line: usize, what: &str) -> Result<Vec<T>, DatError> {
        let k: usize = self.one(line, &format!("the number of {what}"))?;
        if k == 0 {
            return Err(self.err(line, format!("the number of {what} must be at least 1")));
        }
        self.count_runs(line, k, what)?;
        self.values(line + 1, k, what)
    }

    /// Multiplies the runs by the `k` values of the list counted on `line`.
    fn count_runs(&self, line: usize, k: usize, what: &str) -> Result<(), DatError> {
        let runs = self.runs.get().saturating_mul(k as u64);
        if runs > MAX_RUNS {
            return Err(self.err(
                line,
                format!(
                    "{k} {what} make {runs} runs with the lists above; an HPL.dat describes at \
                     most {MAX_RUNS}"
                ),
            ));
        }
        self.runs.set(runs);
        Ok(())
    }

    fn facts(&self, line: usize, what: &str) -> Result<Vec<Fact>, DatError> {
        self.list::<u32>(line, what)?
            .into_iter()
            .map(|v| match v {
                0 => Ok(Fact::Left),
                1 => Ok(Fact::Crout),
                2 => Ok(Fact::Right),
                _ => Err(self.err(line + 1, format!("{what}: {v} is not 0, 1 or 2"))),
            })
            .collect()
    }

    /// The process grids (lines 10 to 12): their number, then the Ps and the Qs.
    fn grids(&self) -> Result<(Vec<u32>, Vec<u32>), DatError> {
        let ngrids: usize = self.one(10, "the number of process grids")?;
        if ngrids == 0 {
            return Err(self.err(10, "the number of process grids must be at least 1"));
        }
        self.count_runs(10, ngrids, "process grids")?;
        let ps: Vec<u32> = self.values(11, ngrids, "Ps")?;
        let qs: Vec<u32> = self.values(12, ngrids, "Qs")?;
        if ps.contains(&0) {
            return Err(self.err(11, "P must be positive"));
        }
        if qs.contains(&0) {
            return Err(self.err(12, "Q must be positive"));
        }
        if let Some((p, q)) = ps
            .iter()
            .zip(&qs)
            .find(|&(&p, &q)| u64::from(p) * u64::from(q) > MAX_RANKS)
        {
            return Err(self.err(
                12,
                format!(
                    "a {p} x {q} grid has {} processes; at most {MAX_RANKS} are simulated",
                    u64::from(*p) * u64::from(*q)
                ),
            ));
        }
        Ok((ps, qs))
    }

    /// The BCAST list of `line` (0 to 5).
    fn bcasts(&self, line: usize, what: &str) -> Result<Vec<Bcast>, DatError> {
        self.list::<u32>(line, what)?
            .into_iter()
            .map(|v| match v {
                0 => Ok(Bcast::OneRing),
                1 => Ok(Bcast::OneRingM),
                2 => Ok(Bcast::TwoRing),
                3 => Ok(Bcast::TwoRingM),
                4 => Ok(Bcast::Long),
                5 => Ok(Bcast::LongM),
                _ => Err(self.err(line + 1, format!("BCAST {v} is not between 0 and 5"))),
            })
            .collect()
    }
}

impl HplDat {
    /// Parses the text of an `HPL.dat`; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<HplDat, DatError> {
        let l = Lines {
            path,
            lines: text.lines().collect(),
            runs: std::cell::Cell::new(1),
        };
        let output_file = l
            .lines
            .get(2)
            .and_then(|s| s.split_whitespace().next())
            .ok_or_else(|| l.err(3, "missing line: expected the output file name"))?
            .to_owned();
        let device = l.one(4, "the device out")?;
        let ns: Vec<u64> = l.list(5, "Ns")?;
        let nbs: Vec<u64> = l.list(7, "NBs")?;
        if let Some(nb) = nbs.iter().find(|&&nb| nb == 0) {
            return Err(l.err(8, format!("NB {nb} must be positive")));
        }
        let row_major = match l.one::<u32>(9, "PMAP")? {
            0 => true,
            1 => false,
            v => return Err(l.err(9, format!("PMAP {v} is not 0 or 1"))),
        };
        let (ps, qs) = l.grids()?;
        let threshold: f64 = l.one(13, "the threshold")?;
        if !threshold.is_finite() {
            return Err(l.err(13, format!("threshold {threshold} is not a finite number")));
        }
        let pfacts = l.facts(14, "PFACTs")?;
        let nbmins: Vec<u64> = l.list(16, "NBMINs")?;
        if nbmins.contains(&0) {
            return Err(l.err(17, "NBMIN must be at least 1"));
        }
        let ndivs: Vec<u64> = l.list(18, "NDIVs")?;
        if ndivs.iter().any(|&d| d < 2) {
            return Err(l.err(19, "NDIV must be at least 2"));
        }
        let rfacts = l.facts(20, "RFACTs")?;
        let bcasts = l.bcasts(22, "BCASTs")?;
        let depths: Vec<u32> = l.list(24, "DEPTHs")?;
        let swap = match l.one::<u32>(26, "SWAP")? {
            0 => Swap::BinaryExchange,
            1 => Swap::Long,
            2 => Swap::Mix,
            v => return Err(l.err(26, format!("SWAP {v} is not 0, 1 or 2"))),
        };
        let swap_threshold = l.one(27, "the swapping threshold")?;
        let flag = |line: usize, what: &str| -> Result<bool, DatError> {
            match l.one::<u32>(line, what)? {
                0 => Ok(false),
                1 => Ok(true),
                v => Err(l.err(line, format!("{what} {v} is not 0 or 1"))),
            }
        };
        // L1 and U: 0 = transposed, 1 = no-transposed.
        let l1_transposed = !flag(28, "L1 form")?;
        let u_transposed = !flag(29, "U form")?;
        let equilibration = flag(30, "equilibration")?;
        let alignment = l.one(31, "memory alignment")?;
        if alignment == 0 {
            return Err(l.err(31, "memory alignment 0 must be at least 1 (double)"));
        }
        Ok(HplDat {
            output_file,
            device,
            ns,
            nbs,
            row_major,
            grids: ps.into_iter().zip(qs).collect(),
            threshold,
            pfacts,
            nbmins,
            ndivs,
            rfacts,
            bcasts,
            depths,
            swap,
            swap_threshold,
            l1_transposed,
            u_transposed,
            equilibration,
            alignment,
        })
    }

    /// Every combination, in `HPL_pddriver`'s loop order.
    pub fn runs(&self) -> Vec<Run> {
        let mut out = Vec::new();
        for &(p, q) in &self.grids {
            for &n in &self.ns {
                for &nb in &self.nbs {
                    for &depth in &self.depths {
                        for &bcast in &self.bcasts {
                            for &rfact in &self.rfacts {
                                for &pfact in &self.pfacts {
                                    for &nbmin in &self.nbmins {
                                        for &ndiv in &self.ndivs {
                                            out.push(Run {
                                                n,
                                                nb,
                                                p,
                                                q,
                                                row_major: self.row_major,
                                                pfact,
                                                nbmin,
                                                ndiv,
                                                rfact,
                                                bcast,
                                                depth,
                                                swap: self.swap,
                                                swap_threshold: self.swap_threshold,
                                                l1_transposed: self.l1_transposed,
                                                u_transposed: self.u_transposed,
                                                equilibration: self.equilibration,
                                                pivots: Pivots::default(),
                                                polls: Polls::default(),
                                                phases: false,
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HPL 2.3's shipped `HPL.dat` (testing/ptest/HPL.dat).
    const DEFAULT: &str = "HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
4            # of problems sizes (N)
29 30 34 35  Ns
4            # of NBs
1 2 3 4      NBs
0            PMAP process mapping (0=Row-,1=Column-major)
3            # of process grids (P x Q)
2 1 4        Ps
2 4 1        Qs
16.0         threshold
3            # of panel fact
0 1 2        PFACTs (0=left, 1=Crout, 2=Right)
2            # of recursive stopping criterium
2 4          NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
3            # of recursive panel fact.
0 1 2        RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
0            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
0            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
";

    #[test]
    fn parses_hpl_default_file() {
        let d = HplDat::parse(DEFAULT, "HPL.dat").unwrap();
        assert_eq!(d.output_file, "HPL.out");
        assert_eq!(d.device, 6);
        assert_eq!(d.ns, vec![29, 30, 34, 35]);
        assert_eq!(d.nbs, vec![1, 2, 3, 4]);
        assert!(d.row_major);
        assert_eq!(d.grids, vec![(2, 2), (1, 4), (4, 1)]);
        assert_eq!(d.threshold, 16.0);
        assert_eq!(d.pfacts, vec![Fact::Left, Fact::Crout, Fact::Right]);
        assert_eq!(d.nbmins, vec![2, 4]);
        assert_eq!(d.ndivs, vec![2]);
        assert_eq!(d.rfacts, vec![Fact::Left, Fact::Crout, Fact::Right]);
        assert_eq!(d.bcasts, vec![Bcast::OneRing]);
        assert_eq!(d.depths, vec![0]);
        assert_eq!(d.swap, Swap::Mix);
        assert_eq!(d.swap_threshold, 64);
        assert!(d.l1_transposed && d.u_transposed && d.equilibration);
        assert_eq!(d.alignment, 8);
    }

    #[test]
    fn expands_in_hpl_order() {
        let d = HplDat::parse(DEFAULT, "HPL.dat").unwrap();
        let runs = d.runs();
        // 3 grids x 4 Ns x 4 NBs x 1 depth x 1 bcast x 3 rfacts x 3 pfacts x 2 nbmins x 1 ndiv.
        assert_eq!(runs.len(), 3 * 4 * 4 * 3 * 3 * 2);
        // The innermost loops are PFACT then NBMIN: the first runs are L/L/2, L/L/4, L/C/2.
        assert_eq!(runs[0].code(), "WR00L2L2");
        assert_eq!(runs[1].code(), "WR00L2L4");
        assert_eq!(runs[2].code(), "WR00L2C2");
        assert_eq!(runs[6].code(), "WR00C2L2");
        // NB changes after the 18 algorithm combinations, N after 4 NBs, the grid last.
        assert_eq!((runs[18].n, runs[18].nb), (29, 2));
        assert_eq!((runs[72].n, runs[72].nb), (30, 1));
        assert_eq!((runs[288].p, runs[288].q), (1, 4));
    }

    #[test]
    fn errors_name_file_and_line() {
        let bad = DEFAULT.replace("0            BCASTs", "9            BCASTs");
        let e = HplDat::parse(&bad, "x/HPL.dat").unwrap_err().to_string();
        assert_eq!(e, "x/HPL.dat:23: BCAST 9 is not between 0 and 5");
        let short = DEFAULT.replace("29 30 34 35  Ns", "29 30  Ns");
        let e = HplDat::parse(&short, "HPL.dat").unwrap_err().to_string();
        assert!(
            e.starts_with("HPL.dat:6: expected 4 value(s) for Ns"),
            "{e}"
        );
        let cut: String = DEFAULT.lines().take(20).collect::<Vec<_>>().join("\n");
        let e = HplDat::parse(&cut, "HPL.dat").unwrap_err().to_string();
        assert!(e.starts_with("HPL.dat:21: missing line"), "{e}");
    }

    #[test]
    fn values_are_checked_as_hpl_pdinfo_does() {
        for (from, to, want) in [
            (
                "29 30 34 35  Ns",
                "29 -30 34 35  Ns",
                "HPL.dat:6: Ns: -30 is negative",
            ),
            (
                "1 2 3 4      NBs",
                "1 2 0 4      NBs",
                "HPL.dat:8: NB 0 must be positive",
            ),
            (
                "2 1 4        Ps",
                "2 0 4        Ps",
                "HPL.dat:11: P must be positive",
            ),
            (
                "2 4 1        Qs",
                "2 4 -1        Qs",
                "HPL.dat:12: Qs: -1 is negative",
            ),
            (
                "2 1 4        Ps\n2 4 1        Qs",
                "2 8192 4        Ps\n2 4096 1        Qs",
                "HPL.dat:12: a 8192 x 4096 grid has 33554432 processes",
            ),
            (
                "16.0         threshold",
                "nan  threshold",
                "HPL.dat:13: threshold NaN",
            ),
            (
                "16.0         threshold",
                "inf  threshold",
                "HPL.dat:13: threshold inf",
            ),
            (
                "0 1 2        PFACTs",
                "0 3 2        PFACTs",
                "HPL.dat:15: PFACTs: 3 is not",
            ),
            (
                "2 4          NBMINs",
                "2 0          NBMINs",
                "HPL.dat:17: NBMIN must be",
            ),
            (
                "2            NDIVs",
                "1            NDIVs",
                "HPL.dat:19: NDIV must be",
            ),
            (
                "0 1 2        RFACTs",
                "0 1 -2        RFACTs",
                "HPL.dat:21: RFACTs: -2 is",
            ),
            (
                "0            BCASTs",
                "6            BCASTs",
                "HPL.dat:23: BCAST 6 is not",
            ),
            (
                "0            DEPTHs",
                "-1            DEPTHs",
                "HPL.dat:25: DEPTHs: -1 is",
            ),
            (
                "2            SWAP",
                "3            SWAP",
                "HPL.dat:26: SWAP 3 is not",
            ),
            (
                "64           swapping",
                "-64           swapping",
                "HPL.dat:27: the swapping",
            ),
            (
                "0            L1",
                "2            L1",
                "HPL.dat:28: L1 form 2 is not 0 or 1",
            ),
            (
                "1            Equilibration",
                "x  Equil",
                "HPL.dat:30: equilibration: `x`",
            ),
            (
                "8            memory",
                "0            memory",
                "HPL.dat:31: memory alignment 0",
            ),
            (
                "4            # of problems",
                "0            # of problems",
                "HPL.dat:5: the number",
            ),
            (
                "4            # of NBs",
                "5            # of NBs",
                "HPL.dat:8: expected 5 value(s) for NBs, found 4 before `NBs`",
            ),
            (
                "3            # of process grids",
                "4            # of process grids",
                "HPL.dat:11: expected 4 value(s) for Ps, found 3",
            ),
        ] {
            assert!(DEFAULT.contains(from), "{from}");
            let bad = DEFAULT.replace(from, to);
            let e = HplDat::parse(&bad, "HPL.dat").unwrap_err().to_string();
            assert!(e.starts_with(want), "{to}: {e}");
        }
    }

    #[test]
    fn runs_are_bounded() {
        // 3 grids x 4 Ns x 4 NBs x 3 PFACTs x 2 NBMINs ... = 288 runs: fine; a list of a
        // million NBs is not (with the 4 Ns before it).
        let many = format!("1000000            # of NBs\n{}NBs", "7 ".repeat(1_000_000));
        let bad = DEFAULT.replace("4            # of NBs\n1 2 3 4      NBs", &many);
        let e = HplDat::parse(&bad, "HPL.dat").unwrap_err().to_string();
        assert!(
            e.starts_with("HPL.dat:7: 1000000 NBs make 4000000 runs with the lists above"),
            "{e}"
        );
    }

    #[test]
    fn gflops_formula_is_hpls() {
        let d = HplDat::parse(DEFAULT, "HPL.dat").unwrap();
        let r = &d.runs()[0];
        // N = 29: 2/3 * 24389 + 3/2 * 841 = 16259.33... + 1261.5.
        assert!(
            (r.flops() - 17_520.833_333_333).abs() < 1e-6,
            "{}",
            r.flops()
        );
    }
}
