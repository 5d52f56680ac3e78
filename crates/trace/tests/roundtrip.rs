//! Round trips through the writer and the reader, and reading of damaged files.

use mpiscope_trace::*;
use proptest::prelude::*;

fn info() -> RankInfo {
    RankInfo {
        rank: 3,
        size: 8,
        pid: 42,
        host: "node1".into(),
        core: Some(1),
        clock: ClockInfo::nanoseconds(),
        epoch_ns: 0,
        offset_ns: 0,
        mpi_library: "test".into(),
        thread_level: "single".into(),
        executable: "/bin/true".into(),
        options: serde_json::json!({}),
    }
}

#[derive(Debug, Clone)]
struct Ev {
    call: u32,
    gap: u64,
    dur: u64,
    callsite: u32,
    core: u32,
    ret: i32,
    skipped: u64,
    args: Vec<(usize, i64)>,
    lists: Vec<(u8, Vec<i64>)>,
    /// CPU time of the burst before the call and the lead of its reference reading.
    cpu: Option<(u64, u64)>,
}

fn ev_strategy() -> impl Strategy<Value = Ev> {
    (
        // 7 and 71 share an argument-cache entry (64 entries): evictions are exercised.
        prop_oneof![Just(7u32), Just(8u32), Just(71u32), 0u32..5000],
        prop_oneof![0u64..100, 0u64..1_000_000_000],
        prop_oneof![0u64..100, 0u64..1_000_000_000],
        prop_oneof![Just(0u32), 1u32..4, any::<u32>()],
        prop_oneof![Just(NO_CORE), 0u32..4],
        prop_oneof![Just(0i32), any::<i32>()],
        prop_oneof![Just(0u64), any::<u64>()],
        prop::collection::vec((0usize..NSLOTS, prop_oneof![-3i64..3, any::<i64>()]), 0..6),
        prop::collection::vec((0u8..8, prop::collection::vec(any::<i64>(), 0..20)), 0..3),
        prop_oneof![
            Just(None),
            (0u64..10_000_000_000, prop_oneof![Just(0u64), 0u64..100_000]).prop_map(Some),
            (any::<u64>(), any::<u64>()).prop_map(Some),
        ],
    )
        .prop_map(
            |(call, gap, dur, callsite, core, ret, skipped, args, lists, cpu)| Ev {
                call,
                gap,
                dur,
                callsite,
                core,
                ret,
                skipped,
                args,
                lists,
                cpu,
            },
        )
}

fn write(evs: &[Ev], block: usize) -> (Vec<u8>, Vec<Event>) {
    let mut w = RankWriter::new(Vec::new(), &info(), block).unwrap();
    w.define(&[
        Definition::Call(CallDef {
            id: 7,
            name: "MPI_Send".into(),
            lang: Lang::C,
        }),
        Definition::Call(CallDef {
            id: 8,
            name: "MPI_Waitall".into(),
            lang: Lang::C,
        }),
    ])
    .unwrap();
    let mut t = 1000u64;
    let mut expected = Vec::new();
    let mut last_core = None;
    for e in evs {
        let mut a = Args::EMPTY;
        for &(s, v) in &e.args {
            a.set(Slot::from_index(s).unwrap(), v);
        }
        let lists: Vec<RawList> = e
            .lists
            .iter()
            .map(|(k, v)| RawList {
                kind: ListKind::from_u8(*k).unwrap(),
                values: v,
            })
            .collect();
        let t_enter = t + e.gap;
        let t_exit = t_enter + e.dur;
        t = t_exit;
        w.event(&RawEvent {
            call: e.call,
            t_enter,
            t_exit,
            callsite: e.callsite,
            core: e.core,
            ret: e.ret,
            skipped: e.skipped,
            args: &a,
            lists: &lists,
            cpu: e.cpu.map(|(ns, lead_ticks)| BurstCpu { ns, lead_ticks }),
        })
        .unwrap();
        if e.core != NO_CORE {
            last_core = Some(e.core);
        }
        expected.push(Event {
            thread: 0,
            call: e.call,
            t_enter,
            t_exit,
            callsite: e.callsite,
            core: last_core,
            ret: e.ret,
            skipped: e.skipped,
            args: a,
            lists: e
                .lists
                .iter()
                .map(|(k, v)| List {
                    kind: ListKind::from_u8(*k).unwrap(),
                    values: v.clone(),
                })
                .collect(),
            // Monotonic ticks are ns; half the reference's lead is taken off.
            cpu_ns: e.cpu.map(|(ns, lead)| ns.saturating_sub(lead / 2)),
            unfinished: false,
        });
    }
    let trailer = Trailer {
        reason: "finalize".into(),
        sync_ticks: t,
        sync_ns: t,
        events: evs.len() as u64,
        lost: 0,
        calls: vec![],
    };
    (w.finish(Some(&trailer)).unwrap(), expected)
}

