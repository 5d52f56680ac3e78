//! What each export writes, how an earlier output of the same kind is recognised (so it
//! may be replaced without `--force`), and how an OTF2 archive, several files and a
//! directory, is put in place without removing what mpiscope did not write.

use std::path::{Path, PathBuf};

use mpiscope_files::{has_marker, FileError, Kind, TempDir};

use crate::ExportError;

/// A TI rank file: its first line is `<rank> <action>`, as every line of one is.
pub const TI_RANK: Kind = Kind::new("a SimGrid time-independent trace", |head| {
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut words = first.split(|&b| b == b' ');
    let rank = words.next().unwrap_or_default();
    let action = words.next().unwrap_or_default();
    !rank.is_empty()
        && rank.iter().all(u8::is_ascii_digit)
        && !action.is_empty()
        && action.iter().all(|b| b.is_ascii_lowercase() || *b == b'_')
});

/// A TI index: one `.txt` path per line.
pub const TI_INDEX: Kind = Kind::new("a SimGrid time-independent trace index", |head| {
    let mut lines = head.split(|&b| b == b'\n').peekable();
    let mut any = false;
    while let Some(l) = lines.next() {
        // The last piece may be cut by the end of the head.
        if lines.peek().is_none() {
            break;
        }
        if !l.ends_with(b".txt") {
            return false;
        }
        any = true;
    }
    any
});

/// A Chrome trace mpiscope wrote: its `otherData` names the generator (the key every
/// Chrome trace of mpiscope's starts with, `mpiscope replay --timeline`'s too).
pub const CHROME_TRACE: Kind = Kind::new("a Chrome trace", |head| {
    has_marker(head, b"\"generator\":\"mpiscope\"")
});

/// A Paraver trace (`.prv`): its header line.
pub const PRV: Kind = Kind::new("a Paraver trace", |h| h.starts_with(b"#Paraver ("));
/// A Paraver configuration (`.pcf`) as mpiscope writes it.
pub const PCF: Kind = Kind::new("a Paraver configuration", |h| {
    h.starts_with(b"DEFAULT_OPTIONS\n")
});
/// A Paraver resource file (`.row`) as mpiscope writes it.
pub const ROW: Kind = Kind::new("a Paraver resource file", |h| {
    h.starts_with(b"LEVEL CPU SIZE ")
});

/// The creator recorded in the anchor file of every OTF2 archive mpiscope writes.
pub const CREATOR: &str = "mpiscope";

/// An OTF2 anchor file (`traces.otf2`) that mpiscope wrote: it holds the creator.
pub const OTF2_ANCHOR: Kind = Kind::new("an OTF2 archive", |h| has_marker(h, CREATOR.as_bytes()));

/// The parts of the archive `traces` in a directory: anchor, global definitions, and the
/// directory of per-location files.
fn parts(dir: &Path) -> [PathBuf; 3] {
    [
        dir.join("traces.otf2"),
        dir.join("traces.def"),
        dir.join("traces"),
    ]
}

