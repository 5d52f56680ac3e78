//! Throughput of loop folding (and of [Grosclaude 2012]'s algorithm) on synthetic symbol sequences
//! of a halo-exchange program: per iteration a burst and 5 calls (10 symbols), an
//! allreduce every 10 iterations, and one irregular symbol every 1,000 iterations. Prints
//! symbols per second and the folded size at each length (items; for approximate loops,
//! parts); run with
//! `cargo bench -p mpiscope-structure --bench fold` (see scripts/bench-structure.sh).

use std::time::Instant;

use mpiscope_structure::{approx, fold::Folder, seed, Node};

fn halo(symbols: usize) -> impl Iterator<Item = (u32, f64)> {
    let iteration: [u32; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    let mut it = 0u64;
    let mut buf: Vec<u32> = Vec::new();
    let mut produced = 0usize;
    std::iter::from_fn(move || {
        if produced == symbols {
            return None;
        }
        if buf.is_empty() {
            it += 1;
            buf.extend(iteration.iter().rev());
            if it % 10 == 0 {
                buf.insert(0, 11);
                buf.insert(0, 10);
            }
            if it % 1000 == 0 {
                buf.insert(0, 12 + (it / 1000 % 3) as u32);
            }
        }
        produced += 1;
        buf.pop().map(|s| (s, (s + 1) as f64))
    })
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000_000, 10_000_000]
    } else {
        sizes
    };
    println!(
        "{:>12} {:>10} {:>14} {:>8} {:>10}",
        "symbols", "algorithm", "symbols/s", "items", "seconds"
    );
    for &n in &sizes {
        for rep in 0..3 {
            let t = Instant::now();
            let mut f = Folder::new();
            for (s, v) in halo(n) {
                f.push(s, v);
            }
            let items = f.len();
            let out = f.finish();
            let secs = t.elapsed().as_secs_f64();
            let total: u64 = out.iter().map(Node::expanded_len).sum();
            assert_eq!(total, n as u64);
            println!(
                "{n:>12} {:>10} {:>14.0} {items:>8} {secs:>10.3}",
                format!("fold#{rep}"),
                n as f64 / secs
            );
        }
        {
            // Approximate loops over the same sequence (held in memory, as the callers do).
            let seq: Vec<(u32, f64)> = halo(n).collect();
            let t = Instant::now();
            let parts = approx::approximate(&seq, &|s| s % 2 == 1, &approx::Options::default());
            let secs = t.elapsed().as_secs_f64();
            let total: u64 = parts.iter().map(approx::Part::expanded_len).sum();
            assert_eq!(total, n as u64);
            println!(
                "{n:>12} {:>10} {:>14.0} {:>8} {secs:>10.3}",
                "approx",
                n as f64 / secs,
                parts.len()
            );
        }
        if n <= 1_000_000 {
            let t = Instant::now();
            let out = seed::compress(halo(n));
            let secs = t.elapsed().as_secs_f64();
            println!(
                "{n:>12} {:>10} {:>14.0} {:>8} {secs:>10.3}",
                "seed",
                n as f64 / secs,
                out.len()
            );
        }
    }
}
