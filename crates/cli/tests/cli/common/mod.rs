//! Helpers shared by the end-to-end tests: build MPI test programs, run them with and
//! without the recorder under a real `mpirun`, read the traces back.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use mpiscope_trace::{Event, RankReader, RunDir, Tables};

/// Serializes MPI runs: the machine has two cores, and oversubscribed runs of several
/// tests at once time out or starve each other.
pub static MPI_LOCK: Mutex<()> = Mutex::new(());

/// Takes the MPI lock (ignoring poisoning by a failed test).
pub fn mpi_lock() -> std::sync::MutexGuard<'static, ()> {
    MPI_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `mpiscope` binary under test.
pub fn mpiscope() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mpiscope"))
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Directory of the build profile (`target/debug` or `target/release`).
pub fn profile_dir() -> PathBuf {
    mpiscope().parent().unwrap().to_path_buf()
}

/// The MPI implementations under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpi {
    /// Open MPI (Debian's default `mpicc`).
    OpenMpi,
    /// MPICH (`mpicc.mpich`).
    Mpich,
}

impl Mpi {
    /// `openmpi` or `mpich`.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// C compiler wrapper.
    pub fn cc(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpicc.openmpi",
            Mpi::Mpich => "mpicc.mpich",
        }
    }

    /// Fortran compiler wrapper.
    pub fn fc(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpifort.openmpi",
            Mpi::Mpich => "mpifort.mpich",
        }
    }

    /// The launcher and its arguments for `np` ranks (root-safe, oversubscribed).
    pub fn launcher(self, np: u32) -> Vec<String> {
        match self {
            Mpi::OpenMpi => vec![
                "mpirun.openmpi".into(),
                "--allow-run-as-root".into(),
                "--oversubscribe".into(),
                "--mca".into(),
                "btl".into(),
                "self,vader".into(),
                "-np".into(),
                np.to_string(),
            ],
            Mpi::Mpich => vec!["mpirun.mpich".into(), "-np".into(), np.to_string()],
        }
    }

    /// The preload library this build produced.
    pub fn preload(self) -> PathBuf {
        let p = profile_dir().join(format!("libmpiscope_preload_{}.so", self.name()));
        assert!(
            p.is_file(),
            "{} is missing: build the workspace first (`cargo build --workspace` with the same profile)",
            p.display()
        );
        p
    }
}

