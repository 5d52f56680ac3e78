//! Paths read from input files stay inside the directory they are meant for.
//!
//! A study's `[[figure]] file = "../../x.svg"` or `"/etc/x"` would write outside the
//! output directory; a relative path that goes through an existing symbolic link could as
//! well. [`contained`] accepts a path only when it is relative, has no `..` component, and
//! every existing part of it under the base resolves inside the base.

use std::path::{Component, Path, PathBuf};

use crate::FileError;

/// `base` joined with `relative` (a path read from an input file under `key`, e.g.
/// `[[figure]] file`), if it stays inside `base`: `relative` must be a non-empty relative
/// path without `..` components, and no existing part of it may be a symbolic link that
/// leads outside `base`.
pub fn contained(base: &Path, relative: &str, key: &str) -> Result<PathBuf, FileError> {
    let refuse = |why: String| FileError::Escapes {
        key: key.to_owned(),
        value: relative.to_owned(),
        base: base.to_path_buf(),
        why,
    };
    if relative.is_empty() {
        return Err(refuse("an empty path".into()));
    }
    let rel = Path::new(relative);
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse("a path with `..`".into())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("an absolute path".into()))
            }
        }
    }
    if parts.is_empty() {
        return Err(refuse(
            "names the directory itself, not a file in it".into(),
        ));
    }
    let mut path = base.to_path_buf();
    let mut real_base: Option<PathBuf> = None;
    for p in parts {
        path.push(p);
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            // Nothing exists from here on: no link to follow.
            break;
        };
        if m.file_type().is_symlink() {
            if real_base.is_none() {
                real_base = Some(
                    std::fs::canonicalize(base)
                        .map_err(|e| FileError::io(base, "cannot resolve", e))?,
                );
            }
            let inside = std::fs::canonicalize(&path)
                .ok()
                .zip(real_base.as_ref())
                .is_some_and(|(real, b)| real.starts_with(b));
            if !inside {
                return Err(refuse(format!(
                    "{} is a symbolic link that leads outside",
                    path.display()
                )));
            }
        }
    }
    Ok(base.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_inside_are_accepted() {
        let d = tempfile::tempdir().unwrap();
        let p = contained(d.path(), "figs/a.svg", "[[figure]] file").unwrap();
        assert_eq!(p, d.path().join("figs/a.svg"));
        assert!(contained(d.path(), "./a.svg", "k").is_ok());
        // A link that stays inside is fine.
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::os::unix::fs::symlink(d.path().join("real"), d.path().join("alias")).unwrap();
        assert!(contained(d.path(), "alias/a.svg", "k").is_ok());
    }

    #[test]
    fn escapes_are_refused_naming_the_key() {
        let d = tempfile::tempdir().unwrap();
        for (value, why) in [
            ("../../x.svg", "`..`"),
            ("a/../b.svg", "`..`"),
            ("/etc/x.svg", "absolute"),
            ("", "empty"),
            (".", "directory itself"),
        ] {
            let e = contained(d.path(), value, "[[figure]] file").unwrap_err();
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("[[figure]] file = \"{value}\"")),
                "{text}"
            );
            assert!(
                text.contains(why) && text.contains("must stay inside"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_symbolic_link_leading_outside_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let e = contained(d.path(), "out/x.svg", "[[figure]] file").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // A dangling link is refused as well: writing through it would create its target.
        std::os::unix::fs::symlink("/nonexistent/dir", d.path().join("dangling")).unwrap();
        assert!(contained(d.path(), "dangling/x.svg", "k").is_err());
        // A base that does not exist yet has no links below it.
        assert!(contained(&d.path().join("new"), "x.svg", "k").is_ok());
    }
}
