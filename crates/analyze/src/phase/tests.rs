use mpiscope_trace::RunDir;

use super::*;
use crate::profile::{profile_with, ProfileOptions};
use crate::testutil::{write_run, RankFile};

/// Microseconds to ns.
const US: u64 = 1_000;

/// Where a synthetic rank's loop lies: the entry of its first call, the exit of its last.
#[derive(Debug, Clone, Copy)]
struct Truth {
    start: u64,
    end: u64,
}

/// A code with set-up, a time-step loop and tear-down, rank `rank` starting `rank` ms late:
/// MPI_Init, six set-up collectives 50 ms apart, `steps` steps of (100 us compute,
/// Allreduce, 40 us compute, Alltoall, Allgatherv, Reduce_scatter, a back-to-back
/// MPI_Comm_rank 100 ns before the Allreduce), with a Bcast every tenth step, then a
/// Reduce and MPI_Finalize.
fn code(r: &mut RankFile, rank: u32, steps: u64) -> Truth {
    let mut t = u64::from(rank) * 1_000 * US;
    let mut call = |r: &mut RankFile, name: &str, gap: u64, dur: u64| {
        let enter = t + gap;
        r.call(name, enter, enter + dur, &[], &[]);
        t = enter + dur;
        (enter, enter + dur)
    };
    call(r, "MPI_Init", 0, 1_000 * US);
    for name in [
        "MPI_Scan",
        "MPI_Gather",
        "MPI_Scatter",
        "MPI_Allgather",
        "MPI_Scan",
        "MPI_Gatherv",
    ] {
        call(r, name, 50_000 * US, 5 * US);
    }
    let mut truth = Truth { start: 0, end: 0 };
    for step in 0..steps {
        call(r, "MPI_Comm_rank", 100 * US, 100);
        let (enter, _) = call(r, "MPI_Allreduce", 100, 3 * US);
        if step == 0 {
            truth.start = enter;
        }
        call(r, "MPI_Alltoall", 40 * US, 7 * US);
        call(r, "MPI_Allgatherv", 20 * US, 2 * US);
        let (_, exit) = call(r, "MPI_Reduce_scatter", 30 * US, 4 * US);
        truth.end = exit;
        if step % 10 == 9 {
            truth.end = call(r, "MPI_Bcast", 2 * US, 2 * US).1;
        }
    }
    call(r, "MPI_Reduce", 80_000 * US, 5 * US);
    call(r, "MPI_Finalize", 1_000 * US, 500 * US);
    truth
}

fn run_of(size: u32, steps: u64) -> (tempfile::TempDir, RunDir, Vec<Truth>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut truths = Vec::new();
    write_run(dir.path(), size, |rank, r| {
        truths.push(code(r, rank, steps))
    });
    let run = RunDir::open(dir.path()).expect("a run");
    (dir, run, truths)
}

#[test]
fn the_main_loop_of_each_rank_is_its_time_step() {
    let (_d, run, truths) = run_of(2, 60);
    let all = resolve(&run, Phase::All).expect("the whole run");
    assert_eq!(all, Resolved::default());
    assert!(all.windows(Window::ALL).is_all());
    let r = resolve(&run, Phase::Loop).expect("a main loop");
    assert_eq!(r.ranges.len(), 2);
    for (range, truth) in r.ranges.iter().zip(&truths) {
        assert_eq!(range.kind, RangeKind::Calls, "{range:?}");
        // The loop may be anchored at either call of a step: it starts in its first step,
        // ends in its last, and leaves the set-up and the tear-down out.
        assert!(
            range.start_ns >= truth.start && range.start_ns < truth.start + 200 * US,
            "{range:?} {truth:?}"
        );
        assert!(
            range.end_ns <= truth.end && range.end_ns + 200 * US > truth.end,
            "{range:?} {truth:?}"
        );
        assert!(range.iterations >= 6, "{range:?}");
        assert!(range.symbol_share > 0.9, "{range:?}");
        assert!(range.first_event > 7 && range.last_event > range.first_event);
    }
    // Each rank has its own range: rank 1 started 1 ms later.
    let w = r.windows(Window::ALL);
    assert_eq!(w.of(1).start - w.of(0).start, 1_000 * US);
    assert!(!w.is_all());
    // Within a window of the run, the intersection.
    let outer = Window {
        start: 0,
        end: w.of(1).start + 10,
    };
    let inner = r.windows(outer);
    assert_eq!(
        inner.of(0),
        Window {
            start: w.of(0).start,
            end: outer.end
        }
    );
    assert!(!inner.of(1).contains(w.of(1).start + 10));
    let text = r.to_text();
    assert!(
        text.contains("rank 1: ") && text.contains("iterations"),
        "{text}"
    );
}