/// Where compiled test programs go.
fn programs_out(mpi: Mpi) -> PathBuf {
    let d = profile_dir()
        .join("mpiscope-test-programs")
        .join(mpi.name());
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `src` into `out` through a temporary file renamed over `out`, so a test never
/// runs a half-written executable (tests of several modules run at once in one binary).
fn compile(compiler: &str, src: &Path, out: &Path, extra: &[&str]) {
    let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
    let o = Command::new(compiler)
        .args(["-g", "-O1"])
        .args(extra)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        o.status.success(),
        "{compiler} {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&tmp, out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// Serializes the compilation of test programs: two tests building one program at once
/// would otherwise see each other's half-written file as fresh.
static BUILD: Mutex<()> = Mutex::new(());

/// Compiles `tests/programs/<name>` (C or Fortran, by extension) for `mpi`; returns the
/// executable. Recompiled when the source is newer.
pub fn build(mpi: Mpi, name: &str, extra: &[&str]) -> PathBuf {
    let src = root().join("tests/programs").join(name);
    assert!(src.is_file(), "no test program {}", src.display());
    let stem = Path::new(name)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // One directory per source directory: `npb/halo.c` and `../../examples/halo.c` must not
    // share an executable (the file name stays the program's, as commands show it).
    let dir: PathBuf = Path::new(name)
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let out_dir = programs_out(mpi).join(dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(&stem);
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let fresh = match (std::fs::metadata(&out), std::fs::metadata(&src)) {
        (Ok(o), Ok(s)) => o.modified().unwrap() >= s.modified().unwrap(),
        _ => false,
    };
    if !fresh {
        let fortran = name.ends_with(".f90") || name.ends_with(".f") || name.ends_with(".F90");
        compile(if fortran { mpi.fc() } else { mpi.cc() }, &src, &out, extra);
    }
    out
}

/// Output of a run, with stdout and stderr as text.
pub struct Run {
    /// Exit code.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

fn run_output(o: Output) -> Run {
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `exe args` on `np` ranks without tracing.
pub fn run_plain(mpi: Mpi, np: u32, exe: &Path, args: &[&str]) -> Run {
    let mut l = mpi.launcher(np);
    let mut c = Command::new(l.remove(0));
    c.args(l).arg(exe).args(args);
    run_output(c.output().expect("launch"))
}

/// Runs `exe args` on `np` ranks under `mpiscope trace -o <dir> <options> --`; returns the
/// run and the trace directory (inside `dir`).
pub fn run_traced(
    mpi: Mpi,
    np: u32,
    exe: &Path,
    args: &[&str],
    options: &[&str],
    dir: &Path,
) -> (Run, PathBuf) {
    let out = dir.join("trace");
    let mut c = Command::new(mpiscope());
    c.arg("trace")
        .arg("-o")
        .arg(&out)
        .arg("--preload")
        .arg(mpi.preload())
        .args(options)
        .arg("--");
    c.args(mpi.launcher(np)).arg(exe).args(args);
    (run_output(c.output().expect("launch mpiscope")), out)
}

/// All events of one rank with their call names, the definition tables, and the reader's
/// end state (trailer present, where it stopped).
pub struct RankEvents {
    /// (C name, event), in file order.
    pub events: Vec<(String, Event)>,
    /// Definitions.
    pub tables: Tables,
    /// The trailer was read.
    pub complete: bool,
    /// Why reading stopped early, if it did.
    pub stopped: Option<String>,
}

/// Reads every event of `rank`.
pub fn read_rank(run: &Path, rank: u32) -> RankEvents {
    let dir = RunDir::open(run).unwrap();
    let mut r: RankReader<_> = dir.open_rank(rank).unwrap();
    let mut evs = Vec::new();
    while let Some(e) = r.next_event() {
        let n = r.tables().call_name(e.call).into_owned();
        evs.push((n, e));
    }
    RankEvents {
        events: evs,
        tables: r.tables().clone(),
        complete: r.trailer().is_some(),
        stopped: r.stopped().map(|e| e.to_string()),
    }
}

/// `mpiscope report DIR --json`.
pub fn report_json(run: &Path) -> serde_json::Value {
    let o = Command::new(mpiscope())
        .arg("report")
        .arg(run)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A page rendered by headless Chromium: width, height and RGBA pixels.
pub struct Rendered {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// RGBA, row by row.
    pub rgba: Vec<u8>,
}

impl Rendered {
    /// Fraction of pixels within `tolerance` (per channel) of `rgb`.
    pub fn share_of(&self, rgb: [u8; 3], tolerance: u8) -> f64 {
        let n = self
            .rgba
            .chunks_exact(4)
            .filter(|p| (0..3).all(|i| p[i].abs_diff(rgb[i]) <= tolerance))
            .count();
        n as f64 / (self.width as f64 * self.height as f64)
    }
}

/// Renders the HTML file `page` with headless Chromium (Debian's `chromium`, installed by
/// scripts/deps.sh) into a `width` x `height` screenshot and decodes it.
pub fn render_html(page: &Path, width: u32, height: u32) -> Rendered {
    let png_path = page.with_extension("png");
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", png_path.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium (apt-get install chromium, or scripts/deps.sh)");
    assert!(
        o.status.success() && png_path.is_file(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let decoder = png::Decoder::new(std::fs::File::open(&png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    Rendered {
        width: info.width,
        height: info.height,
        rgba,
    }
}

/// Runs `mpiscope report RUN --html PAGE`; returns the page's text.
pub fn html_report(run: &Path, page: &Path) -> String {
    let o = Command::new(mpiscope())
        .arg("report")
        .arg(run)
        .arg("--html")
        .arg(page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(page).unwrap()
}

/// Checks (or, with `MPISCOPE_BLESS=1`, rewrites) the generated section `name` of
/// `docs/FAULTS.md`: the text between `<!-- name:begin -->` and `<!-- name:end -->`.
/// `test` names the test target that generates it, for the message.
pub fn bless_section(name: &str, body: &str, test: &str) {
    let doc = root().join("docs/FAULTS.md");
    let text = std::fs::read_to_string(&doc).unwrap_or_default();
    let (begin, end) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
        panic!("docs/FAULTS.md has no `{begin}` ... `{end}` section");
    };
    let have = &text[b + begin.len()..e];
    if have == body {
        return;
    }
    if std::env::var_os("MPISCOPE_BLESS").is_some() {
        let new = format!("{}{body}{}", &text[..b + begin.len()], &text[e..]);
        std::fs::write(&doc, new).unwrap();
    } else {
        let old: Vec<&str> = have.lines().collect();
        let new: Vec<&str> = body.lines().collect();
        let changed: Vec<String> = new
            .iter()
            .filter(|l| !old.contains(l))
            .map(|l| format!("  now: {l}"))
            .chain(
                old.iter()
                    .filter(|l| !new.contains(l))
                    .map(|l| format!("  was: {l}")),
            )
            .collect();
        panic!(
            "docs/FAULTS.md's `{name}` section is not current: run `MPISCOPE_BLESS=1 cargo test --release -p mpiscope {test}`\n{}",
            changed.join("\n")
        );
    }
}

/// SimGrid's simulated time of the TI trace `index` at `np` ranks on `platform` (CM02, Open
/// MPI's collective selector, `Full` sharing updates, which solve the max-min systems as
/// `mpiscope replay` does); panics with SimGrid's output unless it finishes cleanly.
pub fn smpirun_replay(dir: &Path, index: &Path, np: u32, platform: &Path, hosts: &Path) -> f64 {
    let o = Command::new("smpirun")
        .current_dir(dir)
        .arg("-np")
        .arg(np.to_string())
        .arg("-platform")
        .arg(platform)
        .arg("-hostfile")
        .arg(hosts)
        .arg("-replay")
        .arg(index)
        .args([
            "--cfg=network/model:CM02",
            "--cfg=smpi/coll-selector:ompi",
            "--cfg=network/optim:Full",
            "--log=smpi_replay.fmt:[%.12d]%e%m%n",
        ])
        .output()
        .expect("smpirun (install SimGrid 3.32: apt-get install simgrid libsimgrid-dev)");
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "smpirun -replay failed ({}):\n{text}",
        o.status
    );
    assert!(!text.contains("Deadlock"), "SimGrid deadlocks:\n{text}");
    let line = text
        .lines()
        .rfind(|l| l.contains("Simulation time"))
        .unwrap_or_else(|| panic!("no simulation time in:\n{text}"));
    let t = line.trim_start_matches('[').split(']').next().unwrap_or("");
    t.parse().unwrap_or_else(|_| panic!("no time in {line:?}"))
}

/// A SimGrid cluster of 16 hosts `n0`..`n15` (1 Gflop/s, 1 GB/s links, 10 us) in
/// `dir/cluster.xml`, and the hostfile `dir/hosts` of its first `np` hosts, one rank each.
pub fn cluster(dir: &Path, np: u32) -> (PathBuf, PathBuf) {
    let platform = dir.join("cluster.xml");
    std::fs::write(
        &platform,
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\
         <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" \
         bw=\"1GBps\" lat=\"10us\"/></zone></platform>\n",
    )
    .unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        (0..np).map(|i| format!("n{i}\n")).collect::<String>(),
    )
    .unwrap();
    (platform, hosts)
}

/// The collectives each rank's T-NBC statistics line (`MPISCOPE_OVERLAP_STATS`) says it
/// overlapped, in the order the lines come.
pub fn tnbc_overlapped(stderr: &str) -> Vec<usize> {
    // Lines of two ranks may interleave: take the digits after each marker.
    stderr
        .split("overlapped ")
        .skip(1)
        .map(|r| {
            let d: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
            d.parse()
                .unwrap_or_else(|_| panic!("bad statistics line: {r}"))
        })
        .collect()
}
