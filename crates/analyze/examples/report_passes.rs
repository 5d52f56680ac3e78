//! Times the passes of `mpiscope report` over a run, each on its own (CPU time of the
//! process, all threads): the statistics (`profile`), the communication matrix (`matrix`)
//! and the balance (`balance`). Usage: `cargo run --release -p mpiscope-analyze --example
//! report_passes -- RUN_DIR [REPEATS] [PASSES]`, PASSES a comma-separated subset of
//! `profile,matrix,balance` (all by default); prints the median of each and, for the
//! statistics, events per second of CPU time.

use std::time::Instant;

use mpiscope_analyze::profile::{profile, Window};
use mpiscope_trace::RunDir;

/// CPU time of this process, seconds (user + system, from /proc/self/stat).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn median(mut v: Vec<(f64, f64)>) -> (f64, f64) {
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .ok_or("usage: report_passes RUN_DIR [REPEATS]")?;
    let repeats: usize = args.get(2).map_or(Ok(3), |r| r.parse())?;
    let passes = args.get(3).map_or("profile,matrix,balance", |p| p.as_str());
    let want = |p: &str| passes.split(',').any(|x| x == p);
    let run = RunDir::open(dir)?;
    let mut times: [Vec<(f64, f64)>; 3] = Default::default();
    for _ in 0..repeats {
        let (w, c) = (Instant::now(), cpu_s());
        let p = profile(&run)?;
        times[0].push((w.elapsed().as_secs_f64(), cpu_s() - c));
        let (w, c) = (Instant::now(), cpu_s());
        if want("matrix") {
            let m = mpiscope_analyze::matrix::matrix(&run, &p.p2p, &Window::ALL)?;
            times[1].push((w.elapsed().as_secs_f64(), cpu_s() - c));
            assert!(m.is_some());
        }
        let (w, c) = (Instant::now(), cpu_s());
        if want("balance") {
            mpiscope_analyze::balance::balance(&run, &p.per_rank, &p.p2p, None)?;
            times[2].push((w.elapsed().as_secs_f64(), cpu_s() - c));
        }
    }
    let events = profile(&run)?.events;
    println!("{events} events, {repeats} repeats, medians:");
    for (name, t) in ["profile", "matrix", "balance"].iter().zip(times) {
        if t.is_empty() {
            continue;
        }
        let (wall, cpu) = median(t.clone());
        print!("{name:<8} {wall:.3} s wall {cpu:.3} s CPU");
        // CPU time comes in 10 ms ticks: the rate is taken over every repeat.
        let total: f64 = t.iter().map(|x| x.1).sum();
        if *name == "profile" && total > 0.0 {
            let rate = events as f64 * t.len() as f64 / total / 1e6;
            print!(" ({rate:.1} M events/s per core over {total:.2} s CPU)");
        }
        println!();
    }
    Ok(())
}
