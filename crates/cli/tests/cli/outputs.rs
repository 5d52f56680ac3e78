//! No user data lost or overwritten: every command that writes a file replaces only what
//! mpiscope wrote (or anything regular with `--force`), never through a symbolic link, a
//! directory or a special file; `mpiscope trace -o DIR` never loses an earlier trace;
//! paths from input files stay inside the output directory; `bench --predict` works in a
//! private temporary directory.

use crate::common;
// The synthetic trace writer of the export tests (it allows its own unused helpers).
#[path = "../../../export/tests/export/common.rs"]
pub(crate) mod synthetic;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{mpi_lock, mpiscope, tempdir, Mpi};
use mpiscope_trace::Slot;

/// A small synthetic run of two ranks (a message each way) in `dir/run`.
fn synthetic_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    synthetic::write_run(&run, 2, |rank, b| {
        b.call("MPI_Init", 500, 1000, &[], &[]);
        let peer = i64::from(1 - rank);
        if rank == 0 {
            b.call("MPI_Send", 100, 50, &synthetic::p2p(peer, 1, 4, 4), &[]);
            b.call("MPI_Recv", 100, 50, &synthetic::p2p(peer, 2, 4, 4), &[]);
        } else {
            b.call("MPI_Recv", 100, 50, &synthetic::p2p(peer, 1, 4, 4), &[]);
            b.call("MPI_Send", 100, 50, &synthetic::p2p(peer, 2, 4, 4), &[]);
        }
        b.call(
            "MPI_Barrier",
            10,
            20,
            &[(Slot::Comm, synthetic::WORLD)],
            &[],
        );
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    run
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(mpiscope());
    for a in args {
        c.arg(a);
    }
    c.output().expect("run mpiscope")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Refused: exit 1 (not a panic) with a message naming `path` and `words`.
fn assert_refused(o: &Output, path: &Path, words: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let name = path.file_name().unwrap().to_string_lossy();
    assert!(e.contains(&*name) && e.contains(words), "{e}");
}

fn assert_ok(o: &Output) {
    assert!(o.status.success(), "{}", stderr(o));
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn export_replaces_its_own_output_and_refuses_anything_else() {
    let tmp = tempdir();
    let trace = synthetic_run(tmp.path());
    // Chrome: a foreign file is refused and kept; --force replaces it; our own is replaced.
    let json = tmp.path().join("notes.json");
    std::fs::write(&json, "{\"my\": \"notes\"}").unwrap();
    let export = |format: &str, out: &Path, force: bool| {
        let mut c = Command::new(mpiscope());
        c.arg("export").arg(&trace).args(["--format", format, "-o"]);
        c.arg(out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    assert_refused(&export("chrome", &json, false), &json, "--force");
    assert_eq!(read(&json), "{\"my\": \"notes\"}");
    assert_ok(&export("chrome", &json, true));
    assert!(read(&json).contains("\"generator\":\"mpiscope\""));
    let first = read(&json);
    assert_ok(&export("chrome", &json, false));
    assert_eq!(read(&json), first, "an export replaced by the same export");
    // Paraver: the three files are judged before any is written.
    let base = tmp.path().join("pv");
    std::fs::write(tmp.path().join("pv.pcf"), "my colours").unwrap();
    assert_refused(
        &export("paraver", &base, false),
        &tmp.path().join("pv.pcf"),
        "--force",
    );
    assert!(!tmp.path().join("pv.prv").exists());
    assert_eq!(read(&tmp.path().join("pv.pcf")), "my colours");
    std::fs::remove_file(tmp.path().join("pv.pcf")).unwrap();
    assert_ok(&export("paraver", &base, false));
    assert_ok(&export("paraver", &base, false));
    // SimGrid TI: a foreign index.txt in the output directory.
    let ti = tmp.path().join("ti");
    std::fs::create_dir(&ti).unwrap();
    std::fs::write(ti.join("index.txt"), "shopping list\n").unwrap();
    assert_refused(
        &export("simgrid-ti", &ti, false),
        &ti.join("index.txt"),
        "--force",
    );
    assert!(!ti.join("rank-0.txt").exists());
    std::fs::remove_file(ti.join("index.txt")).unwrap();
    assert_ok(&export("simgrid-ti", &ti, false));
    assert_ok(&export("simgrid-ti", &ti, false));
    assert_eq!(read(&ti.join("index.txt")).lines().count(), 2);
    // OTF2: an archive mpiscope wrote is replaced; a traces/ directory of other files is
    // never removed, even with --force; other files in the directory stay.
    let otf2 = tmp.path().join("otf2");
    std::fs::create_dir(&otf2).unwrap();
    std::fs::write(otf2.join("README"), "mine").unwrap();
    assert_ok(&export("otf2", &otf2, false));
    assert_ok(&export("otf2", &otf2, false));
    assert_eq!(read(&otf2.join("README")), "mine");
    let names: Vec<_> = std::fs::read_dir(&otf2)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "staging left behind: {names:?}");
    let other = tmp.path().join("otf2-other");
    std::fs::create_dir_all(other.join("traces")).unwrap();
    std::fs::write(other.join("traces/thesis.tex"), "x").unwrap();
    for force in [false, true] {
        let o = export("otf2", &other, force);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(read(&other.join("traces/thesis.tex")), "x");
    }
}

#[test]
fn outputs_never_go_through_links_or_into_special_files() {
    let tmp = tempdir();
    let trace = synthetic_run(tmp.path());
    let victim = tmp.path().join("victim.html");
    std::fs::write(&victim, "precious").unwrap();
    let link = tmp.path().join("report.html");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for force in [false, true] {
        let mut c = Command::new(mpiscope());
        c.arg("report").arg(&trace).arg("--html").arg(&link);
        if force {
            c.arg("--force");
        }
        let o = c.output().unwrap();
        assert_refused(&o, &link, "symbolic link");
        assert_eq!(read(&victim), "precious");
    }
    // A directory at the output path.
    let dir = tmp.path().join("out.json");
    std::fs::create_dir(&dir).unwrap();
    let o = run(&[
        &"export",
        &trace,
        &"--format",
        &"chrome",
        &"-o",
        &dir,
        &"--force",
    ]);
    assert_refused(&o, &dir, "a directory");
    // Our own HTML report is replaced; a foreign page is not.
    let page = tmp.path().join("page.html");
    assert_ok(&run(&[&"report", &trace, &"--html", &page]));
    assert!(read(&page).contains("<meta name=\"generator\" content=\"mpiscope\">"));
    assert_ok(&run(&[&"report", &trace, &"--html", &page]));
    let mine = tmp.path().join("mine.html");
    std::fs::write(&mine, "<html>my page</html>").unwrap();
    assert_refused(
        &run(&[&"report", &trace, &"--html", &mine]),
        &mine,
        "--force",
    );
    assert_refused(
        &run(&[&"compare", &trace, &trace, &"--html", &mine]),
        &mine,
        "--force",
    );
    assert_eq!(read(&mine), "<html>my page</html>");
    // structure --save, replay --timeline, hpl --timeline, calibrate -o: refused before
    // any work (the other inputs need not even exist).
    let o = run(&[&"structure", &trace, &"--save", &mine]);
    assert_refused(&o, &mine, "--force");
    let nowhere = tmp.path().join("nowhere");
    let o = run(&[
        &"replay",
        &nowhere,
        &"--platform",
        &nowhere,
        &"--timeline",
        &mine,
    ]);
    assert_refused(&o, &mine, "--force");
    let o = run(&[
        &"hpl",
        &nowhere,
        &"--platform",
        &nowhere,
        &"--timeline",
        &mine,
    ]);
    assert_refused(&o, &mine, "--force");
    let o = run(&[&"calibrate", &nowhere, &"-o", &mine]);
    assert_refused(&o, &mine, "--force");
    assert_eq!(read(&mine), "<html>my page</html>");
    // The structural form is replaced by the next save.
    let form = tmp.path().join("form.json.gz");
    assert_ok(&run(&[&"structure", &trace, &"--save", &form]));
    assert_ok(&run(&[&"structure", &trace, &"--save", &form]));
}

/// A study whose figure path leaves --out, and a second study over the first's --out.
#[test]
fn plan_keeps_to_its_own_output_directory() {
    let tmp = tempdir();
    let study = |name: &str, figure: &str| {
        let p = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &p,
            format!(
                "name = \"{name}\"\nworkload = {{ trace = \"run\" }}\n[platform]\nfile = \"p.xml\"\n\
                 [[axis]]\nset = \"scale.speed\"\nvalues = [1, 2]\n\
                 [[figure]]\nfile = \"{figure}\"\nx = \"scale.speed\"\ny = \"time_s\"\n"
            ),
        )
        .unwrap();
        p
    };
    let out = tmp.path().join("out");
    for escape in ["../../x.svg", "/tmp/x.svg"] {
        let s = study("escape", escape);
        let o = run(&[&"plan", &s, &"--report", &"--out", &out]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains(&format!(
                "escape.toml: [[figure]] file = \"{escape}\": must stay inside --out"
            )),
            "{e}"
        );
        assert!(!out.exists(), "nothing written");
    }
    // A figure path through a link that leads outside.
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(tmp.path(), out.join("up")).unwrap();
    let s = study("linked", "up/x.svg");
    let o = run(&[&"plan", &s, &"--report", &"--out", &out]);
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert!(!tmp.path().join("x.svg").exists());
    std::fs::remove_file(out.join("up")).unwrap();
    std::fs::remove_dir(&out).unwrap();
    // Study alpha's results; beta over them is refused, then replaces them with --force.
    let alpha = study("alpha", "a.svg");
    assert_ok(&run(&[&"plan", &alpha, &"--report", &"--out", &out]));
    assert_ok(&run(&[&"plan", &alpha, &"--report", &"--out", &out]));
    assert!(out.join("a.svg").is_file());
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let beta = study("beta", "b.svg");
    let o = run(&[&"plan", &beta, &"--report", &"--out", &out]);
    assert_refused(&o, &out, "\"alpha\"");
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_ok(&run(&[
        &"plan",
        &beta,
        &"--report",
        &"--out",
        &out,
        &"--force",
    ]));
    assert!(!out.join("a.svg").exists(), "alpha's figure removed");
    assert!(out.join("b.svg").is_file());
    assert_eq!(read(&out.join("notes.txt")), "mine");
    assert!(read(&out.join("study.json")).contains("\"beta\""));
}

/// `mpiscope trace` refuses what it must not touch before launching anything.
#[test]
fn trace_refuses_foreign_directories_and_bad_recorder_options() {
    let tmp = tempdir();
    let foreign = tmp.path().join("thesis");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("chapter.tex"), "x").unwrap();
    let launcher = Mpi::OpenMpi.launcher(2);
    let trace = |o: &Path, extra: &[&str]| {
        let mut c = Command::new(mpiscope());
        c.arg("trace").arg("-o").arg(o).args(extra);
        c.arg("--preload").arg(Mpi::OpenMpi.preload()).arg("--");
        c.args(&launcher).arg("/bin/true");
        c.output().unwrap()
    };
    for force in [&[][..], &["--force"][..]] {
        let o = trace(&foreign, force);
        assert_refused(&o, &foreign, "--force does not apply");
    }
    assert_eq!(read(&foreign.join("chapter.tex")), "x");
    let fresh = tmp.path().join("fresh");
    for (opts, named) in [
        (&["--buffer", "0"][..], "--buffer"),
        (&["--buffer", "2G"][..], "--buffer"),
        (&["--start-after=-1"][..], "--start-after"),
        (&["--duration", "inf"][..], "--duration"),
        (&["--sample", "MPI_Send=0"][..], "--sample"),
        (&["--stack", "65"][..], "--stack"),
    ] {
        let o = trace(&fresh, opts);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{opts:?}: {e}");
        assert!(e.contains(&format!("mpiscope: error: {named}")), "{e}");
        assert!(!fresh.exists(), "{opts:?} created {}", fresh.display());
    }
    // Values outside a closed list are usage errors, clap's.
    for (opts, named) in [
        (&["--core", "always"][..], "--core <MODE>"),
        (&["--clock", "rdtsc"][..], "--clock <CLOCK>"),
    ] {
        let o = trace(&fresh, opts);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{opts:?}: {e}");
        assert!(e.contains(named) && e.contains("possible values"), "{e}");
        assert!(!fresh.exists(), "{opts:?} created {}", fresh.display());
    }
    // A program that cannot be started: the directory made for it goes again.
    let o = Command::new(mpiscope())
        .arg("trace")
        .arg("-o")
        .arg(&fresh)
        .args(["--flavour", "openmpi", "--"])
        .arg(tmp.path().join("no-such-program"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-program"), "{}", stderr(&o));
    assert!(!fresh.exists(), "a failed launch left {}", fresh.display());
}

fn hashes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn siblings(parent: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A real trace, then runs that write none (a missing program, a program without MPI):
/// with --force, the old trace stays byte for byte and nothing is left beside it; a run
/// that writes a trace replaces the old trace's files and keeps the others.
#[test]
fn a_failed_launch_keeps_the_earlier_trace() {
    let exe = common::build(Mpi::OpenMpi, "c/collectives.c", &[]);
    let tmp = tempdir();
    let _g = mpi_lock();
    let (r, dir) = common::run_traced(Mpi::OpenMpi, 2, &exe, &[], &[], tmp.path());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let before = hashes(&dir);
    let parent_before = siblings(tmp.path());
    let trace = |program: &Path, force: bool| {
        let mut c = Command::new(mpiscope());
        c.arg("trace").arg("-o").arg(&dir);
        if force {
            c.arg("--force");
        }
        c.arg("--preload").arg(Mpi::OpenMpi.preload()).arg("--");
        c.args(Mpi::OpenMpi.launcher(2)).arg(program);
        c.output().unwrap()
    };
    // Without --force: refused.
    let o = trace(&exe, false);
    assert_refused(&o, &dir, "--force");
    let missing = tmp.path().join("no-such-program");
    for program in [missing.as_path(), Path::new("/bin/true")] {
        let o = trace(program, true);
        assert!(stderr(&o).contains("left as it was"), "{}", stderr(&o));
        assert_eq!(hashes(&dir), before, "the earlier trace changed");
        assert_eq!(
            siblings(tmp.path()),
            parent_before,
            "something left beside it"
        );
    }
    // A run that writes a trace replaces it.
    let o = trace(&exe, true);
    assert_ok(&o);
    assert_eq!(read(&dir.join("notes.txt")), "mine");
    assert_ne!(hashes(&dir), before);
    assert_eq!(siblings(tmp.path()), parent_before);
    let report = run(&[&"report", &dir, &"--json"]);
    assert_ok(&report);
}

/// `bench --predict` keeps its files in a private directory of an unpredictable name:
/// links planted under the names it used to take (`$TMPDIR/mpiscope-predict-<pid>`) lead
/// nowhere, and nothing is left in $TMPDIR after it.
#[test]
fn bench_predict_ignores_planted_links() {
    let tmp = tempdir();
    let tmpdir = tmp.path().join("tmp");
    let victim = tmp.path().join("victim");
    std::fs::create_dir_all(&tmpdir).unwrap();
    std::fs::create_dir_all(victim.join("run")).unwrap();
    std::fs::write(victim.join("run/keep"), "precious").unwrap();
    std::fs::write(victim.join("results.json"), "precious").unwrap();
    let platform = tmp.path().join("p.toml");
    std::fs::write(&platform, "# any\n").unwrap();
    // The next process ids: plant a link for each of the next few hundred.
    let next = std::process::Command::new("true")
        .spawn()
        .map(|mut c| {
            let id = c.id();
            let _ = c.wait();
            id
        })
        .unwrap();
    for pid in next..next + 400 {
        std::os::unix::fs::symlink(&victim, tmpdir.join(format!("mpiscope-predict-{pid}")))
            .unwrap();
    }
    let planted = siblings(&tmpdir);
    let _g = mpi_lock();
    // The benchmark binary fails at once (`false`): the prediction stops after creating its
    // directory and starting the measurement.
    let o = Command::new(mpiscope())
        .env("TMPDIR", &tmpdir)
        .args(["bench", "-np", "1", "--binary", "/bin/false", "--predict"])
        .arg(&platform)
        .arg("m1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(read(&victim.join("run/keep")), "precious");
    assert_eq!(read(&victim.join("results.json")), "precious");
    assert_eq!(siblings(&victim), ["results.json", "run"]);
    assert_eq!(siblings(&tmpdir), planted, "left behind in $TMPDIR");
}
