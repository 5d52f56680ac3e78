//! Times the host's BLAS kernels, the compute half of calibration ([Cornebize 2017]): `dgemm` and
//! `dtrsm` of Debian's OpenBLAS (`libopenblas0`, through the CBLAS interface), one
//! thread, over a set of shapes that covers square products and HPL's panel updates, the
//! latter in HPL's own layout (operands inside the local matrix, NB-wide chunks in turn).
//! The samples are fitted by `mpiscope_calibrate::compute` (`t = a m n k + c m n + d m k +
//! e n k` for dgemm, `t = b m^2 n + c m n` for dtrsm), which knows nothing of BLAS.
//!
//! Only this crate uses OpenBLAS, and it loads it at run time ([`openblas`], in `blas`):
//! nothing links it, so the `mpiscope` binary starts without it and only the commands that
//! time kernels need it. Every function that calls BLAS takes the opened [`OpenBlas`].
//! Nothing here touches MPI.

use std::time::Instant;

pub use mpiscope_calibrate::compute::{Kernel, KernelSample};
pub use mpiscope_dynlib::LoadError;

mod blas;

pub use blas::{openblas, OpenBlas, OPENBLAS};

/// One shape to time: a kernel's dimensions (see [`KernelSample`]) and, for dgemm, the
/// rows of the matrix its output lies in (`ld`, 0: compact operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Which kernel.
    pub kernel: Kernel,
    /// Rows (dgemm), triangle order (dtrsm), panel rows, rows gathered.
    pub m: usize,
    /// Columns.
    pub n: usize,
    /// dgemm's inner dimension (0 for the others).
    pub k: usize,
    /// dgemm in HPL's layout ([`time_dgemm_in_matrix`]): the local matrix's rows; 0:
    /// compact ([`time_dgemm`]).
    pub ld: usize,
}

impl Shape {
    /// A shape with compact operands.
    pub fn new(kernel: Kernel, m: usize, n: usize, k: usize) -> Shape {
        Shape {
            kernel,
            m,
            n,
            k,
            ld: 0,
        }
    }

    /// A dgemm `m x n x k` in HPL's layout inside a local matrix of `ld` rows.
    pub fn dgemm_in_matrix(m: usize, n: usize, k: usize, ld: usize) -> Shape {
        Shape {
            ld: ld.max(m),
            ..Shape::new(Kernel::Dgemm, m, n, k)
        }
    }
}

/// The rows of the local matrix of most of [`default_shapes`]' HPL updates (N = 8,000 on 4
/// process rows, 16,000 on 8: 2,000 local rows).
pub const HPL_LD: usize = 2048;

/// The shapes timed by default: square dgemm products from 32 to 1024 (compact); HPL's
/// trailing updates in its layout ([`time_dgemm_in_matrix`]): `m` of 64 to 2048 local rows
/// of a [`HPL_LD`]-row matrix, NB-wide chunks or whole widths `n`, panel widths `k = NB` of
/// 64, 128 and 256, and the 4096-row products of a small grid; triangular solves of order
/// 32 to 256 with 256 to 4096 right-hand sides, panel factorizations of 512 to 8192 rows
/// and 32 to 256 columns, and row gathers of 64 to 256 rows by 1024 to 4096 columns.
/// Some seconds per pass on this host.
pub fn default_shapes() -> Vec<Shape> {
    let mut v = Vec::new();
    for s in [32, 64, 128, 256, 384, 512, 768, 1024] {
        v.push(Shape::new(Kernel::Dgemm, s, s, s));
    }
    v.push(Shape::dgemm_in_matrix(64, 128, 128, HPL_LD));
    for m in [256, 1024, 2048] {
        for n in [128, 512, 2048] {
            v.push(Shape::dgemm_in_matrix(m, n, 128, HPL_LD));
        }
    }
    for k in [64, 256] {
        for m in [1024, 2048] {
            for n in [k, 2048] {
                v.push(Shape::dgemm_in_matrix(m, n, k, HPL_LD));
            }
        }
    }
    for n in [128, 4096] {
        v.push(Shape::dgemm_in_matrix(4096, n, 128, 4096));
    }
    for order in [32, 64, 128, 256] {
        for n in [256, 1024, 4096] {
            v.push(Shape::new(Kernel::Dtrsm, order, n, 0));
        }
    }
    for n in [32, 64, 128, 256] {
        for m in [512, 2048, 8192] {
            v.push(Shape::new(Kernel::Panel, m, n, 0));
        }
    }
    for rows in [64, 128, 256] {
        for n in [1024, 4096] {
            v.push(Shape::new(Kernel::Laswp, rows, n, 0));
        }
    }
    v
}

