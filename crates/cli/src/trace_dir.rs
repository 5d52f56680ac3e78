//! Where `mpiscope trace -o DIR` writes, so that no run loses an earlier one.
//!
//! * DIR that does not exist, or an empty one: the new trace goes there.
//! * DIR holding an mpiscope trace (`manifest.json`, `rank-*.mpst`): refused without
//!   `--force`; with it, that trace is replaced, and nothing else in DIR is touched.
//! * DIR holding anything else: refused, `--force` or not (mpiscope did not write it).
//!
//! A new or empty DIR is written directly (nothing there can be lost; a launch that
//! writes no rank file leaves it as it was, and a DIR this run created is removed again).
//! To replace an earlier trace, the run writes into a new sibling of DIR (same parent:
//! every move is a rename on one file system). Only when the run has produced at least
//! one rank file do the old trace's own files go and the new ones move in; a launch that
//! fails (a missing program, a launcher that exits before any rank starts recording)
//! leaves DIR as it was and removes only the sibling. Were `mpiscope trace` itself killed
//! (SIGKILL) during such a run, the old trace stays in DIR and the new one in the sibling
//! (`.DIR.mpiscope-*`): neither is lost.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mpiscope_trace::MANIFEST_FILE;

/// Whether `name` is one of a trace's own files.
fn is_trace_file(name: &str) -> bool {
    name == MANIFEST_FILE || is_rank_file(name)
}

fn is_rank_file(name: &str) -> bool {
    name.starts_with("rank-") && name.ends_with(".mpst")
}

/// The trace files in `dir` and whether it holds anything else.
fn scan(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut trace = Vec::new();
    let mut other = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let e = e.with_context(|| format!("cannot read {}", dir.display()))?;
        if is_trace_file(&e.file_name().to_string_lossy()) {
            trace.push(e.path());
        } else {
            other.push(e.path());
        }
    }
    trace.sort();
    other.sort();
    Ok((trace, other))
}

/// How the run reaches DIR.
enum Mode {
    /// DIR was new (`created`) or empty: the run writes into it.
    Direct { created: bool },
    /// DIR holds an earlier trace: the run writes into this sibling, removed with what is
    /// in it when dropped.
    Replace { staging: tempfile::TempDir },
}

/// The output of one `mpiscope trace` run: the directory asked for and where the run
/// writes.
pub struct TraceOutput {
    /// DIR, resolved (a symbolic link to a directory is followed).
    dest: PathBuf,
    mode: Mode,
}

