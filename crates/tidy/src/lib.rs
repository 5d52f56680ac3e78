//! Cheap checks of the source tree that stop drift (in the role of rust-analyzer's
//! `xtask/src/tidy.rs`): each is a plain scan of the files, run as tests
//! (`crates/tidy/tests/tidy.rs`), so a change that breaks a rule of `ARCHITECTURE.md` fails CI
//! with the file and line to fix.
//!
//! The scans are textual, not a parse: [`code_lines`] and [`functions`] skip comments and
//! string literals well enough for this code base's style, which `cargo fmt` keeps regular.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Every file under `dir` whose name ends with `ext`, sorted, skipping build outputs.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    stack.push(p);
                }
            } else if name.ends_with(ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Lines of code: not blank, not only a comment.
pub fn code_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

/// A reason for an exception, written in the file as `// tidy: <what>: <why>`.
pub fn exception<'a>(text: &'a str, what: &str) -> Option<&'a str> {
    let tag = format!("// tidy: {what}:");
    text.lines()
        .find_map(|l| l.trim().strip_prefix(tag.as_str()))
        .map(str::trim)
        .filter(|r| !r.is_empty())
}

/// The source with comments and the contents of string and character literals blanked
/// (newlines kept), so that braces and words in them are not seen.
pub fn blank_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                i += 1;
            }
            out.extend_from_slice(b"  ");
            i += 2;
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // Raw string: r"...", r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.extend(std::iter::repeat_n(b' ', j - i + 1));
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    out.extend(std::iter::repeat_n(b' ', hashes + 1));
                    j += hashes + 1;
                    break;
                }
                out.push(if b[j] == b'\n' { b'\n' } else { b' ' });
                j += 1;
            }
            i = j;
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.extend(std::iter::repeat_n(b' ', e - i + 1));
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A function found in a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// Line of its `fn` (1-based).
    pub line: usize,
    /// Lines from the `fn` line to its closing brace.
    pub lines: usize,
    /// A `// tidy: long function: <why>` comment in the lines just above it.
    pub reason: Option<String>,
}

/// The functions with a body in `text`.
pub fn functions(text: &str) -> Vec<Function> {
    let clean = blank_literals(text);
    let lines: Vec<&str> = clean.lines().collect();
    let raw: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let Some(pos) = find_fn(t) else {
            continue;
        };
        let name: String = t[pos + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` at depth 0 after the signature (a `;` first means
        // no body).
        let mut depth = 0i64;
        let mut opened = None;
        let mut end = None;
        'scan: for (j, lj) in lines.iter().enumerate().skip(i) {
            let from = if j == i { pos } else { 0 };
            for ch in lj[from.min(lj.len())..].chars() {
                match ch {
                    ';' if opened.is_none() && depth == 0 => break 'scan,
                    '{' => {
                        if opened.is_none() {
                            opened = Some(j);
                        }
                        depth += 1;
                    }
                    '}' => {
                        depth -= 1;
                        if opened.is_some() && depth == 0 {
                            end = Some(j);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        if let (Some(_), Some(e)) = (opened, end) {
            let reason = raw[i.saturating_sub(4)..i]
                .iter()
                .find_map(|l| l.trim().strip_prefix("// tidy: long function:"))
                .map(|r| r.trim().to_owned());
            out.push(Function {
                name,
                line: i + 1,
                lines: e - i + 1,
                reason,
            });
        }
    }
    out
}

/// Where `fn ` starts a function definition in a trimmed line (after its qualifiers).
fn find_fn(t: &str) -> Option<usize> {
    let mut rest = t;
    let mut at = 0;
    loop {
        if rest.starts_with("fn ") {
            return Some(at);
        }
        let quals = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
            "extern \"C\" ",
            "extern ",
            "default ",
        ];
        let q = quals.iter().find(|q| rest.starts_with(**q))?;
        rest = &rest[q.len()..];
        at += q.len();
    }
}

/// The top-level modules of a crate's `src` (file or directory name), and for each the other
/// top-level modules its files refer to through `crate::`.
pub fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut top_of: BTreeMap<PathBuf, String> = BTreeMap::new();
    for f in files(src, ".rs") {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let m = first.trim_end_matches(".rs").to_owned();
        if m == "lib" || m == "main" {
            continue;
        }
        top_of.insert(f, m);
    }
    let modules: BTreeSet<String> = top_of.values().cloned().collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, m) in &top_of {
        let text = blank_literals(&std::fs::read_to_string(f).unwrap_or_default());
        let entry = graph.entry(m.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let after: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if after != *m && modules.contains(&after) {
                entry.insert(after);
            }
        }
        // `use crate::{a, b::c}` groups.
        for (i, _) in text.match_indices("crate::{") {
            let group: String = text[i + 8..].chars().take_while(|&c| c != ';').collect();
            for part in group.split([',', '{', '}']) {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name != *m && modules.contains(&name) {
                    entry.insert(name);
                }
            }
        }
    }
    graph
}

/// The cycles of a module graph: each strongly connected set of two or more modules.
pub fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let names: Vec<&String> = graph.keys().collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        names.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &names {
        if done.contains(*n) {
            continue;
        }
        let comp: Vec<String> = names
            .iter()
            .filter(|m| **m == *n || (reaches[*n].contains(**m) && reaches[**m].contains(*n)))
            .map(|m| (*m).clone())
            .collect();
        for c in &comp {
            done.insert(c.clone());
        }
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_are_found_and_measured_past_literals() {
        let src = "fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\n/// x\npub(crate) unsafe fn b(x: u8) -> u8\nwhere\n    u8: Copy,\n{\n    x\n}\nfn decl();\n";
        let f = functions(src);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].name.as_str(), f[0].line, f[0].lines), ("a", 1, 4));
        assert_eq!((f[1].name.as_str(), f[1].line, f[1].lines), ("b", 7, 6));
    }

    #[test]
    fn cycles_are_strongly_connected_sets() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let e = |g: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str| {
            g.entry(a.into()).or_default().insert(b.into());
            g.entry(b.into()).or_default();
        };
        e(&mut g, "a", "b");
        e(&mut g, "b", "c");
        e(&mut g, "c", "a");
        e(&mut g, "c", "d");
        assert_eq!(
            cycles(&g),
            vec![vec!["a".to_string(), "b".into(), "c".into()]]
        );
    }
}