#[test]
fn bursts_in_the_loop_leave_the_set_up_out() {
    let steps = 60;
    let (_d, run, _) = run_of(2, steps);
    let whole = crate::profile::profile(&run).expect("a profile");
    let phase = resolve(&run, Phase::Loop).expect("a main loop");
    let o = ProfileOptions {
        windows: phase.windows(Window::ALL),
        phase: phase.clone(),
        min_gap_ns: 0,
    };
    let p = profile_with(&run, &o).expect("a profile of the loop");
    assert_eq!(p.phase, Phase::Loop);
    assert_eq!(p.phase_ranges, phase.ranges);
    // The whole run's longest bursts are the set-up's 50 ms; none is in the loop.
    assert!(whole.bursts.p99_s >= 0.049 || whole.per_rank[0].compute_s > 0.3);
    for r in &p.per_rank {
        assert!(r.compute_s < 0.012, "{r:?}");
        assert!(r.burst_mean_s < 60e-6, "{r:?}");
        assert!(r.bursts >= 5 * (steps - 2), "{r:?}");
    }
    assert!(p.bursts.count < whole.bursts.count);
    assert!(p.bursts.mean_s < whole.bursts.mean_s / 10.0);
    // No balance or endings for a part of the run, as for a window.
    let rep = crate::report::report(
        &run,
        &crate::report::ReportOptions {
            phase: phase.clone(),
            ..Default::default()
        },
    )
    .expect("a report");
    assert!(rep.balance.is_none() && rep.endings.is_none());
    let json = serde_json::to_value(&rep).expect("json");
    assert_eq!(json["phase"], "loop");
    assert_eq!(json["phase_ranges"][1]["rank"], 1);
    assert_eq!(json["phase_ranges"][0]["kind"], "calls");
    assert!(json.get("burst_min_gap_s").is_none());
    let whole_json =
        serde_json::to_value(crate::report::report(&run, &Default::default()).expect("a report"))
            .expect("json");
    assert_eq!(whole_json["phase"], "all");
    assert!(whole_json.get("phase_ranges").is_none());
}

#[test]
fn a_minimum_gap_leaves_back_to_back_calls_out_of_the_bursts() {
    let (_d, run, _) = run_of(1, 40);
    let phase = resolve(&run, Phase::Loop).expect("a main loop");
    let with = |min_gap_ns| {
        profile_with(
            &run,
            &ProfileOptions {
                windows: phase.windows(Window::ALL),
                phase: phase.clone(),
                min_gap_ns,
            },
        )
        .expect("a profile")
    };
    let all = with(0);
    let gap = with(1_000);
    // Every step has a 100 ns gap (MPI_Comm_rank to MPI_Allreduce): the harmonic mean is
    // made of them, until they are left out.
    assert!(all.bursts.harmonic_mean_s < 1e-6, "{:?}", all.bursts);
    assert!(gap.bursts.harmonic_mean_s > 2e-6, "{:?}", gap.bursts);
    assert!(gap.bursts.count + 39 <= all.bursts.count);
    assert!(gap.bursts.mean_s > all.bursts.mean_s);
    // The compute time does not change: only the burst statistics.
    assert_eq!(all.per_rank[0].compute_s, gap.per_rank[0].compute_s);
    assert_eq!(gap.burst_min_gap_s, 1e-6);
    // Without a minimum gap the mean is the compute time over the bursts, as before.
    let r = &all.per_rank[0];
    assert_eq!(r.burst_mean_s, r.compute_s / r.bursts as f64);
}

