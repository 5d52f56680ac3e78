//! Access-order tracing ([Li 2010], section 5.1): after a collective completes, its receive
//! sub-messages are protected; the first touch of each one faults, is recorded (order and
//! time since the call returned) and reopens that sub-message's pages. The records of a run
//! give, per call site, the order in which the program reads what it received, from which
//! T-NBC derives priorities.
//!
//! [`ACCESS`] is the async-signal-safe part (atomics only, consulted by the fault handler);
//! [`Record`] and [`orders`] are the file format and the consensus over calls and ranks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

/// Sub-messages one traced call can hold.
pub const CAPACITY: usize = 4096;

struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    /// Nanoseconds since the call returned at the first touch, plus one (0: untouched).
    touched: AtomicU64,
    /// Position among the touches, plus one (0: untouched).
    seq: AtomicU32,
}

/// The sub-messages of the traced call whose first touches are awaited.
pub struct AccessTable {
    slots: [Slot; CAPACITY],
    /// Slots in use (0: nothing armed).
    len: AtomicUsize,
    /// Protected whole pages `[lo, hi)`.
    lo: AtomicUsize,
    hi: AtomicUsize,
    /// Monotonic clock at the return of the call, ns.
    returned: AtomicU64,
    next_seq: AtomicU32,
}

/// The process's access table.
pub static ACCESS: AccessTable = AccessTable::new();

/// Monotonic clock in nanoseconds (async-signal-safe).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes only `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Default for AccessTable {
    fn default() -> Self {
        Self::new()
    }
}

impl AccessTable {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const EMPTY: Slot = Slot {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            touched: AtomicU64::new(0),
            seq: AtomicU32::new(0),
        };
        Self {
            slots: [EMPTY; CAPACITY],
            len: AtomicUsize::new(0),
            lo: AtomicUsize::new(0),
            hi: AtomicUsize::new(0),
            returned: AtomicU64::new(0),
            next_seq: AtomicU32::new(0),
        }
    }

    /// Arms the table with sub-message ranges (at most [`CAPACITY`]; more are ignored) whose
    /// whole pages `[lo, hi)` the caller protects next; the clock starts now.
    pub fn arm(&self, subs: &[(usize, usize)], lo: usize, hi: usize) {
        let n = subs.len().min(CAPACITY);
        for (slot, &(s, e)) in self.slots.iter().zip(subs) {
            slot.start.store(s, Ordering::Relaxed);
            slot.end.store(e, Ordering::Relaxed);
            slot.touched.store(0, Ordering::Relaxed);
            slot.seq.store(0, Ordering::Relaxed);
        }
        self.lo.store(lo, Ordering::Relaxed);
        self.hi.store(hi, Ordering::Relaxed);
        self.next_seq.store(0, Ordering::Relaxed);
        self.returned.store(now_ns(), Ordering::Relaxed);
        self.len.store(n, Ordering::Release);
    }

    /// The armed protected range, if any.
    pub fn protected(&self) -> Option<(usize, usize)> {
        (self.len.load(Ordering::Acquire) > 0).then(|| {
            (
                self.lo.load(Ordering::Relaxed),
                self.hi.load(Ordering::Relaxed),
            )
        })
    }

    /// For the fault handler: if `addr` lies in an armed, protected sub-message, records its
    /// first touch and returns the whole pages to reopen (those of every sub-message sharing
    /// the faulting page, clipped to the protected range). Async-signal-safe.
    pub fn touch(&self, addr: usize, page: usize) -> Option<(usize, usize)> {
        let n = self.len.load(Ordering::Acquire);
        let (lo, hi) = (
            self.lo.load(Ordering::Relaxed),
            self.hi.load(Ordering::Relaxed),
        );
        if n == 0 || addr < lo || addr >= hi {
            return None;
        }
        let pg = addr & !(page - 1);
        let (mut open_lo, mut open_hi) = (pg, pg + page);
        let mut found = false;
        for s in &self.slots[..n] {
            let (start, end) = (
                s.start.load(Ordering::Relaxed),
                s.end.load(Ordering::Relaxed),
            );
            if start <= addr && addr < end {
                found = true;
                if s.seq.load(Ordering::Relaxed) == 0 {
                    let t = now_ns().saturating_sub(self.returned.load(Ordering::Relaxed));
                    s.touched.store(t + 1, Ordering::Relaxed);
                    let q = self.next_seq.fetch_add(1, Ordering::Relaxed);
                    s.seq.store(q + 1, Ordering::Release);
                }
                open_lo = open_lo.min(start & !(page - 1));
                open_hi = open_hi.max((end + page - 1) & !(page - 1));
            }
        }
        found.then(|| (open_lo.max(lo), open_hi.min(hi)))
    }

    /// Disarms the table; returns the touched sub-messages `(index, ns after the return)` in
    /// touch order, and the protected range the caller must reopen.
    pub fn drain(&self) -> (Vec<Touch>, Option<(usize, usize)>) {
        let prot = self.protected();
        let n = self.len.swap(0, Ordering::AcqRel);
        let mut touches: Vec<(u32, u32, u64)> = self.slots[..n]
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let q = s.seq.load(Ordering::Acquire);
                (q > 0).then(|| (q, i as u32, s.touched.load(Ordering::Relaxed) - 1))
            })
            .collect();
        touches.sort_unstable();
        (touches.into_iter().map(|(_, i, t)| (i, t)).collect(), prot)
    }
}

