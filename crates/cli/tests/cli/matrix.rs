//! The communication matrix of `mpiscope report` (point-to-point, collective, both) on a
//! program with known traffic (`tests/programs/c/matrix.c`), run with a real `mpirun`
//! (Open MPI and MPICH): exact bytes and messages per pair in the JSON, the tables in the
//! text report, and the three heat maps drawn by headless Chromium.

use crate::common;

use std::process::Command;

use crate::common::{mpi_lock, mpiscope, tempdir, Mpi};
use serde_json::Value;

/// Rank x rank (messages, bytes) of the point-to-point and collective traffic that
/// `matrix.c` documents, for `n` ranks.
fn expected(n: usize) -> [Vec<Vec<(u64, u64)>>; 2] {
    let mut p2p = vec![vec![(0, 0); n]; n];
    let mut coll = vec![vec![(0, 0); n]; n];
    let add = |m: &mut Vec<Vec<(u64, u64)>>, i: usize, j: usize, b: u64| {
        m[i][j].0 += 1;
        m[i][j].1 += b;
    };
    for r in 0..n {
        add(&mut p2p, r, (r + 1) % n, 1000);
    }
    for color in 0..2 {
        // Comm_split with key -r: decreasing world ranks.
        let members: Vec<usize> = (0..n).rev().filter(|r| r % 2 == color).collect();
        for &m in &members[1..] {
            add(&mut coll, members[0], m, 100);
        }
        if members.len() > 1 {
            for &m in members.iter().filter(|&&m| m != members[1]) {
                add(&mut coll, m, members[1], 8);
            }
        }
    }
    for i in 0..n {
        for j in (0..n).filter(|&j| j != i) {
            add(&mut coll, i, j, 4 * (i as u64 + 1) * (j as u64 + 1));
            add(&mut coll, i, j, 16);
        }
    }
    [p2p, coll]
}

fn grid(v: &Value) -> Vec<Vec<u64>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        })
        .collect()
}

fn split(m: &[Vec<(u64, u64)>]) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    (
        m.iter().map(|r| r.iter().map(|c| c.0).collect()).collect(),
        m.iter().map(|r| r.iter().map(|c| c.1).collect()).collect(),
    )
}

fn check(mpi: Mpi, html: bool) {
    let tmp = tempdir();
    let exe = common::build(mpi, "c/matrix.c", &[]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(mpi, 4, &exe, &[], &[], tmp.path())
    };
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("matrix: n=4 sum=6"), "{}", run.stdout);
    let j = common::report_json(&trace);
    let m = &j["matrix"];
    assert_eq!(m["ranks"], 4);
    let [p2p, coll] = expected(4);
    let (p2p_m, p2p_b) = split(&p2p);
    let (coll_m, coll_b) = split(&coll);
    assert_eq!(grid(&m["p2p"]["bytes"]), p2p_b, "{}: p2p bytes", mpi.name());
    assert_eq!(grid(&m["p2p"]["messages"]), p2p_m);
    assert_eq!(
        grid(&m["collective"]["bytes"]),
        coll_b,
        "{}: collective bytes",
        mpi.name()
    );
    assert_eq!(grid(&m["collective"]["messages"]), coll_m);
    let total_b: Vec<Vec<u64>> = p2p_b
        .iter()
        .zip(&coll_b)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x + y).collect())
        .collect();
    assert_eq!(grid(&m["total"]["bytes"]), total_b);
    let f = &m["collective_by_function"];
    // Two halves of two ranks: one bcast transfer and one gather transfer each.
    assert_eq!(
        (
            f["MPI_Bcast"]["bytes"].as_u64(),
            f["MPI_Gather"]["bytes"].as_u64()
        ),
        (Some(200), Some(16))
    );
    assert_eq!(f["MPI_Allreduce"]["messages"], 12);
    assert!(f.get("MPI_Barrier").is_none(), "a barrier moves no data");
    // The existing point-to-point pairs are unchanged by the matrix.
    assert_eq!(j["p2p"].as_array().unwrap().len(), 4);

    let o = Command::new(mpiscope())
        .arg("report")
        .arg(&trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    // Rank 2 sends 100 (bcast) + 8 (gather) + 12 (alltoallv) + 16 (allreduce) to rank 0.
    assert!(
        text.contains("Collective, bytes (row sends to column):")
            && text.contains("       2     136"),
        "{text}"
    );

    if html {
        let page = tmp.path().join("report.html");
        let h = common::html_report(&trace, &page);
        assert!(h.contains("Collective bytes by MPI semantics"));
        assert!(
            h.contains("<title>2 -> 0: 4 messages, 136 bytes</title>"),
            "{h}"
        );
        let shot = common::render_html(&page, 1000, 4000);
        let p2p = shot.share_of([8, 48, 107], 6);
        let coll = shot.share_of([0, 109, 44], 6);
        let total = shot.share_of([84, 39, 143], 6);
        // The darkest cell of each map is drawn opaque: at least one 40 x 40 cell.
        let cell = 1600.0 / (1000.0 * 4000.0);
        assert!(
            p2p >= cell && coll >= cell && total >= cell,
            "p2p {p2p}, collective {coll}, total {total}"
        );
    }
}

#[test]
fn matrix_openmpi() {
    check(Mpi::OpenMpi, true);
}

#[test]
fn matrix_mpich() {
    check(Mpi::Mpich, false);
}