fn read_all(bytes: &[u8]) -> (Vec<Event>, RankReader<&[u8]>) {
    let mut r = RankReader::new(bytes, "mem").unwrap();
    let evs: Vec<Event> = r.by_ref().collect();
    (evs, r)
}

/// Core numbers restart with each block in the decoder's view only if the encoder wrote
/// them again; compare cores only where the encoder's view is known to agree.
fn normalize_cores(evs: &mut [Event]) {
    for e in evs {
        e.core = None;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Reading with the lists of MPI_Send (call 7) only gives the same events, the other
    /// named calls without their lists.
    #[test]
    fn skipped_lists_leave_the_rest_intact(evs in prop::collection::vec(ev_strategy(), 0..300), block in 600usize..5000) {
        let (bytes, mut expected) = write(&evs, block);
        let mut r = RankReader::new(&bytes[..], "mem").unwrap();
        r.lists_only_for(&["MPI_Send"]);
        let mut got = Vec::new();
        while let Some(e) = r.next_ref() {
            got.push(e.clone());
        }
        prop_assert!(r.stopped().is_none(), "{:?}", r.stopped());
        // Calls the file does not name are decoded in full (their name is unknown).
        let defined = |c: u32| r.tables().calls.contains_key(&c);
        for e in expected.iter_mut().filter(|e| e.call != 7 && defined(e.call)) {
            e.lists.clear();
        }
        normalize_cores(&mut got);
        normalize_cores(&mut expected);
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn events_round_trip(evs in prop::collection::vec(ev_strategy(), 0..300), block in 600usize..5000) {
        let (bytes, mut expected) = write(&evs, block);
        let (mut got, r) = read_all(&bytes);
        prop_assert!(r.stopped().is_none(), "{:?}", r.stopped());
        prop_assert!(r.trailer().is_some());
        prop_assert_eq!(r.tables().call_name(7), "MPI_Send");
        normalize_cores(&mut got);
        normalize_cores(&mut expected);
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn cut_files_read_a_prefix(evs in prop::collection::vec(ev_strategy(), 1..60), cut in any::<prop::sample::Index>()) {
        let (bytes, expected) = write(&evs, 700);
        let n = cut.index(bytes.len());
        let Ok(mut r) = RankReader::new(&bytes[..n], "cut") else { return Ok(()) };
        let got: Vec<Event> = r.by_ref().collect();
        prop_assert!(got.len() <= expected.len());
        for (g, e) in got.iter().zip(&expected) {
            prop_assert_eq!(g.call, e.call);
            prop_assert_eq!(g.t_enter, e.t_enter);
            prop_assert_eq!(&g.args, &e.args);
        }
        if n < bytes.len() {
            prop_assert!(r.trailer().is_none() || got.len() == expected.len());
        }
    }

    #[test]
    fn garbage_never_panics(mut bytes in prop::collection::vec(any::<u8>(), 0..4000), flips in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        // Random bytes behind a valid file header, and bit flips in a valid file.
        let mut f = mpiscope_trace::block::file_header().to_vec();
        f.append(&mut bytes);
        if let Ok(r) = RankReader::new(f.as_slice(), "garbage") {
            let _ = r.count();
        }
        let (mut good, _) = write(&vec![Ev { call: 1, gap: 5, dur: 9, callsite: 1, core: 0, ret: 0, skipped: 0, args: vec![(0, 3)], lists: vec![], cpu: Some((4, 1)) }; 50], 800);
        for i in flips {
            let k = i.index(good.len());
            good[k] ^= 0x5a;
        }
        if let Ok(r) = RankReader::new(good.as_slice(), "flipped") {
            let _ = r.count();
        }
    }
}

#[test]
fn repeated_probe_is_compact() {
    // A polling loop: same call, same arguments, short gaps and durations.
    let mut w = RankWriter::new(Vec::new(), &info(), 1 << 16).unwrap();
    let mut a = Args::EMPTY;
    a.set(Slot::Peer, PEER_ANY);
    a.set(Slot::Tag, 77);
    a.set(Slot::Comm, 0);
    a.set(Slot::Flag, 0);
    let mut t = 0;
    let n = 100_000;
    for i in 0..n {
        let t_enter = t + 20 + (i % 7);
        let t_exit = t_enter + 150 + (i % 13);
        t = t_exit;
        w.event(&RawEvent {
            call: 5,
            t_enter,
            t_exit,
            callsite: 1,
            core: 0,
            ret: 0,
            skipped: 0,
            args: &a,
            lists: &[],
            cpu: None,
        })
        .unwrap();
    }
    let bytes = w.finish(None).unwrap();
    let per_event = bytes.len() as f64 / n as f64;
    assert!(per_event < 4.1, "{per_event} bytes per event");
    let (evs, r) = read_all(&bytes);
    assert!(r.stopped().is_none());
    assert_eq!(evs.len(), n as usize);
    assert_eq!(evs[99_999].args.get(Slot::Tag), Some(77));
}

#[test]
fn bad_headers_are_named() {
    let e = RankReader::new(&b"hello world, not a trace"[..], "x.mpst")
        .err()
        .unwrap();
    assert!(e.to_string().contains("x.mpst"), "{e}");
    assert!(e.to_string().contains("bad magic"), "{e}");
    let mut h = mpiscope_trace::block::file_header().to_vec();
    h[8] = 9;
    let e = RankReader::new(h.as_slice(), "v.mpst").err().unwrap();
    assert!(e.to_string().contains("version 9"), "{e}");
}

#[test]
fn truncation_names_the_offset() {
    let (bytes, _) = write(
        &vec![
            Ev {
                call: 1,
                gap: 5,
                dur: 9,
                callsite: 1,
                core: 0,
                ret: 0,
                skipped: 0,
                args: vec![],
                lists: vec![],
                cpu: None,
            };
            10
        ],
        800,
    );
    let cut = &bytes[..bytes.len() - 3];
    let mut r = RankReader::new(cut, "cut.mpst").unwrap();
    let n = r.by_ref().count();
    assert_eq!(n, 10);
    let err = r.stopped().expect("the trailer block was cut");
    assert!(err.is_truncation(), "{err}");
    assert!(err.to_string().contains("cut.mpst: offset "), "{err}");
}

#[test]
fn a_changed_flag_next_to_new_slots_round_trips() {
    // Regression: MPI_Test recorded flag=0 then flag=1 with a decoded status.
    let mut w = RankWriter::new(Vec::new(), &info(), 1 << 16).unwrap();
    let mut a = Args::EMPTY;
    a.set(Slot::Request, 1);
    a.set(Slot::Flag, 0);
    let mut b = Args::EMPTY;
    b.set(Slot::Request, 1);
    b.set(Slot::StatusSource, 0);
    b.set(Slot::StatusTag, 5);
    b.set(Slot::StatusBytes, 4);
    b.set(Slot::Flag, 1);
    for (i, args) in [a, b].iter().enumerate() {
        let t = 100 * i as u64;
        w.event(&RawEvent {
            call: 320,
            t_enter: t,
            t_exit: t + 5,
            callsite: 3,
            core: NO_CORE,
            ret: 0,
            skipped: 0,
            args,
            lists: &[],
            cpu: None,
        })
        .unwrap();
    }
    let bytes = w.finish(None).unwrap();
    let (evs, _) = read_all(&bytes);
    assert_eq!(evs[0].args, a);
    assert_eq!(evs[1].args, b);
}

fn call(call: u32, t_enter: u64, t_exit: u64, args: &Args) -> RawEvent<'_> {
    RawEvent {
        call,
        t_enter,
        t_exit,
        callsite: 2,
        core: NO_CORE,
        ret: 0,
        skipped: 0,
        args,
        lists: &[],
        cpu: None,
    }
}

#[test]
fn calls_in_progress_come_last_once_and_yield_to_their_return() {
    let mut a = Args::EMPTY;
    a.set(Slot::Peer, 1);
    a.set(Slot::Tag, 7);
    let mut w = RankWriter::new(Vec::new(), &info(), 1 << 12).unwrap();
    w.event(&call(3, 10, 20, &a)).unwrap();
    // A hang record sees call 4 in progress at 500, then at 900; it then returns at 1000.
    w.open_call(&call(4, 30, 500, &a)).unwrap();
    w.note(&Note {
        kind: "hang".into(),
        ticks: 500,
        thread: 0,
        signal: None,
        message: "inside MPI_Recv for 470 ns".into(),
        time_ns: 0,
    })
    .unwrap();
    w.open_call(&call(4, 30, 900, &a)).unwrap();
    w.event(&call(4, 30, 1000, &a)).unwrap();
    // Call 5 never returns: recorded at 2000 and again, later, at 3000.
    w.event(&call(6, 1100, 1200, &a)).unwrap();
    w.open_call(&call(5, 1300, 2000, &a)).unwrap();
    w.open_call(&call(5, 1300, 3000, &a)).unwrap();
    let trailer = Trailer {
        reason: "signal SIGTERM".into(),
        sync_ticks: 3000,
        sync_ns: 3000,
        events: 4,
        lost: 0,
        calls: vec![],
    };
    let bytes = w.finish(Some(&trailer)).unwrap();
    let (evs, r) = read_all(&bytes);
    let seen: Vec<(u32, u64, u64, bool)> = evs
        .iter()
        .map(|e| (e.call, e.t_enter, e.t_exit, e.unfinished))
        .collect();
    assert_eq!(
        seen,
        vec![
            (3, 10, 20, false),
            (4, 30, 1000, false),
            (6, 1100, 1200, false),
            (5, 1300, 3000, true)
        ]
    );
    assert_eq!(evs[3].args.get(Slot::Peer), Some(1));
    assert_eq!(r.notes().len(), 1);
    assert_eq!(r.notes()[0].time_ns, 500);
    let end = r.ending();
    assert!(end.complete);
    assert_eq!((end.events, end.unfinished, end.last_ns), (4, 1, 3000));
    assert_eq!(end.reason.as_deref(), Some("signal SIGTERM"));
}

#[test]
fn a_record_without_trailer_says_where_it_stops() {
    let a = Args::EMPTY;
    let mut w = RankWriter::new(Vec::new(), &info(), 1 << 12).unwrap();
    w.event(&call(3, 10, 20, &a)).unwrap();
    w.event(&call(3, 40, 2_500_000_000, &a)).unwrap();
    let bytes = w.finish(None).unwrap();
    let (_, r) = read_all(&bytes);
    let end = r.ending();
    assert!(!end.complete);
    assert_eq!(end.last_ns, 2_500_000_000);
    let text = end.describe();
    assert!(text.contains("no end record"), "{text}");
    assert!(text.contains("2.500000 s"), "{text}");
}

#[test]
fn an_unknown_definition_tag_skips_its_block_only() {
    let a = Args::EMPTY;
    let mut w = RankWriter::new(Vec::new(), &info(), 1 << 12).unwrap();
    w.event(&call(3, 10, 20, &a)).unwrap();
    w.flush_block().unwrap();
    let mut bytes = w.finish(None).unwrap();
    // A definitions block from a later minor version: tag 0x9f, then a call definition.
    let mut payload = vec![0x9f, 1, 2, 3];
    Definition::Call(CallDef {
        id: 9,
        name: "MPI_Later".into(),
        lang: Lang::C,
    })
    .encode(&mut payload);
    bytes.extend(mpiscope_trace::block::frame(
        mpiscope_trace::block::BlockKind::Definitions,
        0,
        2,
        (30, 30),
        &payload,
    ));
    let mut more = Vec::new();
    Definition::Call(CallDef {
        id: 3,
        name: "MPI_Barrier".into(),
        lang: Lang::C,
    })
    .encode(&mut more);
    bytes.extend(mpiscope_trace::block::frame(
        mpiscope_trace::block::BlockKind::Definitions,
        0,
        1,
        (30, 30),
        &more,
    ));
    let (evs, r) = read_all(&bytes);
    assert!(r.stopped().is_none(), "{:?}", r.stopped());
    assert_eq!(evs.len(), 1);
    assert_eq!(r.unknown_definitions(), 1);
    assert_eq!(r.tables().call_name(3), "MPI_Barrier");
    assert!(!r.tables().calls.contains_key(&9));
}

#[test]
fn a_huge_declared_block_length_allocates_only_what_is_there() {
    let mut bytes = mpiscope_trace::block::file_header().to_vec();
    let mut hdr = [0u8; mpiscope_trace::block::BLOCK_HEADER_LEN];
    mpiscope_trace::block::BlockHeader {
        kind: mpiscope_trace::block::BlockKind::Events,
        thread: 0,
        payload_len: 1 << 30,
        records: 1,
        base_ticks: 0,
        sync_ticks: 0,
        sync_ns: 0,
        crc: 0,
    }
    .write_fields(&mut hdr);
    bytes.extend_from_slice(&hdr);
    bytes.extend_from_slice(&[0u8; 100]);
    let (evs, r) = read_all(&bytes);
    assert!(evs.is_empty());
    let err = r.stopped().expect("cut");
    assert!(err.to_string().contains("100 of 1073741824"), "{err}");
}

#[test]
fn a_rank_file_holding_another_ranks_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = RankWriter::new(Vec::new(), &info(), 1 << 12).unwrap();
    // info() is rank 3.
    let bytes = w.finish(None).unwrap();
    std::fs::write(dir.path().join("rank-00001.mpst"), &bytes).unwrap();
    let e = RankReader::open(dir.path().join("rank-00001.mpst"))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("record of rank 3"), "{e}");
    std::fs::write(dir.path().join("rank-00003.mpst"), &bytes).unwrap();
    assert!(RankReader::open(dir.path().join("rank-00003.mpst")).is_ok());
}

