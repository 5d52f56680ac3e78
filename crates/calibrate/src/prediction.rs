//! Closing the loop: the benchmark's measured times next to what the simulator predicts for
//! the same run. Input: `mpiscope-bench --json` results, and `mpiscope replay --json
//! --callsites-by-size` of a trace of that very run. Each measured operation and size is
//! matched to the callsite (and message size) of its MPI call in the replay: the callsite
//! of the operation's function whose calls are the timed loop's (at least
//! `np x iterations x reps` of them; the benchmark's own bookkeeping calls are fewer), the
//! k-th smallest size going with the k-th smallest length. The prediction is the slowest
//! rank's mean time per call there, what the benchmark's per-iteration slowest-rank
//! samples measure; when the benchmark also timed each operation alone (`--in-call`: no
//! trailing barrier, no barrier correction, the statistic closest to the replay's time
//! inside the call), the prediction is compared with that too. SEND & RECV is predicted as the slowest rank's send and receive time
//! per round trip: per rank, the sum of the mean times of its send and receive callsites
//! (rank 0 is inside MPI for the whole round trip; rank 1 only from its receive on, so the
//! time of both ranks together is not two round trips when the sends return at once);
//! BARRIER and the pairwise operations other than SEND & RECV are not matched (their calls
//! cannot be told apart from the method's own barriers).

use serde::{Deserialize, Serialize};

use crate::CalibrationError;

/// One operation and length, measured and predicted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// [MPITEST]'s name (`ALLREDUCE`).
    pub operation: String,
    /// Short name (`allreduce`).
    pub key: String,
    /// Length in integers.
    pub ints: u64,
    /// Measured median, seconds (slowest rank per iteration, barrier-corrected).
    pub measured_median_s: f64,
    /// Measured mean, seconds.
    pub measured_mean_s: f64,
    /// Predicted time, seconds (`None` when no callsite matched).
    pub predicted_s: Option<f64>,
    /// `predicted / measured median - 1`.
    pub error: Option<f64>,
    /// Measured median of the operation alone (`mpiscope-bench --in-call`: before the
    /// trailing barrier, no barrier correction), seconds; what the replay's time inside the
    /// call predicts most directly.
    pub measured_in_call_s: Option<f64>,
    /// `predicted / measured in call - 1`.
    pub error_in_call: Option<f64>,
}

#[derive(Deserialize)]
struct Replay {
    callsites: Vec<Site>,
}

#[derive(Deserialize, Clone)]
struct Site {
    calls: u64,
    seconds: f64,
    slowest_rank_mean_s: f64,
    #[serde(default)]
    slowest_rank: Option<u32>,
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    bytes: Option<u64>,
}

/// The MPI functions whose time makes one instance of the operation `key`.
fn functions(key: &str) -> &'static [&'static str] {
    match key {
        "allreduce" => &["MPI_Allreduce"],
        "reduce" => &["MPI_Reduce"],
        "broadcast" => &["MPI_Bcast"],
        "gather" => &["MPI_Gather"],
        "allgather" => &["MPI_Allgather"],
        "alltoall" => &["MPI_Alltoall"],
        "send_recv" => &["MPI_Send", "MPI_Recv"],
        _ => &[],
    }
}

fn parse<'a, T: Deserialize<'a>>(text: &'a str, path: &str) -> Result<T, CalibrationError> {
    serde_json::from_str(text).map_err(|e| CalibrationError::Input {
        path: path.to_string(),
        message: e.to_string(),
    })
}

