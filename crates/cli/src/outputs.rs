//! The kinds of file the commands write (how an earlier one that mpiscope wrote is
//! recognised, so that it may be replaced without `--force`), and the one way they write
//! them: [`write`], atomic and never over what mpiscope did not write
//! (`mpiscope_files`); [`write_stdout`], for what they print; and [`json`], the one shape of
//! every JSON document they print (its version under the first key, `schema`).

use std::path::Path;

use anyhow::Result;
use mpiscope_files::{has_marker, Kind};

/// `report --html`, `compare --html`: the page's generator meta tag.
pub const HTML_REPORT: Kind = Kind::new("an HTML report", |h| {
    has_marker(h, b"<meta name=\"generator\" content=\"mpiscope\">")
});

/// `calibrate -o`: its first line.
pub const CALIBRATED_PLATFORM: Kind = Kind::new("a calibrated platform", |h| {
    h.starts_with(b"# Calibrated by `mpiscope calibrate`")
});

/// `replay --timeline`, `hpl --timeline`: Chrome traces with mpiscope's generator key.
pub const TIMELINE: Kind = mpiscope_export::outputs::CHROME_TRACE;

/// `structure --save`: JSON naming its format, or that JSON gzip-compressed.
pub const STRUCTURAL_FORM: Kind = Kind::new("a structural form", |h| {
    let marker = format!(
        "\"format\":\"{}",
        mpiscope_sim::workload::structural::FORMAT_FAMILY
    );
    if h.starts_with(&[0x1f, 0x8b]) {
        // The head of the compressed stream is enough for the format, the first key.
        use std::io::Read;
        let mut text = Vec::new();
        let _ = flate2::read::GzDecoder::new(h)
            .take(4096)
            .read_to_end(&mut text);
        has_marker(&text, marker.as_bytes())
    } else {
        has_marker(h, marker.as_bytes())
    }
});

/// `overlap --trace-access`'s `order.json`.
pub const ACCESS_ORDERS: Kind = Kind::new("an access order file", |h| {
    let t = h.trim_ascii_start();
    t == b"{}" || (has_marker(h, b"\"agreement\"") && has_marker(h, b"\"mean_first_touch_ns\""))
});

/// `overlap --trace-access`'s per-rank `access-N.jsonl` records.
pub const ACCESS_RECORDS: Kind = Kind::new("an access trace", |h| {
    has_marker(h, b"\"touches\"") && has_marker(h, b"\"callsite\"")
});

/// Writes the output `path` of `kind` atomically; an existing file of another kind is
/// replaced only with `force`, a directory, link or special file never.
pub fn write(path: &Path, kind: &Kind, force: bool, bytes: &[u8]) -> Result<()> {
    Ok(mpiscope_files::write_output(path, kind, force, bytes)?)
}

/// The version of the JSON documents the commands print, their first key `schema`: it
/// changes when a key changes meaning or goes (new keys do not change it).
pub const SCHEMA: u32 = 1;

/// A JSON object printed by a command: `schema` first, then the object's own keys.
#[derive(serde::Serialize)]
struct Document<'a, T: serde::Serialize> {
    schema: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// `value` (which serializes as an object) as the pretty JSON document a command prints,
/// with `schema` and a final newline.
pub fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    let doc = Document {
        schema: SCHEMA,
        body: value,
    };
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_forms_are_recognised_plain_and_compressed() {
        let json = format!(
            "{{\"format\":\"{}\",\"ranks\":[]}}",
            mpiscope_sim::workload::structural::FORMAT
        );
        assert!((STRUCTURAL_FORM.ours)(json.as_bytes()));
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(json.as_bytes()).unwrap();
        let gz = z.finish().unwrap();
        assert!((STRUCTURAL_FORM.ours)(&gz));
        assert!(!(STRUCTURAL_FORM.ours)(b"{\"format\":\"other\"}"));
        assert!(!(STRUCTURAL_FORM.ours)(&gz[..4]));
    }

    #[test]
    fn documents_start_with_their_schema_and_keep_their_keys() {
        #[derive(serde::Serialize)]
        struct R {
            zeta: u32,
            alpha: &'static str,
        }
        let text = json(&R {
            zeta: 3,
            alpha: "a",
        })
        .unwrap();
        assert!(
            text.starts_with("{\n  \"schema\": 1,\n  \"zeta\": 3,\n  \"alpha\""),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["alpha"], "a");
    }

    #[test]
    fn reports_and_platforms_are_recognised() {
        let page = mpiscope_analyze::html::scaling("t", &mpiscope_analyze::compare::compare(&[]));
        assert!((HTML_REPORT.ours)(page.as_bytes()));
        assert!(!(HTML_REPORT.ours)(b"<html><head></head></html>"));
        assert!((CALIBRATED_PLATFORM.ours)(
            b"# Calibrated by `mpiscope calibrate` from r.json.\n"
        ));
        assert!(!(CALIBRATED_PLATFORM.ours)(b"[platform]\n"));
    }
}
