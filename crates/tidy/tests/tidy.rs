//! The rules of ARCHITECTURE.md that a scan of the tree can check. Each failure names the
//! file (and line) to fix; an exception is a comment in the file that says why
//! (`// tidy: long file: <why>`, `// tidy: long function: <why>` just above the function).

use mpiscope_tidy::*;

/// Library, binary and build-script sources (not tests, benches or generated code).
fn sources() -> Vec<std::path::PathBuf> {
    let root = root();
    files(&root.join("crates"), ".rs")
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            s.contains("/src/") && !s.contains("/tests/") && !s.contains("/benches/")
        })
        .collect()
}

fn rel(p: &std::path::Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// Is this file (by its path) test code?
fn is_test_file(p: &std::path::Path) -> bool {
    let n = p.file_name().unwrap().to_string_lossy();
    n == "tests.rs" || n.ends_with("_tests.rs") || p.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn every_module_says_what_it_is_for() {
    let mut missing = Vec::new();
    for p in sources() {
        let text = std::fs::read_to_string(&p).unwrap();
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("#!["));
        if !first.is_some_and(|l| l.starts_with("//!")) && !is_test_file(&p) {
            missing.push(rel(&p));
        }
    }
    assert!(
        missing.is_empty(),
        "modules without a `//!` doc at the top:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn files_are_small_enough_to_review() {
    const MAX: usize = 800;
    let mut long = Vec::new();
    for p in sources() {
        let text = std::fs::read_to_string(&p).unwrap();
        let n = code_lines(&text);
        if n > MAX && exception(&text, "long file").is_none() {
            long.push(format!("{} ({n} lines of code)", rel(&p)));
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX} lines of code (split them, or say why at the top with `// tidy: long file: <why>`):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn functions_are_small_enough_to_read() {
    const MAX: usize = 120;
    let mut long = Vec::new();
    for p in sources() {
        if is_test_file(&p) {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for f in functions(&text) {
            if f.lines > MAX && f.reason.is_none() {
                long.push(format!(
                    "{}:{} fn {} ({} lines)",
                    rel(&p),
                    f.line,
                    f.name,
                    f.lines
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX} lines (split them, or say why just above with `// tidy: long function: <why>`):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn no_module_cycles() {
    let root = root();
    let mut found = Vec::new();
    // Every crate root (a `src` holding lib.rs or main.rs: the preload and overlap libraries
    // share one `src` between two packages).
    let mut srcs: Vec<std::path::PathBuf> = files(&root.join("crates"), ".rs")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n == "lib.rs" || n == "main.rs")
                && p.parent().is_some_and(|d| d.ends_with("src"))
        })
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    srcs.sort();
    srcs.dedup();
    for src in srcs {
        for c in cycles(&module_graph(&src)) {
            found.push(format!("{}: {}", rel(&src), c.join(" <-> ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that use each other (move what they share into a leaf module):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn only_the_recorder_the_overlap_libraries_and_the_benchmark_link_mpi() {
    let root = root();
    let allowed = ["crates/preload", "crates/overlap", "crates/bench"];
    let mut wrong = Vec::new();
    for manifest in files(&root.join("crates"), "Cargo.toml") {
        let r = rel(&manifest);
        if allowed.iter().any(|a| r.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        for line in text.lines() {
            let dep = line.split(['=', '.']).next().unwrap_or("").trim();
            if matches!(dep, "mpi" | "mpi-sys" | "mpiscope-preload-gen") {
                wrong.push(format!("{r}: {}", line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "only crates/preload, crates/overlap and crates/bench may depend on MPI (the analyses, the simulator and the CLI build without one):\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_project_cites_its_sources_by_name() {
    let root = root();
    let mut texts = Vec::new();
    for dir in ["crates", "scripts", "docs", "examples", "tests", "bench"] {
        for ext in [".rs", ".md", ".sh", ".toml", ".c", ".f90"] {
            texts.extend(files(&root.join(dir), ext));
        }
    }
    texts.extend([root.join("README.md"), root.join("ARCHITECTURE.md")]);
    // Internal numbers mean nothing to a reader: cite works by their references.md key.
    // Spelled in pieces, so that this file does not cite what it forbids.
    let seed = concat!("se", "ed");
    let issue = concat!("iss", "ue");
    let mut pats = vec![
        format!("{seed} 00"),
        format!("{seed}'s"),
        format!("the {seed} "),
    ];
    pats.extend((1..=9).map(|d| format!("{issue} {d}")));
    let mut found = Vec::new();
    for p in texts {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let low = line.to_lowercase();
            if pats.iter().any(|pat| low.contains(pat.as_str())) {
                found.push(format!("{}:{}: {}", rel(&p), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite works by their key in docs/references.md, not by internal numbers:\n  {}",
        found.join("\n  ")
    );
}