impl TraceOutput {
    /// Checks DIR (see the module's rules) and creates the sibling.
    pub fn prepare(dir: &Path, force: bool) -> Result<TraceOutput> {
        let dest = match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(dir).is_ok() {
                    bail!(
                        "-o {}: is a symbolic link to nothing; choose another -o",
                        dir.display()
                    );
                }
                let parent = match dir.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                std::fs::create_dir_all(&parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
                let name = dir
                    .file_name()
                    .with_context(|| format!("-o {}: not a directory name", dir.display()))?;
                let parent = std::fs::canonicalize(&parent)
                    .with_context(|| format!("cannot resolve {}", parent.display()))?;
                let dest = parent.join(name);
                std::fs::create_dir(&dest)
                    .with_context(|| format!("cannot create {}", dest.display()))?;
                return Ok(TraceOutput {
                    dest,
                    mode: Mode::Direct { created: true },
                });
            }
            Err(e) => bail!("-o {}: {e}", dir.display()),
            Ok(m) if !m.is_dir() => bail!(
                "-o {}: is {}, not a directory; choose another -o",
                dir.display(),
                mpiscope_files::describe_type(&m.file_type())
            ),
            Ok(_) => {
                let real = std::fs::canonicalize(dir)
                    .with_context(|| format!("cannot resolve {}", dir.display()))?;
                let (trace, other) = scan(&real)?;
                if !trace.is_empty() {
                    for t in &trace {
                        let m = std::fs::symlink_metadata(t)
                            .with_context(|| format!("cannot inspect {}", t.display()))?;
                        if !m.file_type().is_file() {
                            bail!(
                                "{}: is {}, not a trace file; mpiscope never replaces one \
                                 (choose another -o)",
                                t.display(),
                                mpiscope_files::describe_type(&m.file_type())
                            );
                        }
                    }
                    if !force {
                        bail!(
                            "-o {}: holds an mpiscope trace; pass --force to replace it (its \
                             manifest.json and rank-*.mpst files are replaced once the new \
                             run has written a trace; other files are kept)",
                            dir.display()
                        );
                    }
                } else if !other.is_empty() {
                    bail!(
                        "-o {}: is not empty and holds no mpiscope trace; --force does not \
                         apply to a directory mpiscope did not write: choose another -o",
                        dir.display()
                    );
                } else {
                    return Ok(TraceOutput {
                        dest: real,
                        mode: Mode::Direct { created: false },
                    });
                }
                real
            }
        };
        let parent = dest.parent().unwrap_or(Path::new("/")).to_path_buf();
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into());
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{name}.mpiscope-"))
            .permissions(std::fs::Permissions::from_mode(0o777))
            .tempdir_in(&parent)
            .with_context(|| format!("cannot create a directory in {}", parent.display()))?;
        Ok(TraceOutput {
            dest,
            mode: Mode::Replace { staging },
        })
    }

    /// The directory the run writes into (`MPISCOPE_DIR`).
    pub fn run_dir(&self) -> &Path {
        match &self.mode {
            Mode::Direct { .. } => &self.dest,
            Mode::Replace { staging } => staging.path(),
        }
    }

    /// Whether DIR existed before this run.
    pub fn existed(&self) -> bool {
        !matches!(self.mode, Mode::Direct { created: true })
    }

    /// The directory the trace ends in.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The run's rank files and their total size.
    pub fn rank_files(&self) -> Result<(usize, u64)> {
        let (trace, _) = scan(self.run_dir())?;
        let ranks: Vec<_> = trace
            .iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| is_rank_file(&n.to_string_lossy()))
            })
            .collect();
        let bytes = ranks
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        Ok((ranks.len(), bytes))
    }

    /// Puts the new trace in DIR if the run wrote at least one rank file (then the old
    /// trace's own files go first; other files stay); otherwise leaves DIR as it was.
    /// Either way the sibling is gone afterwards. Returns whether a trace was put in place.
    pub fn finish(self) -> Result<bool> {
        let wrote = self.rank_files()?.0 > 0;
        let Mode::Replace { staging } = &self.mode else {
            if !wrote {
                // DIR held no trace before: what the run left of one (a manifest) is its own.
                let (partial, _) = scan(&self.dest)?;
                for f in partial {
                    std::fs::remove_file(&f)
                        .with_context(|| format!("cannot remove {}", f.display()))?;
                }
                if matches!(self.mode, Mode::Direct { created: true }) {
                    // Only if still empty: nothing else is ever removed.
                    let _ = std::fs::remove_dir(&self.dest);
                }
            }
            return Ok(wrote);
        };
        if !wrote {
            return Ok(false);
        }
        let (old, _) = scan(&self.dest)?;
        for f in old {
            std::fs::remove_file(&f).with_context(|| format!("cannot remove {}", f.display()))?;
        }
        let (new, stray) = scan(staging.path())?;
        for f in new.iter().chain(&stray) {
            let Some(name) = f.file_name() else { continue };
            let to = self.dest.join(name);
            if stray.contains(f) && std::fs::symlink_metadata(&to).is_ok() {
                // Something the run wrote beside its trace, under a name already taken in
                // DIR: the old file stays, the new one goes with the sibling.
                continue;
            }
            std::fs::rename(f, &to).with_context(|| {
                format!("cannot move {} into {}", f.display(), self.dest.display())
            })?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_foreign_directory_is_refused_even_with_force() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("thesis");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("chapter1.tex"), "x").unwrap();
        for force in [false, true] {
            let e = TraceOutput::prepare(&dir, force).err().unwrap().to_string();
            assert!(
                e.contains("thesis") && e.contains("--force does not apply"),
                "{e}"
            );
        }
        assert_eq!(names(d.path()), ["thesis"]);
    }

    #[test]
    fn an_earlier_trace_needs_force_and_is_replaced_only_by_a_new_one() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), "old").unwrap();
        std::fs::write(dir.join("rank-00000.mpst"), "old0").unwrap();
        std::fs::write(dir.join("rank-00001.mpst"), "old1").unwrap();
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        let e = TraceOutput::prepare(&dir, false).err().unwrap().to_string();
        assert!(e.contains("--force"), "{e}");
        // A run that writes nothing: DIR untouched, the sibling gone.
        let out = TraceOutput::prepare(&dir, true).unwrap();
        assert!(out.run_dir().starts_with(d.path()));
        assert!(!out.finish().unwrap());
        assert_eq!(names(d.path()), ["run"], "only DIR is left in its parent");
        assert_eq!(
            std::fs::read_to_string(dir.join("rank-00001.mpst")).unwrap(),
            "old1"
        );
        // A run that writes one rank: the old trace's files go, the new come, notes stay.
        let out = TraceOutput::prepare(&dir, true).unwrap();
        std::fs::write(out.run_dir().join("manifest.json"), "new").unwrap();
        std::fs::write(out.run_dir().join("rank-00000.mpst"), "new0").unwrap();
        assert!(out.finish().unwrap());
        assert_eq!(
            names(&dir),
            ["manifest.json", "notes.txt", "rank-00000.mpst"]
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
            "new"
        );
        assert_eq!(names(d.path()), ["run"]);
    }

    #[test]
    fn a_new_directory_appears_only_with_a_trace() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("new");
        let out = TraceOutput::prepare(&dir, false).unwrap();
        assert!(!out.finish().unwrap());
        assert!(names(d.path()).is_empty());
        let out = TraceOutput::prepare(&dir, false).unwrap();
        std::fs::write(out.run_dir().join("rank-00000.mpst"), "r").unwrap();
        assert!(out.finish().unwrap());
        assert_eq!(names(&dir), ["rank-00000.mpst"]);
        // The mode a directory made the ordinary way gets (not a private 0700).
        let reference = d.path().join("reference");
        std::fs::create_dir(&reference).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&dir), mode(&reference));
    }

    #[test]
    fn a_file_at_dir_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let e = TraceOutput::prepare(&f, true).err().unwrap().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }
}
