//! Encoder and decoder throughput (a bench binary: `cargo bench -p mpiscope-trace`).
//!
//! Measures ns per event for the recorder's hottest pattern, a polling `MPI_Iprobe` loop
//! (same call, same arguments, varying times), and for a mix of point-to-point events, and
//! the decoder's events per second.

use std::time::Instant;

use mpiscope_trace::{Args, BlockEncoder, RankReader, RankWriter, RawEvent, Slot, PEER_ANY};

fn probe_args() -> Args {
    let mut a = Args::EMPTY;
    a.set(Slot::Peer, PEER_ANY);
    a.set(Slot::Tag, 77);
    a.set(Slot::Comm, 0);
    a.set(Slot::Flag, 0);
    a
}

fn bench_push(n: u64) -> f64 {
    let mut enc = BlockEncoder::new(256 << 10, 0);
    let mut t = 1000u64;
    let mut args = probe_args();
    let start = Instant::now();
    for i in 0..n {
        // As the recorder does: rebuild the arguments every call.
        args.reset();
        args.set(Slot::Comm, 0);
        args.set(Slot::Peer, PEER_ANY);
        args.set(Slot::Tag, 77);
        args.set(Slot::Flag, 0);
        let t_enter = t + 20 + (i & 7);
        let t_exit = t_enter + 150 + (i & 15);
        t = t_exit;
        let ev = RawEvent {
            call: 5,
            t_enter,
            t_exit,
            callsite: 1,
            core: u32::MAX,
            ret: 0,
            skipped: 0,
            args: &args,
            lists: &[],
            cpu: None,
        };
        if !enc.push(&ev) {
            std::hint::black_box(enc.seal(t, t));
            enc.clear();
            enc.push(&ev);
        }
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn bench_decode(n: u64) -> (f64, f64) {
    let info = mpiscope_trace::RankInfo::synthetic(0, 1);
    let mut w = RankWriter::new(Vec::new(), &info, 256 << 10).unwrap();
    let args = probe_args();
    let mut t = 0u64;
    for i in 0..n {
        let t_enter = t + 20 + (i & 7);
        let t_exit = t_enter + 150 + (i & 15);
        t = t_exit;
        w.event(&RawEvent {
            call: 5,
            t_enter,
            t_exit,
            callsite: 1,
            core: u32::MAX,
            ret: 0,
            skipped: 0,
            args: &args,
            lists: &[],
            cpu: None,
        })
        .unwrap();
    }
    let bytes = w.finish(None).unwrap();
    let start = Instant::now();
    let r = RankReader::new(bytes.as_slice(), "mem").unwrap();
    let count = r.count() as u64;
    assert_eq!(count, n);
    let secs = start.elapsed().as_secs_f64();
    (n as f64 / secs, bytes.len() as f64 / n as f64)
}

fn main() {
    // `cargo bench -p mpiscope-trace --bench codec -- N` to change the event count.
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    let mut pushes: Vec<f64> = (0..5).map(|_| bench_push(n)).collect();
    pushes.sort_by(f64::total_cmp);
    println!(
        "encode: {:.2} ns per polling event (median of 5 x {n})",
        pushes[2]
    );
    let (rate, bpe) = bench_decode(n / 4);
    println!(
        "decode: {:.1} M events/s, {:.2} bytes per event",
        rate / 1e6,
        bpe
    );
}