/// A first touch: sub-message index and nanoseconds after the call returned.
pub type Touch = (u32, u64);

/// One traced collective call on one rank (a line of `access-<rank>.jsonl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// World rank.
    pub rank: u32,
    /// Index of the call among the rank's traced calls.
    pub call: u64,
    /// `alltoall`, `alltoallv` or `bcast`.
    pub kind: String,
    /// Call site: module file name and offset, the same on every rank (`app+0x1234`).
    pub callsite: String,
    /// Number of sub-messages (blocks of an all-to-all, segments of a broadcast).
    pub subs: u32,
    /// First touches: sub-message and nanoseconds after the call returned, in touch order.
    pub touches: Vec<Touch>,
    /// Whether the touches were watched (false: a call whose received data could not be
    /// guarded, too small to fill a page or not contiguous, recorded so that every call
    /// keeps its place in the rank's sequence).
    #[serde(default = "watched")]
    pub covered: bool,
}

fn watched() -> bool {
    true
}

impl Record {
    /// The record as one line of JSON (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses the lines of an `access-<rank>.jsonl` file; errors name the line.
    /// A record names at most [`CAPACITY`] sub-messages (the tracer records no more), and
    /// its touches only those.
    pub fn parse_lines(text: &str) -> Result<Vec<Record>, String> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let r: Record =
                    serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1))?;
                if r.subs as usize > CAPACITY {
                    return Err(format!(
                        "line {}: {} sub-messages (at most {CAPACITY})",
                        i + 1,
                        r.subs
                    ));
                }
                if let Some(t) = r.touches.iter().find(|t| t.0 >= r.subs) {
                    return Err(format!(
                        "line {}: a touch of sub-message {} of {}",
                        i + 1,
                        t.0,
                        r.subs
                    ));
                }
                Ok(r)
            })
            .collect()
    }
}

/// Parses an order file (the JSON object written by `mpiscope overlap --trace-access`).
pub fn parse_orders(text: &str) -> Result<BTreeMap<String, SiteOrder>, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// The access order of one call site, agreed over its calls on every rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteOrder {
    /// `alltoall`, `alltoallv` or `bcast`.
    pub kind: String,
    /// Number of sub-messages.
    pub subs: u32,
    /// Sub-messages by mean position in the touch order (never-touched ones last, by index).
    pub order: Vec<u32>,
    /// Calls traced (all ranks).
    pub calls: u64,
    /// Fraction of calls whose touch order is exactly `order` (untouched ones excluded).
    pub agreement: f64,
    /// Mean time from the return of the call to the first touch of each sub-message, ns, by
    /// sub-message index (`None`: never touched).
    pub mean_first_touch_ns: Vec<Option<f64>>,
}

