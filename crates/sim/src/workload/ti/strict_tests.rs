//! Lines that are not valid actions of their rank: errors naming the file and the line, or,
//! in a lenient reading, skipped and counted.

use std::path::PathBuf;

use super::*;
use crate::workload::ANY;

/// Writes per-rank files `r<i>.txt` and their index; returns the index.
fn per_rank(dir: &Path, ranks: &[&str]) -> PathBuf {
    let mut index = String::new();
    for (i, text) in ranks.iter().enumerate() {
        std::fs::write(dir.join(format!("r{i}.txt")), text).unwrap();
        index += &format!("r{i}.txt\n");
    }
    let p = dir.join("index.txt");
    std::fs::write(&p, index).unwrap();
    p
}

/// Every action of every rank, or the first error's text.
fn drain(ws: Vec<Box<dyn RankWorkload>>) -> Result<Vec<Vec<Action>>, String> {
    let mut out = Vec::new();
    for mut w in ws {
        let mut acts = Vec::new();
        while let Some(a) = w.next(Outcome::None) {
            acts.push(a.map_err(|e| e.to_string())?);
        }
        out.push(acts);
    }
    Ok(out)
}

fn strict(dir: &Path, ranks: &[&str]) -> Result<Vec<Vec<Action>>, String> {
    let index = per_rank(dir, ranks);
    drain(load(&index, TiOptions::default()).map_err(|e| e.to_string())?)
}

fn error_of(ranks: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    match strict(dir.path(), ranks) {
        Ok(a) => panic!("accepted {ranks:?}: {a:?}"),
        Err(e) => e.replace(&format!("{}/", dir.path().display()), ""),
    }
}

const OK1: &str = "1 init\n1 recv 0 0 8\n1 finalize\n";

#[test]
fn misplaced_and_garbage_lines_name_file_and_line() {
    for (r0, want) in [
        (
            "0 init\n1 compute 5\n0 send 1 0 8\n",
            "r0.txt:2: a line of rank 1 in the trace of rank 0",
        ),
        (
            "0 init\nhello world\n0 send 1 0 8\n",
            "r0.txt:2: `hello world`: expected `<rank> <action> ...`",
        ),
        ("0 init\n0\n0 send 1 0 8\n", "r0.txt:2: `0`: expected"),
        (
            "0 init\n0 frobnicate 3\n",
            "r0.txt:2: unknown action `frobnicate`",
        ),
        ("0 init\n0 send 1\n", "r0.txt:2: send: missing tag"),
        ("0 init\n0 send 1 0\n", "r0.txt:2: send: missing size"),
        (
            "0 init\n0 send x 0 8\n",
            "r0.txt:2: send: destination `x` is not an integer",
        ),
        (
            "0 init\n0 send 2 0 8\n",
            "r0.txt:2: send: destination 2 is not a rank of the 2 ranks",
        ),
        (
            "0 init\n0 send 1 0 8\n0 finalize\n0 compute 1\n",
            "r0.txt:4: `0 compute 1` after `finalize`",
        ),
    ] {
        let e = error_of(&[r0, OK1]);
        assert!(e.starts_with(want), "{r0:?}: {e}");
    }
}

