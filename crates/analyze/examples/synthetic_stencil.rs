//! Writes a synthetic run directory of a 1-D halo-exchange stencil: the trace of a program
//! that was never run, for testing and measuring what reads traces at scales this machine
//! cannot run for real (1,024 ranks, 10 M events).
//!
//! `cargo run --release -p mpiscope-analyze --example synthetic_stencil -- DIR RANKS ITERATIONS`
//!
//! Every rank: `MPI_Init`; per iteration compute (150 to 200 us, rank 513 60 us more: a
//! known imbalance), `MPI_Irecv` from both neighbours, `MPI_Isend` to both, `MPI_Waitall`
//! until the later neighbour has sent (plus 8 us), and every tenth iteration an
//! `MPI_Allreduce` that all ranks leave together; `MPI_Finalize`. Iterations start every
//! 320 us on every rank, so a rank's times follow from its neighbours' without simulating
//! the others. Five or six events per iteration: 1,024 ranks of 1,900 iterations are about
//! 10 M events. The manifest says the run is synthetic.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use mpiscope_trace::{
    Args, CallDef, CommDef, CommKind, Definition, Lang, ListKind, RankInfo, RankWriter, RawEvent,
    RawList, Slot, Trailer, NO_CORE,
};

const PERIOD: u64 = 320_000;
const INIT: u64 = 50_000_000;
const BYTES: i64 = 8192;

/// A deterministic pseudo-random value in [0, 1) for (rank, iteration).
fn noise(rank: u32, it: u64) -> f64 {
    let mut h = (u64::from(rank) << 32 | it).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    (h % 10_000) as f64 / 10_000.0
}

/// When `rank` starts sending in iteration `it` (after its compute).
fn send_at(rank: u32, it: u64) -> u64 {
    let extra = if rank == 513 { 60_000 } else { 0 };
    INIT + it * PERIOD + 150_000 + (50_000.0 * noise(rank, it)) as u64 + extra
}

const CALLS: [&str; 7] = [
    "MPI_Init",
    "MPI_Irecv",
    "MPI_Isend",
    "MPI_Waitall",
    "MPI_Allreduce",
    "MPI_Barrier",
    "MPI_Finalize",
];