/// Consensus access order per call site (records of one call site with different
/// sub-message counts, e.g. run on sub-communicators of several sizes, are grouped by count:
/// the key is then `callsite#subs`).
pub fn orders(records: &[Record]) -> BTreeMap<String, SiteOrder> {
    let mut groups: BTreeMap<(String, u32), Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.covered) {
        groups
            .entry((r.callsite.clone(), r.subs))
            .or_default()
            .push(r);
    }
    let counts: BTreeMap<&str, usize> = groups.keys().fold(BTreeMap::new(), |mut m, (c, _)| {
        *m.entry(c.as_str()).or_insert(0) += 1;
        m
    });
    let mut out = BTreeMap::new();
    for ((site, subs), recs) in &groups {
        let n = *subs as usize;
        let mut pos_sum = vec![0.0; n];
        let mut pos_cnt = vec![0u64; n];
        let mut t_sum = vec![0.0; n];
        for r in recs {
            for (p, &(i, t)) in r.touches.iter().enumerate() {
                if (i as usize) < n {
                    pos_sum[i as usize] += p as f64;
                    pos_cnt[i as usize] += 1;
                    t_sum[i as usize] += t as f64;
                }
            }
        }
        let mean = |i: usize| (pos_cnt[i] > 0).then(|| pos_sum[i] / pos_cnt[i] as f64);
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| {
            let (ma, mb) = (mean(a as usize), mean(b as usize));
            match (ma, mb) {
                (Some(x), Some(y)) => x.total_cmp(&y).then(a.cmp(&b)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.cmp(&b),
            }
        });
        let touched: Vec<u32> = order
            .iter()
            .copied()
            .filter(|&i| pos_cnt[i as usize] > 0)
            .collect();
        let agree = recs
            .iter()
            .filter(|r| r.touches.iter().map(|t| t.0).eq(touched.iter().copied()))
            .count();
        let key = if counts[site.as_str()] > 1 {
            format!("{site}#{subs}")
        } else {
            site.clone()
        };
        out.insert(
            key,
            SiteOrder {
                kind: recs[0].kind.clone(),
                subs: *subs,
                order,
                calls: recs.len() as u64,
                agreement: agree as f64 / recs.len().max(1) as f64,
                mean_first_touch_ns: (0..n)
                    .map(|i| (pos_cnt[i] > 0).then(|| t_sum[i] / pos_cnt[i] as f64))
                    .collect(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(rank: u32, call: u64, touches: &[u32]) -> Record {
        Record {
            rank,
            call,
            kind: "alltoall".into(),
            callsite: "app+0x10".into(),
            subs: 4,
            touches: touches
                .iter()
                .enumerate()
                .map(|(k, &i)| (i, 100 * (k as u64 + 1)))
                .collect(),
            covered: true,
        }
    }

    #[test]
    fn records_beyond_the_tracer_s_capacity_are_refused() {
        let big = format!(
            r#"{{"rank":0,"call":0,"kind":"alltoall","callsite":"a+0x1","subs":{},"touches":[]}}"#,
            CAPACITY + 1
        );
        assert!(Record::parse_lines(&big)
            .unwrap_err()
            .starts_with("line 1:"));
        let stray = r#"{"rank":0,"call":0,"kind":"alltoall","callsite":"a+0x1","subs":2,"touches":[[2,5]]}"#;
        let e = Record::parse_lines(&format!("\n{stray}")).unwrap_err();
        assert!(
            e.starts_with("line 2:") && e.contains("sub-message 2 of 2"),
            "{e}"
        );
    }

    #[test]
    fn uncovered_calls_keep_their_place_but_give_no_order() {
        let mut small = rec(0, 1, &[]);
        small.covered = false;
        small.subs = 2;
        let recs = vec![rec(0, 0, &[1, 0, 2, 3]), small.clone()];
        let o = orders(&recs);
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!(o["app+0x10"].calls, 1);
        // Older records, without the field, were all watched.
        let line = r#"{"rank":0,"call":0,"kind":"bcast","callsite":"a+0x1","subs":1,"touches":[]}"#;
        assert!(Record::parse_lines(line).unwrap()[0].covered);
        let back = Record::parse_lines(&small.to_line()).unwrap();
        assert_eq!(back, vec![small]);
    }

    #[test]
    fn consensus_order_and_agreement() {
        let recs = vec![
            rec(0, 0, &[0, 1, 2, 3]),
            rec(1, 0, &[0, 1, 2, 3]),
            rec(0, 1, &[0, 2, 1, 3]),
            rec(1, 1, &[0, 1, 2, 3]),
        ];
        let o = orders(&recs);
        let s = &o["app+0x10"];
        assert_eq!(s.order, vec![0, 1, 2, 3]);
        assert_eq!(s.calls, 4);
        assert!((s.agreement - 0.75).abs() < 1e-12);
        assert_eq!(s.mean_first_touch_ns[0], Some(100.0));
    }

    #[test]
    fn untouched_blocks_go_last_and_sizes_split_sites() {
        let mut recs = vec![rec(0, 0, &[3, 1])];
        let mut other = rec(0, 1, &[1, 0]);
        other.subs = 2;
        recs.push(other);
        let o = orders(&recs);
        assert_eq!(o["app+0x10#4"].order, vec![3, 1, 0, 2]);
        assert_eq!(o["app+0x10#2"].order, vec![1, 0]);
        assert_eq!(o["app+0x10#4"].mean_first_touch_ns[0], None);
    }

    #[test]
    fn table_records_first_touches_in_order() {
        let t = AccessTable::new();
        let page = 4096;
        let base = 1 << 30;
        let subs: Vec<(usize, usize)> = (0..4)
            .map(|i| (base + i * 2 * page, base + (i + 1) * 2 * page))
            .collect();
        t.arm(&subs, base, base + 8 * page);
        assert_eq!(t.touch(base - 1, page), None);
        assert_eq!(
            t.touch(base + 5 * page + 3, page),
            Some((base + 4 * page, base + 6 * page))
        );
        assert!(t.touch(base + 5 * page, page).is_some());
        assert!(t.touch(base + 10, page).is_some());
        let (touches, prot) = t.drain();
        assert_eq!(touches.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 0]);
        assert_eq!(prot, Some((base, base + 8 * page)));
        assert_eq!(t.touch(base + 10, page), None);
    }
}
