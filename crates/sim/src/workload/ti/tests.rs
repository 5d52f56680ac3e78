//! Reading TI traces: shared and per-rank files, chunks, actions and their errors.

use super::*;

fn actions(text: &str, rank: u32, n: u32) -> Vec<Action> {
    let lines: VecDeque<(u64, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim().to_owned()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let mut w = TiRank::new(
        rank,
        n,
        Source::Lines,
        lines,
        "t".into(),
        TiOptions::default(),
    );
    let mut out = Vec::new();
    while let Some(a) = w.next(Outcome::None) {
        out.push(a.unwrap());
    }
    out
}

#[test]
fn shared_file_ranks_must_be_dense() {
    let w = from_str("0 init\n1 init\n0 finalize\n", "t", TiOptions::default()).unwrap();
    assert_eq!(w.len(), 2);
    let e = from_str(
        "0 init\n# x\n10110000 init\n",
        "t.txt",
        TiOptions::default(),
    )
    .err()
    .expect("a gap in ranks")
    .to_string();
    assert!(e.contains("t.txt") && e.contains(":3"), "{e}");
    assert!(
        e.contains("rank 10110000 appears but rank 1 has no line"),
        "{e}"
    );
    let e = from_str("x init\n", "t.txt", TiOptions::default())
        .err()
        .expect("not a rank")
        .to_string();
    assert!(e.contains("`x` is not a rank"), "{e}");
}

#[test]
fn chunked_reading_keeps_every_line_and_its_number() {
    // Lines longer than the chunk, blank lines, comments, CRLF, no final newline.
    let long = format!("0 compute {}", "9".repeat(40));
    let text = format!("0 init\r\n\n# note\n{long}\n  0 send 1 0 8  \n\n0 finalize");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r0.txt");
    std::fs::write(&path, &text).unwrap();
    let expected: Vec<(u64, String)> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim().to_owned()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for chunk in [1, 3, 7, 16, 1 << 12] {
        let mut w = TiRank::new(
            0,
            1,
            Source::File {
                path: path.clone(),
                offset: 0,
                eof: false,
            },
            VecDeque::new(),
            "r0.txt".into(),
            TiOptions::default(),
        );
        w.lines.chunk = chunk;
        let mut got = Vec::new();
        while let Some((no, line)) = w.lines.next_line().unwrap() {
            got.push((no, line.to_owned()));
        }
        assert_eq!(got, expected, "chunk {chunk}");
    }
}

#[test]
fn point_to_point_and_requests() {
    let a = actions(
        "0 init\n0 isend 1 5 100\n0 irecv 1 6 10 1\n0 wait 1 0 6\n0 wait 0 1 5\n0 finalize\n",
        0,
        2,
    );
    assert_eq!(
        a[0],
        Action::Send {
            dst: 1,
            tag: 5,
            bytes: 100,
            comm: 0,
            req: Some(1),
            sync: false
        }
    );
    assert_eq!(
        a[1],
        Action::Recv {
            src: 1,
            tag: 6,
            bytes: 40,
            comm: 0,
            req: Some(2)
        }
    );
    assert_eq!(a[2], Action::Wait { reqs: vec![2] });
    assert_eq!(a[3], Action::Wait { reqs: vec![1] });
    assert_eq!(a[4], Action::Finalize);
}

#[test]
fn datatypes_follow_init() {
    let a = actions("1 init 1\n1 send 0 0 3\n1 bcast 10 0 1\n", 1, 2);
    assert_eq!(
        a[0],
        Action::Send {
            dst: 0,
            tag: 0,
            bytes: 24,
            comm: 0,
            req: None,
            sync: false
        }
    );
    match &a[1] {
        Action::Collective { args, .. } => {
            assert_eq!((args.count, args.dtype_size, args.root), (10, 4, 0))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn vector_collectives() {
    let a = actions(
        "0 init\n0 alltoallv 6 1 2 3 9 2 3 4\n0 reducescatter 1 2 3 100\n",
        0,
        3,
    );
    match &a[0] {
        Action::Collective { args, .. } => {
            assert_eq!(args.send_counts, vec![1, 2, 3]);
            assert_eq!(args.recv_counts, vec![2, 3, 4]);
        }
        other => panic!("{other:?}"),
    }
    match &a[1] {
        Action::Collective {
            args, comp_flops, ..
        } => {
            assert_eq!(args.recv_counts, vec![1, 2, 3]);
            assert_eq!(*comp_flops, 100.0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_name_file_and_line() {
    let lines: VecDeque<(u64, String)> =
        vec![(1, "0 init".to_string()), (2, "0 send x 1 2".to_string())].into();
    let mut w = TiRank::new(
        0,
        2,
        Source::Lines,
        lines,
        "trace.txt".into(),
        TiOptions::default(),
    );
    let e = w.next(Outcome::None).unwrap().unwrap_err().to_string();
    assert!(e.contains("trace.txt:2"), "{e}");
    assert!(e.contains("destination"), "{e}");
    let lines: VecDeque<(u64, String)> = vec![(7, "0 frobnicate".to_string())].into();
    let mut w = TiRank::new(0, 2, Source::Lines, lines, "t".into(), TiOptions::default());
    assert!(w
        .next(Outcome::None)
        .unwrap()
        .unwrap_err()
        .to_string()
        .contains("t:7: unknown action"));
}

#[test]
fn a_successful_test_leaves_a_null_request_as_in_simgrid() {
    let text = "0 init\n0 irecv 1 0 8\n0 isend 1 5 8\n0 test 1 0 0\n0 test 1 0 0\n\
                0 test 1 0 0\n0 wait 1 0 0\n0 test 1 0 0\n0 wait 0 1 5\n0 finalize\n";
    let lines: VecDeque<(u64, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.to_owned()))
        .collect();
    let mut w = TiRank::new(0, 2, Source::Lines, lines, "t".into(), TiOptions::default());
    let mut next = |last| w.next(last).map(|a| a.unwrap());
    assert!(matches!(
        next(Outcome::None),
        Some(Action::Recv { req: Some(1), .. })
    ));
    assert!(matches!(
        next(Outcome::None),
        Some(Action::Send { req: Some(2), .. })
    ));
    // A failed test puts its request back; a successful one leaves a null request.
    assert_eq!(next(Outcome::None), Some(Action::Test { req: 1 }));
    assert_eq!(next(Outcome::Flag(false)), Some(Action::Test { req: 1 }));
    // The third test takes the null request and does nothing; so does the wait, whose key
    // has nothing left (another key is stored), and the test after it.
    assert_eq!(
        next(Outcome::Flag(true)),
        Some(Action::Wait { reqs: vec![2] })
    );
    assert_eq!(next(Outcome::None), Some(Action::Finalize));
    // With nothing stored at all, a wait is refused, as SimGrid does.
    let e = from_str("0 init\n0 wait 1 0 0\n", "t", TiOptions::default())
        .unwrap()
        .remove(0)
        .next(Outcome::None)
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("wait: not preceded by a matching isend or irecv"),
        "{e}"
    );
}