fn is_present(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Checks that the archive in `out` may be replaced: none there, or one whose anchor
/// mpiscope wrote (any with `force`), whose `traces/` is a real directory holding only
/// OTF2's per-location files (`*.evt`, `*.def`). A directory of anything else is never
/// removed, even with `force`.
pub(crate) fn check(out: &Path, force: bool) -> Result<(), ExportError> {
    let [anchor, defs, locations] = parts(out);
    if !(is_present(&anchor) || is_present(&defs) || is_present(&locations)) {
        return Ok(());
    }
    if !is_present(&anchor) && !force {
        // Parts without an anchor: not an archive mpiscope left.
        let what = if is_present(&defs) { &defs } else { &locations };
        return Err(FileError::NotOurs {
            path: what.clone(),
            what: "part of an OTF2 archive",
        }
        .into());
    }
    mpiscope_files::check_output(&anchor, &OTF2_ANCHOR, force)?;
    // The definitions file goes with its anchor: only its type is checked.
    mpiscope_files::check_output(&defs, &Kind::new("", |_| true), true)?;
    match std::fs::symlink_metadata(&locations) {
        Err(_) => Ok(()),
        Ok(m) if !m.file_type().is_dir() => Err(FileError::Protected {
            path: locations,
            found: mpiscope_files::describe_type(&m.file_type()),
        }
        .into()),
        Ok(_) => {
            let entries = std::fs::read_dir(&locations)
                .map_err(|e| FileError::io(&locations, "cannot list", e))?;
            for e in entries {
                let e = e.map_err(|e| FileError::io(&locations, "cannot list", e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let file = e.file_type().is_ok_and(|t| t.is_file());
                if !(file && (name.ends_with(".evt") || name.ends_with(".def"))) {
                    return Err(FileError::NotOurs {
                        path: e.path(),
                        what: "an OTF2 location file (*.evt, *.def)",
                    }
                    .into());
                }
            }
            Ok(())
        }
    }
}

/// A private directory inside `out` (created if needed) to write the new archive in.
pub(crate) fn staging(out: &Path) -> Result<TempDir, ExportError> {
    std::fs::create_dir_all(out).map_err(|source| ExportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    tempfile::Builder::new()
        .prefix(".mpiscope-otf2-")
        .tempdir_in(out)
        .map_err(|source| ExportError::Write {
            path: out.to_path_buf(),
            source,
        })
}

/// Moves the complete archive from `staging` into `out`: the old parts are first moved
/// into `staging` (renames in one directory), the new ones take their places (the anchor
/// last), and the old ones go with `staging`.
pub(crate) fn put_in_place(staging: TempDir, out: &Path) -> Result<(), ExportError> {
    let old = staging.path().join("old");
    std::fs::create_dir(&old).map_err(|source| ExportError::Write {
        path: old.clone(),
        source,
    })?;
    let rename = |from: &Path, to: &Path| {
        std::fs::rename(from, to).map_err(|source| ExportError::Write {
            path: to.to_path_buf(),
            source,
        })
    };
    let new = parts(staging.path());
    let current = parts(out);
    let aside = parts(&old);
    for (c, a) in current.iter().zip(&aside) {
        if is_present(c) {
            rename(c, a)?;
        }
    }
    for (n, c) in new.iter().zip(&current).rev() {
        if is_present(n) {
            rename(n, c)?;
        }
    }
    staging.close().map_err(|source| ExportError::Write {
        path: out.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_recognise_what_the_exports_write() {
        assert!((TI_RANK.ours)(b"0 init\n0 send 1 8 0\n"));
        assert!(!(TI_RANK.ours)(b"my notes\n"));
        assert!((TI_INDEX.ours)(b"/x/rank-0.txt\n/x/rank-1.txt\n"));
        assert!(!(TI_INDEX.ours)(b"/x/rank-0.txt\nnotes\n"));
        assert!((CHROME_TRACE.ours)(
            b"{\"otherData\":{\"generator\":\"mpiscope\"},"
        ));
        assert!(!(CHROME_TRACE.ours)(b"{\"traceEvents\":[]}"));
        assert!((PRV.ours)(
            b"#Paraver (01/01/26 at 10:00):5_ns:1(1):1:1(1:1)\n"
        ));
        assert!(!(PCF.ours)(b"notes"));
    }

    #[test]
    fn a_directory_of_other_files_is_never_taken_for_an_archive() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("traces")).unwrap();
        std::fs::write(d.path().join("traces/thesis.tex"), "x").unwrap();
        // No anchor: refused without force.
        let e = check(d.path(), false).unwrap_err();
        assert!(e.to_string().contains("--force"), "{e}");
        // With force, still refused: the directory holds something OTF2 does not write.
        let e = check(d.path(), true).unwrap_err();
        assert!(e.to_string().contains("thesis.tex"), "{e}");
    }

    #[test]
    fn putting_in_place_replaces_only_the_archive() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        std::fs::write(out.join("keep.txt"), "mine").unwrap();
        std::fs::write(out.join("traces.otf2"), "old anchor mpiscope").unwrap();
        std::fs::create_dir(out.join("traces")).unwrap();
        std::fs::write(out.join("traces/0.evt"), "old").unwrap();
        check(out, false).unwrap();
        let s = staging(out).unwrap();
        std::fs::write(s.path().join("traces.otf2"), "new anchor").unwrap();
        std::fs::write(s.path().join("traces.def"), "new defs").unwrap();
        std::fs::create_dir(s.path().join("traces")).unwrap();
        std::fs::write(s.path().join("traces/1.evt"), "new").unwrap();
        put_in_place(s, out).unwrap();
        let read = |p: &str| std::fs::read_to_string(out.join(p)).unwrap();
        assert_eq!(read("traces.otf2"), "new anchor");
        assert_eq!(read("traces/1.evt"), "new");
        assert!(!out.join("traces/0.evt").exists());
        assert_eq!(read("keep.txt"), "mine");
        let names: Vec<_> = std::fs::read_dir(out).unwrap().collect();
        assert_eq!(names.len(), 4, "{names:?}");
    }
}