/// Matches every measured collective (and SEND & RECV) of `bench` (text of `bench_path`) to
/// the replay `replay` (text of `replay_path`); rows without a match have no prediction.
pub fn compare(
    bench: &str,
    bench_path: &str,
    replay: &str,
    replay_path: &str,
) -> Result<Vec<Comparison>, CalibrationError> {
    let b = crate::bench_json::BenchResults::parse(bench, bench_path)?;
    let r: Replay = parse(replay, replay_path)?;
    // Calls of one operation and length by one rank, and the timed ones among them.
    let p = &b.params;
    let per_rank = p.r.max(1) * (p.warmup + p.long_iters * p.reps.max(1));
    let timed_per_rank = p.r.max(1) * p.long_iters * p.reps.max(1);
    // Per function: the calls of each size (all callsites), by increasing size; sizes with
    // another number of calls than `calls` are someone else's.
    let sized = |function: &str, calls: u64| -> Vec<Vec<Site>> {
        let mut by_size: std::collections::BTreeMap<u64, Vec<Site>> = Default::default();
        for s in r
            .callsites
            .iter()
            .filter(|s| s.function.as_deref() == Some(function))
        {
            by_size
                .entry(s.bytes.unwrap_or(0))
                .or_default()
                .push(s.clone());
        }
        by_size
            .into_values()
            .filter(|g| g.iter().map(|s| s.calls).sum::<u64>() == calls)
            .collect()
    };
    // Last repeat of each (operation, length): the measurement the report ends with.
    let mut rows: Vec<&crate::bench_json::BenchRow> = Vec::new();
    for row in b
        .results
        .iter()
        .filter(|x| x.skipped.is_none() && x.ints.is_some())
    {
        match rows
            .iter_mut()
            .find(|x| x.key == row.key && x.ints == row.ints)
        {
            Some(x) => *x = row,
            None => rows.push(row),
        }
    }
    let mut out = Vec::new();
    for row in rows {
        let fns = functions(&row.key);
        if fns.is_empty() {
            continue;
        }
        let ints = row.ints.unwrap_or(0);
        let mut lengths: Vec<u64> = b
            .results
            .iter()
            .filter(|x| x.key == row.key && x.skipped.is_none())
            .filter_map(|x| x.ints)
            .collect();
        lengths.sort_unstable();
        lengths.dedup();
        let index = lengths.iter().position(|&n| n == ints).unwrap_or(0);
        let predicted = if fns.len() == 1 {
            let groups = sized(fns[0], u64::from(b.np) * per_rank);
            let share = timed_per_rank;
            (groups.len() == lengths.len()).then(|| {
                groups[index]
                    .iter()
                    .filter(|s| s.calls >= share)
                    .map(|s| s.slowest_rank_mean_s)
                    .fold(0.0, f64::max)
            })
        } else {
            let parts: Vec<Vec<Vec<Site>>> = fns.iter().map(|f| sized(f, 2 * per_rank)).collect();
            parts
                .iter()
                .all(|p| p.len() == lengths.len())
                .then(|| round_trip(parts.iter().flat_map(|p| &p[index])))
        };
        let in_call = row.in_call.as_ref().map(|t| t.median);
        out.push(Comparison {
            operation: row.operation.clone(),
            key: row.key.clone(),
            ints,
            measured_median_s: row.time.median,
            measured_mean_s: row.time.mean,
            predicted_s: predicted,
            error: predicted.map(|p| p / row.time.median - 1.0),
            measured_in_call_s: in_call,
            error_in_call: predicted.zip(in_call).map(|(p, m)| p / m - 1.0),
        });
    }
    Ok(out)
}

