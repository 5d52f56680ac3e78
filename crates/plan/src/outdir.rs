//! The output directory of a study: which study it belongs to, what may be written there.
//!
//! A study's results share one directory (`--out`) across runs and processes, so the
//! directory records its study in `study.json` (the study's name and file, and the figures
//! it wrote). Running a study over a directory that holds another study's results is
//! refused unless `--force`, which first removes that study's point files, results and
//! figures (files mpiscope wrote, each recognised as such): the two are never mixed.
//! Paths read from the study (figure files) must stay inside the directory.

use std::path::{Path, PathBuf};

use mpiscope_files::{has_marker, FileError, Kind};
use serde::{Deserialize, Serialize};

use crate::run::PointRecord;
use crate::{PlanError, Study};

/// The record of the study an output directory belongs to.
pub const RECORD_FILE: &str = "study.json";
/// What `study.json`'s `generator` says.
const GENERATOR: &str = "mpiscope plan";

/// `study.json`.
pub const RECORD: Kind = Kind::new("a study record", |h| {
    has_marker(h, b"\"generator\": \"mpiscope plan\"")
});
/// `results.json`.
pub const RESULTS_JSON: Kind = Kind::new("a study's results (JSON)", |h| {
    has_marker(h, b"\"study\":") && has_marker(h, b"\"points\":")
});
/// `results.csv`: its header starts with the point column.
pub const RESULTS_CSV: Kind = Kind::new("a study's results (CSV)", |h| {
    let header = h.split(|&b| b == b'\n').next().unwrap_or_default();
    header.starts_with(b"point,") && has_marker(header, b"time_s")
});
/// A figure: every SVG `mpiscope plan` draws carries this comment.
pub const FIGURE: Kind = Kind::new("a study figure", |h| {
    has_marker(h, FIGURE_MARKER.as_bytes())
});
/// The comment that marks a figure.
pub const FIGURE_MARKER: &str = "<!-- generator: mpiscope plan -->";
/// A point file.
pub const POINT: Kind = Kind::new("a study point", |h| {
    has_marker(h, b"\"study\":") && has_marker(h, b"\"key\":")
});

/// What `study.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    generator: String,
    /// The study's name.
    study: String,
    /// The study file.
    file: String,
    /// Figure files written, relative to the directory.
    #[serde(default)]
    figures: Vec<String>,
}

fn io(path: &Path, e: impl std::fmt::Display) -> PlanError {
    PlanError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// The paths of `study`'s figures in `out`, each checked to stay inside it; errors name
/// the study file and the key (`[[figure]] file = "../x.svg": must stay inside --out`).
pub fn figure_paths(study: &Study, out: &Path) -> Result<Vec<PathBuf>, PlanError> {
    study
        .figures
        .iter()
        .map(|f| {
            mpiscope_files::contained(out, &f.file, "[[figure]] file").map_err(|e| match e {
                FileError::Escapes {
                    key,
                    value,
                    base,
                    why,
                } => PlanError::Study {
                    path: study.path.display().to_string(),
                    message: format!(
                        "{key} = \"{value}\": must stay inside --out {} ({why})",
                        base.display()
                    ),
                },
                other => other.into(),
            })
        })
        .collect()
}

fn read_record(out: &Path) -> Option<Record> {
    let path = out.join(RECORD_FILE);
    let mut f = mpiscope_files::open_regular(&path).ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut f, &mut text).ok()?;
    serde_json::from_str::<Record>(&text)
        .ok()
        .filter(|r| r.generator == GENERATOR)
}

/// The point files in `out/points` and the study each belongs to.
fn point_files(out: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(out.join("points")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("point-") && name.ends_with(".json")) {
            continue;
        }
        let Ok(mut f) = mpiscope_files::open_regular(&e.path()) else {
            continue;
        };
        let mut text = String::new();
        if std::io::Read::read_to_string(&mut f, &mut text).is_err() {
            continue;
        }
        if let Ok(r) = serde_json::from_str::<PointRecord>(&text) {
            found.push((e.path(), r.study));
        }
    }
    found.sort();
    found
}

/// Which other study's results `out` holds, if any: the one its record names, or, in a
/// directory without a record, the one its point files name.
fn other_study(study: &Study, out: &Path) -> Option<String> {
    if let Some(r) = read_record(out) {
        return (r.study != study.name).then_some(r.study);
    }
    point_files(out)
        .into_iter()
        .map(|(_, s)| s)
        .find(|s| *s != study.name)
}

/// Makes `out` the output directory of `study`: refuses one that holds another study's
/// results unless `force`, which removes those first (their point files, results and the
/// figures their record lists, each only if mpiscope wrote it); then records `study`.
pub fn claim(study: &Study, out: &Path, force: bool) -> Result<(), PlanError> {
    if let Some(other) = other_study(study, out) {
        if !force {
            return Err(PlanError::Io {
                path: out.display().to_string(),
                message: format!(
                    "holds the results of another study, \"{other}\" (not \"{}\"); pass \
                     --force to replace them, or choose another --out",
                    study.name
                ),
            });
        }
        remove_other(out, &other)?;
    }
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let figures = match read_record(out) {
        Some(r) if r.study == study.name => r.figures,
        _ => Vec::new(),
    };
    write_record(study, out, figures, force)
}

fn write_record(
    study: &Study,
    out: &Path,
    figures: Vec<String>,
    force: bool,
) -> Result<(), PlanError> {
    let record = Record {
        generator: GENERATOR.into(),
        study: study.name.clone(),
        file: study.path.display().to_string(),
        figures,
    };
    let text = serde_json::to_string_pretty(&record).map_err(|e| io(out, e))? + "\n";
    mpiscope_files::write_output(&out.join(RECORD_FILE), &RECORD, force, text.as_bytes())?;
    Ok(())
}

/// Adds `written` (figure paths in `out`) to the record of `study`.
pub(crate) fn record_figures(
    study: &Study,
    out: &Path,
    written: &[PathBuf],
    force: bool,
) -> Result<(), PlanError> {
    let mut figures = match read_record(out) {
        Some(r) if r.study == study.name => r.figures,
        _ => Vec::new(),
    };
    for p in written {
        if let Ok(rel) = p.strip_prefix(out) {
            let rel = rel.display().to_string();
            if !figures.contains(&rel) {
                figures.push(rel);
            }
        }
    }
    write_record(study, out, figures, force)
}

/// Removes a file if mpiscope wrote it as `kind`; a missing file is fine (another process
/// of the same run may have removed it).
fn remove_ours(path: &Path, kind: &Kind) -> Result<(), PlanError> {
    match std::fs::symlink_metadata(path) {
        Err(_) => return Ok(()),
        Ok(m) if !m.file_type().is_file() => return Ok(()),
        Ok(_) => {}
    }
    // Only a file of this kind: `check_output` without force says exactly that.
    if mpiscope_files::check_output(path, kind, false).is_err() {
        return Ok(());
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path, e)),
        _ => Ok(()),
    }
}

/// Removes the files of study `other` from `out`.
fn remove_other(out: &Path, other: &str) -> Result<(), PlanError> {
    for (p, s) in point_files(out) {
        if s == other {
            remove_ours(&p, &POINT)?;
        }
    }
    remove_ours(&out.join("results.csv"), &RESULTS_CSV)?;
    remove_ours(&out.join("results.json"), &RESULTS_JSON)?;
    if let Some(r) = read_record(out) {
        for f in &r.figures {
            if let Ok(p) = mpiscope_files::contained(out, f, "figures") {
                remove_ours(&p, &FIGURE)?;
            }
        }
    }
    Ok(())
}