#[test]
fn no_loop_is_an_error_naming_the_run_and_the_rank() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_run(dir.path(), 2, |rank, r| {
        // Calls 1 ms apart, none repeated: no loop, no burst holding half the time.
        for (i, name) in ["MPI_Bcast", "MPI_Gather", "MPI_Scatter", "MPI_Reduce"]
            .into_iter()
            .enumerate()
        {
            let t = (i as u64 + 1) * 1_000 * US + u64::from(rank);
            r.call(name, t, t + 10, &[], &[]);
        }
    });
    let run = RunDir::open(dir.path()).expect("a run");
    let e = resolve(&run, Phase::Loop)
        .expect_err("no main loop")
        .to_string();
    assert!(e.starts_with("no main loop found in "), "{e}");
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
    assert!(e.contains("rank 0:"), "{e}");
    // A rank without communication calls says so.
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_run(dir.path(), 1, |_, r| {
        r.call("MPI_Init", 0, 10, &[], &[]);
        r.call("MPI_Comm_rank", 100, 110, &[], &[]);
    });
    let run = RunDir::open(dir.path()).expect("a run");
    let e = resolve(&run, Phase::Loop)
        .expect_err("no main loop")
        .to_string();
    assert!(e.contains("rank 0 makes no communication call"), "{e}");
}

#[test]
fn a_loop_without_calls_is_its_long_burst() {
    // One rank: a few set-up collectives, then 2 s of computation with no MPI call, then
    // the closing collectives (a code on one rank, whose time step exchanges nothing).
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_run(dir.path(), 1, |_, r| {
        r.call("MPI_Init", 0, 10, &[], &[]);
        let mut t = 1_000 * US;
        for name in ["MPI_Bcast", "MPI_Allreduce", "MPI_Bcast", "MPI_Allreduce"] {
            r.call(name, t, t + 5, &[], &[]);
            t += 20 * US;
        }
        r.call(
            "MPI_Allreduce",
            2_000_000 * US,
            2_000_000 * US + 4,
            &[],
            &[],
        );
        r.call("MPI_Barrier", 2_000_100 * US, 2_000_100 * US + 1, &[], &[]);
    });
    let run = RunDir::open(dir.path()).expect("a run");
    let r = resolve(&run, Phase::Loop).expect("a burst loop");
    let range = &r.ranges[0];
    assert_eq!(range.kind, RangeKind::Burst, "{range:?}");
    assert_eq!((range.first_event, range.last_event), (4, 5));
    assert_eq!(range.start_ns, 1_060 * US);
    assert_eq!(range.end_ns, 2_000_000 * US + 4);
    let p = profile_with(
        &run,
        &ProfileOptions {
            windows: r.windows(Window::ALL),
            phase: r.clone(),
            min_gap_ns: 0,
        },
    )
    .expect("a profile");
    assert_eq!(p.bursts.count, 1);
    assert!(
        (p.bursts.harmonic_mean_s - 1.998_94).abs() < 1e-3,
        "{:?}",
        p.bursts
    );
}

#[test]
fn phases_parse_by_name() {
    assert_eq!(Phase::parse("loop"), Ok(Phase::Loop));
    assert_eq!(Phase::parse("all"), Ok(Phase::All));
    assert!(Phase::parse("main")
        .unwrap_err()
        .contains("`all` or `loop`"));
    let w = Window { start: 10, end: 20 };
    let empty = w.intersect(&Window { start: 30, end: 40 });
    assert!(!empty.contains(30) && !empty.contains(20) && !empty.contains(10));
}

#[test]
fn the_steps_before_the_first_anchor_are_the_loops() {
    // Iterations cut at `9`: the 4 symbols before the first `9` repeat the end of an
    // iteration (`1 2 3 4`) and are the loop's; `7` before them is not.
    let seq: Vec<(u32, f64)> = [7, 1, 2, 3, 4]
        .into_iter()
        .chain((0..5).flat_map(|_| [9, 1, 2, 3, 4]))
        .map(|s| (s, 1.0))
        .collect();
    // The loop found from symbol 5 (the first 9), 25 symbols.
    assert_eq!(leading_part(&seq, 5, 25, 9), 4);
    assert_eq!(leading_part(&seq, 1, 5, 9), 0);
    // Never a whole iteration or more (the loop search would have counted it).
    let seq: Vec<(u32, f64)> = (0..4).flat_map(|_| [9, 1]).map(|s| (s, 1.0)).collect();
    assert_eq!(leading_part(&seq, 4, 4, 9), 1);
}
