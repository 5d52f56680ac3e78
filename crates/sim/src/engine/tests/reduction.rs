//! The reduction operator's cost (`mpiscope/reduction`): charged where a collective's
//! program combines a buffer, on the rank's core, and nothing without the key.

use super::{close, p1};
use crate::coll::{CollArgs, Collective};
use crate::config::SimConfig;
use crate::engine::Simulation;
use crate::platform::Platform;
use crate::result::SimResult;
use crate::workload::{Action, RankWorkload, ReqHandle};

fn reduction(kind: Collective, size: u32, rank: u32, bytes: u64, req: Option<ReqHandle>) -> Action {
    Action::Collective {
        args: CollArgs {
            kind,
            size,
            rank,
            root: 0,
            count: bytes / 4,
            recv_count: bytes / 4,
            dtype_size: 4,
            recv_dtype_size: 4,
            send_counts: Vec::new(),
            recv_counts: Vec::new(),
        },
        comm: 0,
        comp_flops: 0.0,
        req,
    }
}

/// Runs one script per rank (rank `r` on host `r`) with `per_byte` seconds per byte of
/// reduction and `forced` algorithms.
fn run(
    p: &Platform,
    per_byte: f64,
    forced: &[(Collective, &str)],
    scripts: Vec<Vec<Action>>,
) -> SimResult {
    let mut config = SimConfig {
        reduction_per_byte: per_byte,
        ..SimConfig::default()
    };
    for &(kind, name) in forced {
        config.forced.insert(kind, name.to_string());
    }
    let hosts = (0..scripts.len() as u32).collect();
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(super::Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    Simulation::new(p, config, hosts, w).unwrap().run().unwrap()
}

/// Recursive doubling at 2 ranks: one exchange, then each rank combines the whole vector
/// once; the rank's makespan grows by exactly `bytes x per_byte`.
#[test]
fn allreduce_pays_one_combine_per_exchange() {
    let p = p1();
    let bytes = 40_000;
    let scripts = |req: Option<ReqHandle>| -> Vec<Vec<Action>> {
        (0..2)
            .map(|r| {
                let mut s = vec![reduction(Collective::Allreduce, 2, r, bytes, req)];
                if let Some(h) = req {
                    s.push(Action::Wait { reqs: vec![h] });
                }
                s
            })
            .collect()
    };
    let forced = [(Collective::Allreduce, "rdb")];
    let extra = bytes as f64 * 1e-9;
    for req in [None, Some(3)] {
        let free = run(&p, 0.0, &forced, scripts(req));
        let paid = run(&p, 1e-9, &forced, scripts(req));
        let (f, m) = (free.makespan_s, paid.makespan_s);
        assert!(close(m, f + extra), "{req:?}: {m} vs {f} + 40 us");
        if req.is_none() {
            // Inside the MPI call: its callsite's time and the rank's communication, not
            // the program's computation.
            for r in 0..2 {
                let (a, b) = (&free.ranks[r], &paid.ranks[r]);
                assert!(close(b.comm_s, a.comm_s + extra), "{a:?} {b:?}");
                assert_eq!(b.compute_s, a.compute_s);
            }
            let seconds = |x: &SimResult| x.callsites.iter().map(|c| c.seconds).sum::<f64>();
            assert!(close(seconds(&paid), seconds(&free) + 2.0 * extra));
        }
    }
}

/// Open MPI's linear reduce at 4 ranks: the root combines three buffers (p - 1), one after
/// each receive but the first, and its own; the others combine nothing.
#[test]
fn linear_reduce_combines_at_the_root() {
    let p = four_hosts();
    let bytes = 100_000;
    let scripts = || -> Vec<Vec<Action>> {
        (0..4)
            .map(|r| vec![reduction(Collective::Reduce, 4, r, bytes, None)])
            .collect()
    };
    let forced = [(Collective::Reduce, "ompi_basic_linear")];
    let free = run(&p, 0.0, &forced, scripts());
    let paid = run(&p, 2e-9, &forced, scripts());
    let extra = paid.makespan_s - free.makespan_s;
    // Rendezvous sends (100 kB): each receive starts when the root posts it, so each of the
    // root's three combines delays what follows by its own length.
    assert!(close(extra, 3.0 * bytes as f64 * 2e-9), "{extra}");
}

/// Every reducing collective pays for its combines (with the selector's algorithms), and
/// the default configuration charges nothing.
#[test]
fn every_reducing_collective_pays() {
    let p = four_hosts();
    for kind in [
        Collective::Allreduce,
        Collective::Reduce,
        Collective::Scan,
        Collective::Exscan,
    ] {
        for bytes in [8, 4096, 300_000] {
            let scripts: Vec<Vec<Action>> = (0..4)
                .map(|r| vec![reduction(kind, 4, r, bytes, None)])
                .collect();
            let a = run(&p, 0.0, &[], scripts.clone());
            let b = run(&p, 1e-10, &[], scripts);
            assert!(
                b.makespan_s > a.makespan_s,
                "{kind:?} {bytes}: {} vs {}",
                b.makespan_s,
                a.makespan_s
            );
        }
    }
    assert_eq!(SimConfig::default().reduction_per_byte, 0.0);
}

/// Four hosts, each pair linked by a link of its own.
fn four_hosts() -> Platform {
    use super::{host, link, Table};
    let mut t = std::collections::HashMap::new();
    let mut links = Vec::new();
    for a in 0..4u32 {
        for b in (a + 1)..4 {
            let id = links.len() as u32;
            links.push(link(&format!("l{a}{b}"), 1e-6));
            t.insert((a, b), vec![id]);
            t.insert((b, a), vec![id]);
        }
    }
    Platform::new(
        (0..4).map(|i| host(&format!("h{i}"), 1)).collect(),
        links,
        Box::new(Table(t)),
    )
}
