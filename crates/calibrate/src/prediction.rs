//! Closing the loop: the benchmark's measured times next to what the simulator predicts for
//! the same run. Input: `mpiscope-bench --json` results, and `mpiscope replay --json
//! --callsites-by-size` of a trace of that very run. Each measured operation and size is
//! matched to the callsite (and message size) of its MPI call in the replay: the callsite
//! of the operation's function whose calls are the timed loop's (at least
//! `np x iterations x reps` of them; the benchmark's own bookkeeping calls are fewer), the
//! k-th smallest size going with the k-th smallest length. The prediction is the slowest
//! rank's mean time per call there, what the benchmark's per-iteration slowest-rank
//! samples measure. SEND & RECV is predicted as the time of its send and receive
//! callsites per round trip; BARRIER and the pairwise operations other than SEND & RECV
//! are not matched (their calls cannot be told apart from the method's own barriers).

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
            // A round trip: both ranks are inside MPI for all of it, so the pair's send and
            // receive time summed over both ranks is two round trips.
            let parts: Vec<Vec<Vec<Site>>> = fns.iter().map(|f| sized(f, 2 * per_rank)).collect();
            parts.iter().all(|p| p.len() == lengths.len()).then(|| {
                let total = |g: &[Site], f: fn(&Site) -> f64| g.iter().map(f).sum::<f64>();
                let seconds: f64 = parts.iter().map(|p| total(&p[index], |s| s.seconds)).sum();
                seconds / total(&parts[0][index], |s| s.calls as f64)
            })
        };
        out.push(Comparison {
            operation: row.operation.clone(),
            key: row.key.clone(),
            ints,
            measured_median_s: row.time.median,
            measured_mean_s: row.time.mean,
            predicted_s: predicted,
            error: predicted.map(|p| p / row.time.median - 1.0),
        });
    }
    Ok(out)
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
                row("BROADCAST", "broadcast", 1, 1e-6),
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
            // Round trips: 11 per rank pair; 2 ranks x 11 sends and receives, two lines.
            site("MPI_Send", 4, 11, 22e-6, 0.0),
            site("MPI_Send", 4, 11, 22e-6, 0.0),
            site("MPI_Recv", 4, 22, 44e-6, 0.0),
        ]})
        .to_string();
        let c = compare(&bench(), "b.json", &replay, "r.json").unwrap();
        let get = |k: &str, n: u64| c.iter().find(|x| x.key == k && x.ints == n).unwrap();
        assert!((get("allreduce", 1).predicted_s.unwrap() - 2.2e-6).abs() < 1e-15);
        assert!((get("allreduce", 1).error.unwrap() - 0.1).abs() < 1e-9);
        assert!((get("allreduce", 1024).predicted_s.unwrap() - 11e-6).abs() < 1e-15);
        // 88 us of send and receive time over 22 sends: 4 us per round trip.
        assert!((get("send_recv", 1).predicted_s.unwrap() - 4e-6).abs() < 1e-15);
        assert!((get("broadcast", 1).predicted_s.unwrap() - 1.5e-6).abs() < 1e-15);
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