#[test]
fn special_files_are_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-00000.mpst");
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = RankReader::open(&p).err().expect("refused");
    assert!(e.to_string().contains("named pipe"), "{e}");
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::os::raw::c_char, mode: u32) -> i32;
}

#[test]
fn skimming_agrees_with_reading_on_whole_and_cut_files() {
    let dir = tempfile::tempdir().unwrap();
    let evs = vec![
        Ev {
            call: 1,
            gap: 5,
            dur: 9,
            callsite: 1,
            core: 0,
            ret: 0,
            skipped: 0,
            args: vec![],
            lists: vec![],
            // CPU blocks before the events blocks: cuts land in them too.
            cpu: Some((7, 0)),
        };
        3000
    ];
    let (bytes, _) = write(&evs, 4096);
    let whole = dir.path().join("rank-00003.mpst");
    std::fs::write(&whole, &bytes).unwrap();
    let mut r = RankReader::open(&whole).unwrap();
    r.drain();
    let read = r.ending();
    let skim = skim_ending(&whole).unwrap();
    assert!(skim.complete && read.complete);
    assert_eq!(skim.reason, read.reason);
    assert_eq!(skim.events, read.events);
    assert_eq!(skim.events, 3000);
    let cut = dir.path().join("rank-00004.mpst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let skim = skim_ending(&cut).unwrap();
    assert!(!skim.complete);
    assert!(skim.reason.is_none());
    assert!(
        skim.cut
            .as_deref()
            .unwrap()
            .contains("file ends inside a block"),
        "{skim:?}"
    );
    assert!(skim.events > 0 && skim.events < 3000, "{skim:?}");
    assert!(
        skim.describe().contains("no end record"),
        "{}",
        skim.describe()
    );
}

/// The blocks of a rank file after its header: (offset, kind byte, thread, length).
fn blocks_of(bytes: &[u8]) -> Vec<(usize, u8, u16, usize)> {
    let mut out = Vec::new();
    let mut at = block::FILE_HEADER_LEN;
    while at + block::BLOCK_HEADER_LEN <= bytes.len() {
        let hb: [u8; block::BLOCK_HEADER_LEN] =
            bytes[at..at + block::BLOCK_HEADER_LEN].try_into().unwrap();
        let h = block::BlockHeader::parse(&hb).unwrap();
        let len = block::BLOCK_HEADER_LEN + h.payload_len as usize;
        out.push((at, hb[4], h.thread, len));
        at += len;
    }
    out
}

fn burst_events(n: u64) -> Vec<Ev> {
    (0..n)
        .map(|i| Ev {
            call: 7 + (i % 2) as u32,
            gap: 10_000 + i,
            dur: 50,
            callsite: 1,
            core: NO_CORE,
            ret: 0,
            skipped: 0,
            args: vec![(0, i as i64)],
            lists: vec![],
            cpu: (i % 3 != 0).then_some((4_000 + i, i % 5)),
        })
        .collect()
}

#[test]
fn cpu_times_come_back_beside_their_events() {
    let evs = burst_events(2000);
    let (bytes, expected) = write(&evs, 2048);
    let kinds: Vec<u8> = blocks_of(&bytes).iter().map(|b| b.1).collect();
    // Each CPU block just before its events block.
    assert!(kinds.iter().filter(|&&k| k == 6).count() > 10, "{kinds:?}");
    for (i, &k) in kinds.iter().enumerate() {
        if k == 6 {
            assert_eq!(kinds[i + 1], 0, "{kinds:?}");
        }
    }
    let (got, r) = read_all(&bytes);
    assert!(r.stopped().is_none(), "{:?}", r.stopped());
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g.cpu_ns, e.cpu_ns);
        assert_eq!((g.t_enter, g.t_exit, g.args), (e.t_enter, e.t_exit, e.args));
    }
    assert_eq!(got.iter().filter(|e| e.cpu_ns.is_some()).count(), 1333);
}