/// Matrix filled with well-scaled, non-trivial values (no denormals, no zeros).
fn matrix(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| 0.5 + ((i * 7919 + seed * 104_729) % 1000) as f64 / 2000.0)
        .collect()
}

/// A lower unit triangle that keeps a solve well conditioned (small off-diagonal terms).
fn lower_unit(order: usize) -> Vec<f64> {
    let mut a = matrix(order * order, 3);
    for v in &mut a {
        *v /= order as f64;
    }
    for i in 0..order {
        a[i * order + i] = 1.0;
    }
    a
}

/// The clock the kernels are timed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// Wall time (`std::time::Instant`): what a run on a quiet machine takes.
    #[default]
    Wall,
    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), as SMPI times the
    /// computations of the programs it runs: time the thread was descheduled by other
    /// processes is not counted, so a shared machine's load does not inflate the kernels.
    Thread,
}

/// The clock of every timing that follows ([`use_clock`]): 0 wall, 1 thread.
static CLOCK: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Times the kernels with `clock` from now on (the default is [`Clock::Wall`]).
pub fn use_clock(clock: Clock) {
    CLOCK.store(
        u8::from(clock == Clock::Thread),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// Seconds on the chosen clock since an arbitrary origin (`start` for the wall clock).
fn clock_seconds(start: Instant) -> f64 {
    if CLOCK.load(std::sync::atomic::Ordering::Relaxed) == 1 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux has.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    start.elapsed().as_secs_f64()
}

/// Runs `f` until at least `min_seconds` have passed on the chosen clock (at least once)
/// and returns the time of one call, so that short kernels are not lost in the timer's
/// resolution.
fn time_one(min_seconds: f64, f: &mut dyn FnMut()) -> f64 {
    let origin = Instant::now();
    let start = clock_seconds(origin);
    let mut calls = 0u32;
    loop {
        f();
        calls += 1;
        let t = clock_seconds(origin) - start;
        if t >= min_seconds {
            return t / f64::from(calls);
        }
    }
}

/// Median of `samples` timed calls (after one untimed call) of `f`.
fn median_time(samples: usize, f: &mut dyn FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..samples.max(1)).map(|_| time_one(2e-3, f)).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Times `C = C - A B` with `A` m x k, `B` k x n, column major, each operand compact;
/// median of `samples`.
pub fn time_dgemm(blas: &OpenBlas, m: usize, n: usize, k: usize, samples: usize) -> f64 {
    let a = matrix(m * k, 1);
    let b = matrix(k * n, 2);
    let mut c = vec![0.0; m * n];
    median_time(samples, &mut || dgemm(blas, m, n, k, &a, &b, &mut c))
}

/// Times HPL's trailing update in its layout (HPL_pdupdateTT with more than one process
/// row): `C -= L U^T`, `L` the m x k panel (leading dimension m), `U` n rows of a
/// `width x k` block (leading dimension `width`, transposed in the call), `C` the last `m`
/// rows of n columns of the column-major local matrix of `ld` rows and `width = max(ld, n)`
/// columns (leading dimension `ld`). Each call takes the next n columns of the matrix and
/// the next n rows of `U`, as HPL's chunks do, so the output is not in cache from the
/// call before; median of `samples`.
pub fn time_dgemm_in_matrix(
    blas: &OpenBlas,
    (m, n, k): (usize, usize, usize),
    ld: usize,
    samples: usize,
) -> f64 {
    let ld = ld.max(m);
    let width = ld.max(n);
    let chunks = (width / n.max(1)).max(1);
    let l = matrix(m * k, 1);
    let u = matrix(width * k, 2);
    let mut c = matrix(ld * width, 3);
    let mut next = 0usize;
    median_time(samples, &mut || {
        let j0 = (next % chunks) * n;
        next += 1;
        assert!(m <= ld && j0 + n <= width && l.len() >= m * k && u.len() >= width * k);
        // SAFETY: `l` is m x k with leading dimension m; rows j0..j0+n of `u` (width x k,
        // leading dimension width) and the m x n block at row ld - m, column j0 of `c`
        // (ld x width, leading dimension ld) lie inside their buffers (checked above).
        unsafe {
            (blas.dgemm)(
                blas::COL_MAJOR,
                blas::NO_TRANS,
                blas::TRANS,
                m as i32,
                n as i32,
                k as i32,
                -1.0,
                l.as_ptr(),
                m as i32,
                u.as_ptr().add(j0),
                width as i32,
                1.0,
                c.as_mut_ptr().add(j0 * ld + (ld - m)),
                ld as i32,
            )
        }
    })
}

/// `C = C - A B` (column major, `A` m x k, `B` k x n): HPL's update, `beta` 1, so OpenBLAS
/// makes no separate pass to scale `C` (the values drift by about `k / 3` a call, far from
/// any range where doubles slow down).
fn dgemm(blas: &OpenBlas, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the slices hold at least m*k, k*n and m*n elements (checked above) with
    // leading dimensions m, k and m, as the column-major call requires.
    unsafe {
        (blas.dgemm)(
            blas::COL_MAJOR,
            blas::NO_TRANS,
            blas::NO_TRANS,
            m as i32,
            n as i32,
            k as i32,
            -1.0,
            a.as_ptr(),
            m as i32,
            b.as_ptr(),
            k as i32,
            1.0,
            c.as_mut_ptr(),
            m as i32,
        )
    }
}

/// Times `B = L^-1 B` with `L` a unit lower triangle of order `order` and `B` order x n (the
/// solve HPL makes for each block row of U); median of `samples`.
pub fn time_dtrsm(blas: &OpenBlas, order: usize, n: usize, samples: usize) -> f64 {
    let l = lower_unit(order);
    let rhs = matrix(order * n, 4);
    let mut b = rhs.clone();
    median_time(samples, &mut || {
        // Each call solves a fresh right-hand side, so values never grow.
        b.copy_from_slice(&rhs);
        // SAFETY: `l` is order x order and `b` is order x n, column major, leading
        // dimension `order` for both.
        unsafe {
            (blas.dtrsm)(
                blas::COL_MAJOR,
                blas::LEFT,
                blas::LOWER,
                blas::NO_TRANS,
                blas::UNIT,
                order as i32,
                n as i32,
                1.0,
                l.as_ptr(),
                order as i32,
                b.as_mut_ptr(),
                order as i32,
            )
        }
    })
}

/// Times the LU factorization with partial pivoting of an `m x n` panel (`m >= n`, column
/// major; see [`factor_panel`]); median of `samples`. Each call factors a fresh copy, whose
/// copying (`m n` doubles) is part of the time, as HPL copies panels too.
pub fn time_panel(blas: &OpenBlas, m: usize, n: usize, samples: usize) -> f64 {
    assert!(m >= n);
    let original = matrix(m * n, 5);
    let mut a = original.clone();
    let mut pivots = vec![0usize; n];
    median_time(samples, &mut || {
        a.copy_from_slice(&original);
        factor_panel(blas, &mut a, m, n, &mut pivots);
    })
}

/// Leading dimension of the matrix [`time_laswp`] gathers rows from (its rows, as a
/// process's local rows in HPL at N of a few thousand per process row).
pub const LASWP_LDA: usize = 4096;

/// Columns per block of [`gather_rows`] (each row's piece of a block is read before the
/// next row's, so a block's cache lines are shared by the rows that sit in them).
const GATHER_BLOCK: usize = 32;

/// Copies rows `rows` of the column-major matrix `a` (leading dimension `lda`), columns
/// `0..n`, into `u` transposed: row `rows[i]`'s column `j` to `u[i * n + j]`. The access
/// pattern of HPL's row gather before its row swaps' messages (HPL_dlaswp01T), in blocks
/// of [`GATHER_BLOCK`] columns.
pub fn gather_rows(a: &[f64], lda: usize, rows: &[usize], n: usize, u: &mut [f64]) {
    assert!(u.len() >= rows.len() * n);
    for j0 in (0..n).step_by(GATHER_BLOCK) {
        let j1 = (j0 + GATHER_BLOCK).min(n);
        for (i, &r) in rows.iter().enumerate() {
            for j in j0..j1 {
                u[i * n + j] = a[j * lda + r];
            }
        }
    }
}

/// Times [`gather_rows`] of `rows` rows spread over a matrix of [`LASWP_LDA`] rows, `n`
/// columns; median of `samples`.
pub fn time_laswp(rows: usize, n: usize, samples: usize) -> f64 {
    let lda = LASWP_LDA;
    let a = matrix(lda * n, 6);
    // Distinct rows all over the matrix (7919 is prime, so coprime with lda).
    let picked: Vec<usize> = (0..rows.min(lda)).map(|i| (i * 7919) % lda).collect();
    let mut u = vec![0.0; picked.len() * n];
    median_time(samples, &mut || {
        gather_rows(&a, lda, &picked, n, &mut u);
        std::hint::black_box(&u);
    })
}

/// LU factorization with partial pivoting, in place, of the `m x n` column-major panel `a`
/// (`m >= n`): `pivots[j]` is the row swapped with row `j`. Recursive as HPL's panel
/// factorization (NDIV 2): factor the left half, apply its swaps to the right half, solve
/// for the right half's top rows (dtrsm), update the rest (dgemm), factor it; below
/// [`PANEL_LEAF`] columns, column by column (idamax, row swap, dscal, dger).
pub fn factor_panel(blas: &OpenBlas, a: &mut [f64], m: usize, n: usize, pivots: &mut [usize]) {
    assert!(m >= n && a.len() >= m * n && pivots.len() >= n);
    // SAFETY: `a` holds the m x n panel with leading dimension m (checked above), and
    // every block the recursion touches lies inside it.
    unsafe { factor_block(blas, a.as_mut_ptr(), m, m, n, pivots) }
}

/// HPL's default recursion stopping point (NBMIN 4).
pub const PANEL_LEAF: usize = 4;

/// [`factor_panel`] on the `m x n` block at `a` with leading dimension `lda`.
///
/// # Safety
/// `a` must point to a column-major block of at least `(n - 1) lda + m` doubles, `m >= n`.
unsafe fn factor_block(
    c: &OpenBlas,
    a: *mut f64,
    lda: usize,
    m: usize,
    n: usize,
    pivots: &mut [usize],
) {
    let ld = lda as i32;
    if n <= PANEL_LEAF {
        for (j, pivot_row) in pivots.iter_mut().enumerate().take(n) {
            let col = a.add(j * lda);
            let p = j + (c.idamax)((m - j) as i32, col.add(j), 1);
            *pivot_row = p;
            if p != j {
                (c.dswap)(n as i32, a.add(j), ld, a.add(p), ld);
            }
            let pivot = *col.add(j);
            if j + 1 < m && pivot != 0.0 {
                (c.dscal)((m - j - 1) as i32, 1.0 / pivot, col.add(j + 1), 1);
            }
            if j + 1 < n {
                (c.dger)(
                    blas::COL_MAJOR,
                    (m - j - 1) as i32,
                    (n - j - 1) as i32,
                    -1.0,
                    col.add(j + 1),
                    1,
                    a.add((j + 1) * lda + j),
                    ld,
                    a.add((j + 1) * lda + j + 1),
                    ld,
                );
            }
        }
        return;
    }
    let (n1, n2) = (n / 2, n - n / 2);
    let (left, right) = pivots.split_at_mut(n1);
    factor_block(c, a, lda, m, n1, left);
    let a12 = a.add(n1 * lda);
    for (j, &p) in left.iter().enumerate() {
        if p != j {
            (c.dswap)(n2 as i32, a12.add(j), ld, a12.add(p), ld);
        }
    }
    (c.dtrsm)(
        blas::COL_MAJOR,
        blas::LEFT,
        blas::LOWER,
        blas::NO_TRANS,
        blas::UNIT,
        n1 as i32,
        n2 as i32,
        1.0,
        a,
        ld,
        a12,
        ld,
    );
    (c.dgemm)(
        blas::COL_MAJOR,
        blas::NO_TRANS,
        blas::NO_TRANS,
        (m - n1) as i32,
        n2 as i32,
        n1 as i32,
        -1.0,
        a.add(n1),
        ld,
        a12,
        ld,
        1.0,
        a12.add(n1),
        ld,
    );
    factor_block(c, a12.add(n1), lda, m - n1, n2, right);
    for (j, p) in right.iter_mut().enumerate() {
        *p += n1;
        if *p != n1 + j {
            (c.dswap)(n1 as i32, a.add(n1 + j), ld, a.add(*p), ld);
        }
    }
}

/// Times every shape (`samples` per shape), calling `progress(done, total)` after each.
pub fn measure(
    blas: &OpenBlas,
    shapes: &[Shape],
    samples: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<KernelSample> {
    measure_in_passes(blas, shapes, 1, samples, progress)
}

/// Times every shape in `passes` passes over the whole list (`samples` per shape and pass,
/// their median), and keeps per shape the median of its passes: a shared machine whose
/// speed drifts for a few seconds then disturbs a few passes of every shape rather than
/// every sample of a few shapes. Calls `progress(done, total)` after each shape and pass.
pub fn measure_in_passes(
    blas: &OpenBlas,
    shapes: &[Shape],
    passes: usize,
    samples: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<KernelSample> {
    let passes = passes.max(1);
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(passes); shapes.len()];
    for pass in 0..passes {
        for (
            i,
            &Shape {
                kernel,
                m,
                n,
                k,
                ld,
            },
        ) in shapes.iter().enumerate()
        {
            times[i].push(match kernel {
                Kernel::Dgemm if ld > 0 => time_dgemm_in_matrix(blas, (m, n, k), ld, samples),
                Kernel::Dgemm => time_dgemm(blas, m, n, k, samples),
                Kernel::Dtrsm => time_dtrsm(blas, m, n, samples),
                Kernel::Panel => time_panel(blas, m, n, samples),
                Kernel::Laswp => time_laswp(m, n, samples),
            });
            progress(pass * shapes.len() + i + 1, passes * shapes.len());
        }
    }
    shapes
        .iter()
        .zip(times)
        .map(|(s, mut t)| {
            t.sort_by(f64::total_cmp);
            KernelSample {
                kernel: s.kernel,
                m: s.m as u64,
                n: s.n as u64,
                k: s.k as u64,
                seconds: t[t.len() / 2],
                ld: s.ld as u64,
            }
        })
        .collect()
}

/// One dgemm worker of [`core_speeds`]: allocates `m x n x k` operands and makes one untimed
/// product, calls `ready` (which returns when every worker is ready), then runs products for
/// `seconds` (at least one) and returns its rate in flop/s.
pub fn dgemm_rate(
    blas: &OpenBlas,
    shape: (usize, usize, usize),
    seconds: f64,
    ready: impl FnOnce(),
) -> f64 {
    let (m, n, k) = shape;
    let a = matrix(m * k, 1);
    let b = matrix(k * n, 2);
    let mut c = vec![0.0; m * n];
    // Untimed: first touch of the output, OpenBLAS's buffers.
    dgemm(blas, m, n, k, &a, &b, &mut c);
    ready();
    let t0 = Instant::now();
    let mut calls = 0u32;
    while calls == 0 || t0.elapsed().as_secs_f64() < seconds {
        dgemm(blas, m, n, k, &a, &b, &mut c);
        calls += 1;
    }
    f64::from(calls) * 2.0 * (m * n * k) as f64 / t0.elapsed().as_secs_f64()
}

/// Per-core dgemm speed (flop/s) with 1, 2, ..., `cores` cores busy: `busy` worker processes
/// (each made by `worker()`, which must run [`dgemm_worker`]) start their products together,
/// and entry `busy - 1` is their mean rate. Each round measures every count in turn; entry
/// `busy - 1` is the median over the rounds of its rate relative to one core in the same
/// round, times the median one-core rate (so the ratios, which the simulator takes as
/// `mpiscope/core-efficiency`, come from measurements seconds apart on a machine whose
/// speed drifts). Cores that share caches, memory bandwidth and clock budget run slower
/// together. Processes, as MPI ranks are, each warmed up before the
/// timing: threads of one process, timed from a cold start, measured 0.80-0.83 of one core
/// alone on this host where warmed-up processes get 0.97-0.98 (and HPL on two ranks runs
/// at 0.95 of one rank's speed per rank).
pub fn core_speeds(
    cores: usize,
    rounds: usize,
    worker: &dyn Fn() -> std::process::Command,
) -> std::io::Result<Vec<f64>> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let cores = cores.max(1);
    // rates[round][busy - 1]
    let mut rates: Vec<Vec<f64>> = Vec::new();
    for _ in 0..rounds.max(1) {
        let mut round = Vec::with_capacity(cores);
        for busy in 1..=cores {
            let mut children = Vec::new();
            for _ in 0..busy {
                let child = worker()
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()?;
                children.push(child);
            }
            let mut outputs = Vec::new();
            for c in &mut children {
                let mut lines = BufReader::new(c.stdout.take().expect("piped")).lines();
                match lines.next() {
                    Some(Ok(l)) if l == "ready" => outputs.push(lines),
                    other => {
                        return Err(std::io::Error::other(format!(
                            "a dgemm worker did not start: {other:?}"
                        )))
                    }
                }
            }
            for c in &mut children {
                writeln!(c.stdin.as_mut().expect("piped"), "go")?;
            }
            let mut sum = 0.0;
            for (c, mut lines) in children.iter_mut().zip(outputs) {
                let line = lines.next().transpose()?.unwrap_or_default();
                c.wait()?;
                sum += line.trim().parse::<f64>().map_err(|_| {
                    std::io::Error::other(format!("a dgemm worker printed `{line}`"))
                })?;
            }
            round.push(sum / busy as f64);
        }
        rates.push(round);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let one = median(rates.iter().map(|r| r[0]).collect());
    Ok((0..cores)
        .map(|b| one * median(rates.iter().map(|r| r[b] / r[0]).collect()))
        .collect())
}

/// The worker side of [`core_speeds`] (the body of a hidden command of the CLI): one thread,
/// prints `ready`, waits for a line on standard input, times products of `shape` for
/// `seconds` and prints the rate (flop/s).
pub fn dgemm_worker(
    blas: &OpenBlas,
    shape: (usize, usize, usize),
    seconds: f64,
) -> std::io::Result<()> {
    use std::io::Write;
    blas.use_one_thread();
    let rate = dgemm_rate(blas, shape, seconds, || {
        println!("ready");
        let _ = std::io::stdout().flush();
        let mut go = String::new();
        let _ = std::io::stdin().read_line(&mut go);
    });
    println!("{rate}");
    std::io::stdout().flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's rate is a real measurement (positive, finite), taken after `ready`.
    #[test]
    fn dgemm_rate_times_after_ready() {
        let blas = openblas().unwrap();
        blas.use_one_thread();
        let mut ready = false;
        let r = dgemm_rate(blas, (64, 64, 64), 0.005, || ready = true);
        assert!(ready && r.is_finite() && r > 0.0, "{r}");
    }

    /// The row gather puts row `rows[i]`, column `j`, at `u[i n + j]`, across column
    /// blocks (70 columns: two full blocks and a partial one).
    #[test]
    fn gather_rows_transposes_the_chosen_rows() {
        let (lda, n) = (5, 70);
        let a: Vec<f64> = (0..lda * n).map(|x| x as f64).collect();
        let rows = [4, 0, 2];
        let mut u = vec![-1.0; rows.len() * n];
        gather_rows(&a, lda, &rows, n, &mut u);
        for (i, &r) in rows.iter().enumerate() {
            for j in 0..n {
                assert_eq!(u[i * n + j], (j * lda + r) as f64, "row {r} column {j}");
            }
        }
        assert!(time_laswp(8, 64, 1) > 0.0);
    }

    /// The timed calls compute what they claim: a 2x2 product and a 2x2 unit solve.
    #[test]
    fn kernels_compute_correct_results() {
        let blas = openblas().unwrap();
        blas.use_one_thread();
        let a = [1.0, 3.0, 2.0, 4.0]; // [[1, 2], [3, 4]] column major
        let b = [5.0, 7.0, 6.0, 8.0]; // [[5, 6], [7, 8]]
        let mut c = [0.0; 4];
        // SAFETY: 2x2 column-major matrices.
        unsafe {
            (blas.dgemm)(
                blas::COL_MAJOR,
                blas::NO_TRANS,
                blas::NO_TRANS,
                2,
                2,
                2,
                1.0,
                a.as_ptr(),
                2,
                b.as_ptr(),
                2,
                0.0,
                c.as_mut_ptr(),
                2,
            )
        };
        assert_eq!(c, [19.0, 43.0, 22.0, 50.0]);
        let l = lower_unit(3);
        assert_eq!((l[0], l[4], l[8]), (1.0, 1.0, 1.0));
        assert!(l.iter().all(|v| v.is_finite() && *v > 0.0));
    }

    /// The panel factorization is an LU with partial pivoting: P A = L U, checked on a
    /// 37 x 19 panel (odd sizes: uneven halves down to the leaves).
    #[test]
    fn panel_factorization_is_lu_with_partial_pivoting() {
        let blas = openblas().unwrap();
        blas.use_one_thread();
        let (m, n) = (37, 19);
        let original = matrix(m * n, 9);
        let mut a = original.clone();
        let mut pivots = vec![0; n];
        factor_panel(blas, &mut a, m, n, &mut pivots);
        // P A: the row swaps applied in order to the original.
        let mut pa = original.clone();
        for (j, &p) in pivots.iter().enumerate() {
            assert!(p >= j && p < m);
            for col in 0..n {
                pa.swap(col * m + j, col * m + p);
            }
        }
        for i in 0..m {
            for j in 0..n {
                // (L U)[i][j] = sum over k <= min(i, j) of L[i][k] U[k][j], L unit lower.
                let lu: f64 = (0..=i.min(j))
                    .map(|k| {
                        let l = if k == i { 1.0 } else { a[k * m + i] };
                        l * a[j * m + k]
                    })
                    .sum();
                assert!(
                    (lu - pa[j * m + i]).abs() < 1e-9,
                    "({i}, {j}): {lu} vs {}",
                    pa[j * m + i]
                );
            }
        }
        // Partial pivoting: every multiplier is at most 1 in magnitude.
        for j in 0..n {
            assert!((j + 1..m).all(|i| a[j * m + i].abs() <= 1.0 + 1e-12));
        }
    }

    #[test]
    fn timings_grow_with_the_work() {
        let blas = openblas().unwrap();
        blas.use_one_thread();
        let small = time_dgemm(blas, 32, 32, 32, 3);
        let large = time_dgemm(blas, 256, 256, 256, 3);
        assert!(small > 0.0 && large > small, "{small} {large}");
        let t = time_dtrsm(blas, 64, 256, 3);
        assert!(t > 0.0);
        let got = measure(
            blas,
            &[Shape::new(Kernel::Dtrsm, 32, 64, 0)],
            1,
            &mut |_, _| {},
        );
        assert_eq!((got[0].m, got[0].n, got[0].kernel), (32, 64, Kernel::Dtrsm));
        // In HPL's layout: the chunks cycle over the matrix, the sample says where it was.
        let shape = Shape::dgemm_in_matrix(64, 32, 16, 100);
        let got = measure(blas, &[shape], 1, &mut |_, _| {});
        assert_eq!((got[0].m, got[0].n, got[0].k, got[0].ld), (64, 32, 16, 100));
        assert!(got[0].seconds > 0.0);
    }
}