#[test]
fn amounts_must_be_finite_and_non_negative() {
    for (line, want) in [
        ("0 compute -5", "compute: flops -5 is negative"),
        ("0 compute nan", "compute: flops `nan` is not a number"),
        ("0 compute inf", "compute: flops `inf` is not a number"),
        ("0 sleep -1", "sleep: seconds -1 is negative"),
        ("0 send 1 0 -8", "send: size -8 is negative"),
        ("0 send 1 -3 8", "send: tag -3 is negative"),
        (
            "0 recv 1 -2 8",
            "recv: tag -2 is negative (and not -1, any tag)",
        ),
        ("0 bcast -4", "bcast: size -4 is negative"),
        ("0 bcast 4 7", "bcast: root 7 is not a rank of the 2 ranks"),
        ("0 allreduce 4 -1", "allreduce: comp -1 is negative"),
        ("0 alltoall 4 -4", "alltoall: receive count -4 is negative"),
        (
            "0 sendRecv -1 1 8 1 6 6",
            "sendRecv: send count -1 is negative",
        ),
        (
            "0 alltoallv 2 1 1 2 1 -1",
            "alltoallv: negative receive counts",
        ),
        ("0 send 1 0 8 99", "send: unknown datatype id 99"),
    ] {
        let e = error_of(&[&format!("0 init\n{line}\n"), OK1]);
        assert!(e.starts_with(&format!("r0.txt:2: {want}")), "{line}: {e}");
    }
    // A receive of unknown size (negative) probes first, as in SimGrid; any tag is -1.
    let dir = tempfile::tempdir().unwrap();
    let a = strict(
        dir.path(),
        &["0 init\n0 recv 1 -1 -1\n", "1 init\n1 send 0 4 8\n"],
    )
    .unwrap();
    assert!(
        matches!(
            a[0][0],
            Action::Probe {
                src: 1,
                tag: ANY,
                ..
            }
        ),
        "{a:?}"
    );
    assert!(
        matches!(
            a[0][1],
            Action::Recv {
                src: 1,
                tag: ANY,
                bytes: 0,
                ..
            }
        ),
        "{a:?}"
    );
}

#[test]
fn a_lenient_reading_skips_and_counts_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let index = per_rank(
        dir.path(),
        &[
            "0 init\nhello\n1 compute 5\n0 compute -5\n0 send 1 0 8\n0 finalize\n0 sleep 1\n",
            OK1,
        ],
    );
    let log = SkippedLines::default();
    let options = TiOptions {
        lenient: Some(log.clone()),
    };
    let a = drain(load(&index, options.clone()).unwrap()).unwrap();
    assert_eq!(
        a[0],
        [
            Action::Send {
                dst: 1,
                tag: 0,
                bytes: 8,
                comm: 0,
                req: None,
                sync: false
            },
            Action::Finalize
        ]
    );
    assert_eq!(log.count(), 4);
    let first: Vec<String> = log
        .first()
        .iter()
        .map(|e| e.replace(&format!("{}/", dir.path().display()), ""))
        .collect();
    assert_eq!(
        first,
        [
            "r0.txt:2: `hello`: expected `<rank> <action> ...`",
            "r0.txt:3: a line of rank 1 in the trace of rank 0",
            "r0.txt:4: compute: flops -5 is negative",
            "r0.txt:7: `0 sleep 1` after `finalize`",
        ]
    );
    // Reading the same trace again (a study's next point) counts no line twice.
    drain(load(&index, options).unwrap()).unwrap();
    assert_eq!(log.count(), 4);
}

#[test]
fn a_shared_file_skips_lines_without_a_rank_when_lenient() {
    let text = "0 init\n1 init\nnoise here\n0 send 1 0 8\n1 recv 0 0 8\n";
    let e = from_str(text, "t.txt", TiOptions::default())
        .err()
        .expect("a line without a rank")
        .to_string();
    assert_eq!(
        e,
        "t.txt:3: `noise` is not a rank: expected `<rank> <action> ...`"
    );
    let log = SkippedLines::default();
    let w = from_str(
        text,
        "t.txt",
        TiOptions {
            lenient: Some(log.clone()),
        },
    )
    .unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(log.count(), 1);
    // At most KEPT messages are kept, every line is counted.
    let many: String = (0..20).map(|i| format!("x{i}\n")).collect();
    let log = SkippedLines::default();
    from_str(
        &format!("0 init\n{many}"),
        "m.txt",
        TiOptions {
            lenient: Some(log.clone()),
        },
    )
    .unwrap();
    assert_eq!((log.count(), log.first().len()), (20, SkippedLines::KEPT));
}