/// The slowest rank's send and receive time per round trip, from the callsites of one
/// size (one send and one receive per rank and round trip): per rank, the sum of its
/// callsites' mean times. Without the ranks (older replay reports), the time of both ranks
/// per send, which is the round trip only when both are inside MPI for all of it.
fn round_trip<'a>(sites: impl Iterator<Item = &'a Site> + Clone) -> f64 {
    let mut per_rank: std::collections::BTreeMap<u32, f64> = Default::default();
    let mut ranked = true;
    for s in sites.clone() {
        match s.slowest_rank {
            Some(r) => *per_rank.entry(r).or_default() += s.slowest_rank_mean_s,
            None => ranked = false,
        }
    }
    if ranked && !per_rank.is_empty() {
        return per_rank.into_values().fold(0.0, f64::max);
    }
    let seconds: f64 = sites.clone().map(|s| s.seconds).sum();
    let sends: u64 = sites
        .filter(|s| s.function.as_deref() == Some("MPI_Send"))
        .map(|s| s.calls)
        .sum();
    seconds / sends.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bench() -> String {
        let row = |op: &str, key: &str, ints: u64, median: f64| {
            json!({"operation": op, "key": key, "ints": ints,
                   "time": {"mean": median * 1.1, "median": median}})
        };
        json!({
            "np": 2,
            "params": {"long_iters": 10, "reps": 1, "r": 1, "warmup": 1},
            "results": [
                {"operation": "BARRIER", "key": "barrier", "ints": null,
                 "time": {"mean": 1e-6, "median": 1e-6}},
                row("ALLREDUCE", "allreduce", 1, 2e-6),
                row("ALLREDUCE", "allreduce", 1024, 10e-6),
                {"operation": "BROADCAST", "key": "broadcast", "ints": 1,
                 "time": {"mean": 1.1e-6, "median": 1e-6}, "in_call": {"median": 2e-6}},
                row("SEND & RECV", "send_recv", 1, 4e-6),
            ]
        })
        .to_string()
    }

    fn site(
        function: &str,
        bytes: u64,
        calls: u64,
        seconds: f64,
        slowest: f64,
    ) -> serde_json::Value {
        json!({"callsite": 1, "calls": calls, "seconds": seconds, "slowest_rank": 0,
               "slowest_rank_mean_s": slowest, "function": function, "bytes": bytes})
    }

    /// A callsite of one rank (`slowest_rank`), `calls` calls of `mean` seconds each.
    fn ranked(function: &str, rank: u32, calls: u64, mean: f64) -> serde_json::Value {
        json!({"callsite": 2 + rank, "calls": calls, "seconds": mean * calls as f64,
               "slowest_rank": rank, "slowest_rank_mean_s": mean, "function": function,
               "bytes": 4})
    }

    #[test]
    fn matches_sizes_in_order_and_ignores_bookkeeping_calls() {
        let replay = json!({"callsites": [
            // 2 ranks x (1 warm-up + 10 timed) calls per size.
            site("MPI_Allreduce", 4096, 22, 0.0, 11e-6),
            site("MPI_Allreduce", 4, 20, 0.0, 2.2e-6),
            // The warm-up's own callsite (few calls, slow) and a bookkeeping call.
            site("MPI_Allreduce", 4, 2, 0.0, 9.0),
            site("MPI_Allreduce", 8, 30, 0.0, 9.0),
            // Root and other ranks at different lines: the slower one counts.
            site("MPI_Bcast", 4, 11, 0.0, 0.5e-6),
            site("MPI_Bcast", 4, 11, 0.0, 1.5e-6),
            // Round trips: 11 per rank pair; each rank's send and receive at lines of their
            // own. Rank 0 is in MPI for the whole round trip (4 us), rank 1 from its receive.
            ranked("MPI_Send", 0, 11, 0.2e-6),
            ranked("MPI_Recv", 0, 11, 3.8e-6),
            ranked("MPI_Recv", 1, 11, 2.0e-6),
            ranked("MPI_Send", 1, 11, 0.1e-6),
        ]})
        .to_string();
        let c = compare(&bench(), "b.json", &replay, "r.json").unwrap();
        let get = |k: &str, n: u64| c.iter().find(|x| x.key == k && x.ints == n).unwrap();
        assert!((get("allreduce", 1).predicted_s.unwrap() - 2.2e-6).abs() < 1e-15);
        assert!((get("allreduce", 1).error.unwrap() - 0.1).abs() < 1e-9);
        assert!((get("allreduce", 1024).predicted_s.unwrap() - 11e-6).abs() < 1e-15);
        // Rank 0's 0.2 + 3.8 us, not both ranks' 6.1 us over two sends.
        assert!((get("send_recv", 1).predicted_s.unwrap() - 4e-6).abs() < 1e-15);
        // A replay report without the ranks: both ranks' time per send.
        let old = json!({"callsites": [
            {"calls": 11, "seconds": 22e-6, "slowest_rank_mean_s": 0.0,
             "function": "MPI_Send", "bytes": 4},
            {"calls": 11, "seconds": 22e-6, "slowest_rank_mean_s": 0.0,
             "function": "MPI_Send", "bytes": 4},
            {"calls": 22, "seconds": 44e-6, "slowest_rank_mean_s": 0.0,
             "function": "MPI_Recv", "bytes": 4},
        ]})
        .to_string();
        let c = compare(&bench(), "b.json", &old, "r.json").unwrap();
        let rt = c.iter().find(|x| x.key == "send_recv").unwrap();
        assert!((rt.predicted_s.unwrap() - 4e-6).abs() < 1e-15);
        assert!((get("broadcast", 1).predicted_s.unwrap() - 1.5e-6).abs() < 1e-15);
        // Measured alone too (`--in-call`): the error against it beside MPITEST's.
        assert_eq!(get("broadcast", 1).measured_in_call_s, Some(2e-6));
        assert!((get("broadcast", 1).error_in_call.unwrap() + 0.25).abs() < 1e-9);
        assert_eq!(get("allreduce", 1).error_in_call, None);
        assert!(c.iter().all(|x| x.key != "barrier"));
        // Without the replay's calls a row is measured, not predicted.
        let none = json!({"callsites": []}).to_string();
        let c = compare(&bench(), "b.json", &none, "r.json").unwrap();
        assert!(c.iter().all(|x| x.predicted_s.is_none()) && c.len() == 4);
    }

    #[test]
    fn bad_input_names_the_file() {
        let e = compare("{}", "b.json", "{}", "r.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.json"), "{e}");
        let e = compare(&bench(), "b.json", "[]", "r.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.json"), "{e}");
    }
}