#[test]
fn cpu_blocks_are_skipped_as_an_older_reader_skips_them() {
    // An older reader meets kind 6 as an unknown kind and skips it by its length: the same
    // file with those blocks renumbered to a kind nobody knows reads the same events,
    // without CPU times.
    let evs = burst_events(500);
    let (bytes, expected) = write(&evs, 2048);
    let mut unknown = bytes.clone();
    for (at, kind, _, len) in blocks_of(&bytes) {
        if kind == 6 {
            unknown[at + 4] = 200;
            let crc = block::block_crc(&unknown[at..at + 40], &unknown[at + 44..at + len]);
            unknown[at + 40..at + 44].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let (got, r) = read_all(&unknown);
    assert!(r.stopped().is_none());
    let want: Vec<Event> = expected
        .iter()
        .map(|e| Event {
            cpu_ns: None,
            ..e.clone()
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_trace_of_format_1_1_reads_as_before() {
    // What a 1.1 recorder wrote: no CPU block, minor version 1. Every event reads, none
    // with a CPU time, times and arguments as written.
    let mut evs = burst_events(300);
    for e in &mut evs {
        e.cpu = None;
    }
    let (mut bytes, expected) = write(&evs, 2048);
    bytes[10..12].copy_from_slice(&1u16.to_le_bytes());
    assert!(blocks_of(&bytes).iter().all(|b| b.1 != 6));
    let (got, r) = read_all(&bytes);
    assert!(r.stopped().is_none());
    assert_eq!(got, expected);
}

#[test]
fn a_cpu_block_away_from_its_events_is_ignored() {
    // A CPU block applies to the events block right after it, of its thread and base
    // ticks only; one moved elsewhere gives no CPU time to other events.
    let evs = burst_events(200);
    let (bytes, expected) = write(&evs, 1 << 16);
    let bl = blocks_of(&bytes);
    let cpu = bl.iter().find(|b| b.1 == 6).unwrap();
    let ev = bl.iter().find(|b| b.1 == 0).unwrap();
    assert_eq!(ev.0, cpu.0 + cpu.3);
    // Swap them: the events first, their CPU block after.
    let mut swapped = bytes[..cpu.0].to_vec();
    swapped.extend_from_slice(&bytes[ev.0..ev.0 + ev.3]);
    swapped.extend_from_slice(&bytes[cpu.0..cpu.0 + cpu.3]);
    swapped.extend_from_slice(&bytes[ev.0 + ev.3..]);
    let (got, r) = read_all(&swapped);
    assert!(r.stopped().is_none());
    assert_eq!(got.len(), expected.len());
    assert!(got.iter().all(|e| e.cpu_ns.is_none()));
}