fn write_rank(dir: &Path, rank: u32, size: u32, iterations: u64) -> std::io::Result<()> {
    let info = RankInfo {
        pid: 10_000 + rank,
        host: format!("node{:03}", rank / 32),
        core: Some(rank % 32),
        executable: "/synthetic/stencil".into(),
        ..RankInfo::synthetic(rank, size)
    };
    let f = BufWriter::new(File::create(
        dir.join(mpiscope_trace::rank_file_name(rank)),
    )?);
    let mut w = RankWriter::new(f, &info, 1 << 16)?;
    w.define(&[Definition::Comm(CommDef {
        id: 0,
        key: 11,
        kind: CommKind::World,
        size,
        ranks: vec![],
        remote: vec![],
    })])?;
    let defs: Vec<Definition> = CALLS
        .iter()
        .enumerate()
        .map(|(i, n)| {
            Definition::Call(CallDef {
                id: i as u32 + 1,
                name: (*n).into(),
                lang: Lang::C,
            })
        })
        .collect();
    w.define(&defs)?;
    let mut events = 0u64;
    let mut ev = |w: &mut RankWriter<BufWriter<File>>,
                  call: u32,
                  t: (u64, u64),
                  args: &[(Slot, i64)],
                  lists: &[RawList]|
     -> std::io::Result<()> {
        let mut a = Args::EMPTY;
        for &(s, v) in args {
            a.set(s, v);
        }
        events += 1;
        w.event(&RawEvent {
            call,
            t_enter: t.0,
            t_exit: t.1,
            callsite: 0,
            core: NO_CORE,
            ret: 0,
            skipped: 0,
            args: &a,
            lists,
            cpu: None,
        })
    };
    ev(
        &mut w,
        1,
        (1_000 + u64::from(rank) * 10, INIT - 1_000),
        &[],
        &[],
    )?;
    let left = (rank + size - 1) % size;
    let right = (rank + 1) % size;
    let mut req = 1i64;
    for it in 0..iterations {
        let s = send_at(rank, it);
        let p2p = |peer: u32, tag: i64| {
            [
                (Slot::Peer, i64::from(peer)),
                (Slot::Tag, tag),
                (Slot::Comm, 0),
                (Slot::Count, BYTES / 8),
                (Slot::DtypeSize, 8),
                (Slot::Bytes, BYTES),
            ]
        };
        let mut done = Vec::new();
        for (k, peer) in [left, right].into_iter().enumerate() {
            let mut a = p2p(peer, 1).to_vec();
            a.push((Slot::Request, req));
            let t = s + k as u64 * 1_000;
            ev(&mut w, 2, (t, t + 600), &a, &[])?;
            done.extend([req, i64::from(peer), 1, BYTES]);
            req += 1;
        }
        for (k, peer) in [left, right].into_iter().enumerate() {
            let mut a = p2p(peer, 1).to_vec();
            a.push((Slot::Request, req));
            let t = s + 2_000 + k as u64 * 1_500;
            ev(&mut w, 3, (t, t + 1_200), &a, &[])?;
            req += 1;
        }
        let arrived = send_at(left, it).max(send_at(right, it)) + 3_500 + 8_000;
        let wait_from = s + 5_000;
        let reqs: Vec<i64> = (req - 4..req).collect();
        ev(
            &mut w,
            4,
            (wait_from, arrived.max(wait_from + 500)),
            &[],
            &[
                RawList {
                    kind: ListKind::Requests,
                    values: &reqs,
                },
                RawList {
                    kind: ListKind::Completions,
                    values: &done,
                },
            ],
        )?;
        if it % 10 == 9 {
            let from = arrived.max(wait_from + 500) + 2_000;
            let to = INIT + (it + 1) * PERIOD - 1_000;
            ev(
                &mut w,
                5,
                (from.min(to - 100), to),
                &[(Slot::Comm, 0), (Slot::Count, 1), (Slot::Bytes, 8)],
                &[],
            )?;
        }
    }
    let end = INIT + iterations * PERIOD;
    ev(&mut w, 7, (end + 1_000, end + 2_000_000), &[], &[])?;
    let trailer = Trailer {
        reason: "finalize".into(),
        sync_ticks: end + 2_000_000,
        sync_ns: end + 2_000_000,
        events,
        lost: 0,
        calls: vec![],
    };
    w.finish(Some(&trailer))?;
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: synthetic_stencil DIR RANKS ITERATIONS");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let (ranks, iterations): (u32, u64) = match (args[2].parse(), args[3].parse()) {
        (Ok(r), Ok(i)) if r >= 2 => (r, i),
        _ => {
            eprintln!("RANKS (at least 2) and ITERATIONS must be numbers");
            std::process::exit(2);
        }
    };
    if dir.exists() {
        eprintln!("{}: exists; give a new directory", dir.display());
        std::process::exit(1);
    }
    std::fs::create_dir_all(dir).expect("create the run directory");
    let hosts: Vec<String> = (0..ranks.div_ceil(32))
        .map(|h| format!("node{h:03}"))
        .collect();
    let manifest = mpiscope_trace::Manifest {
        format_version: mpiscope_trace::format_version(),
        recorder_version: format!("{} (synthetic_stencil)", env!("CARGO_PKG_VERSION")),
        command: vec![
            "synthetic_stencil".into(),
            dir.display().to_string(),
            ranks.to_string(),
            iterations.to_string(),
        ],
        executable: "/synthetic/stencil".into(),
        mpi: mpiscope_trace::MpiLibrary {
            flavour: "synthetic".into(),
            version: "none: written by crates/analyze/examples/synthetic_stencil.rs".into(),
            standard: "3.1".into(),
        },
        ranks,
        hosts,
        placement: (0..ranks)
            .map(|r| mpiscope_trace::RankPlacement {
                rank: r,
                host: format!("node{:03}", r / 32),
                pid: 10_000 + r,
                core: Some(r % 32),
                file: mpiscope_trace::rank_file_name(r),
            })
            .collect(),
        clock: mpiscope_trace::ClockSummary {
            source: "monotonic".into(),
            ticks_per_second: 1e9,
            resolution_ns: 1.0,
            alignment: "synthetic (one clock)".into(),
        },
        start_unix_ns: 1_767_225_600_000_000_000,
        start_time: "2026-01-01T00:00:00Z".into(),
        options: serde_json::json!({}),
        exit_status: Some(0),
        batch: None,
    };
    std::fs::write(
        dir.join(mpiscope_trace::MANIFEST_FILE),
        serde_json::to_string_pretty(&manifest).expect("manifest"),
    )
    .expect("write the manifest");
    for r in 0..ranks {
        write_rank(dir, r, ranks, iterations).expect("write a rank file");
    }
    println!("{}: {ranks} ranks, {iterations} iterations", dir.display());
}
