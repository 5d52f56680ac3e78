//! How deep the elements of an XML text nest, found by a scan of its tags without parsing
//! it: the XML parser and the platform reader are recursive, so a document nesting
//! thousands of elements would overflow the stack. The SimGrid reader refuses such a text
//! before it is parsed.
//!
//! The scan skips comments, CDATA sections and processing instructions, and honours quotes
//! inside tags. Markup inside the document type's internal subset (entities that expand to
//! elements) counts as if every entity were expanded where it is deepest, up to the
//! parser's ten levels of entity references: a safe over-estimate.

/// Entity references expand at most this many levels deep (the parser's limit).
const ENTITY_LEVELS: usize = 10;

/// Where a text nests too deep: the 1-based line of the first element past the limit and
/// the depth found there.
#[derive(Debug, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line.
    pub line: usize,
    /// Nesting depth (the root element is at depth 1).
    pub depth: usize,
}

/// Checks that the elements of `text` nest at most `max` deep.
pub fn check(text: &str, max: usize) -> Result<(), TooDeep> {
    let b = text.as_bytes();
    let line_at = |pos: usize| {
        b[..pos.min(b.len())]
            .iter()
            .filter(|&&c| c == b'\n')
            .count()
            + 1
    };
    // The deepest markup an entity of the internal subset may hold.
    let mut entity_depth = 0usize;
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        let start = i + off;
        let rest = &b[start..];
        if rest.starts_with(b"<!--") {
            i = skip_past(b, start + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            i = skip_past(b, start + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            i = skip_past(b, start + 2, b"?>");
        } else if rest.starts_with(b"<!") {
            // A declaration: the document type, with an internal subset in brackets whose
            // quoted entity values may hold markup.
            let (end, deepest) = declaration(b, start + 2);
            entity_depth = entity_depth.max(deepest);
            i = end;
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = tag_end(b, start + 2).0;
        } else {
            let (end, empty) = tag_end(b, start + 1);
            if !empty {
                depth += 1;
                let reach = depth.saturating_add(entity_depth.saturating_mul(ENTITY_LEVELS));
                if reach > max {
                    return Err(TooDeep {
                        line: line_at(start),
                        depth: reach,
                    });
                }
            }
            i = end;
        }
        if i >= b.len() {
            break;
        }
    }
    Ok(())
}

/// The index just past the first `pat` at or after `from` (the end of the text if none).
fn skip_past(b: &[u8], from: usize, pat: &[u8]) -> usize {
    let from = from.min(b.len());
    b[from..]
        .windows(pat.len())
        .position(|w| w == pat)
        .map_or(b.len(), |p| from + p + pat.len())
}

/// The index just past the `>` ending a tag whose name starts at `from` (quotes honoured),
/// and whether the tag is empty (`/>`).
fn tag_end(b: &[u8], from: usize) -> (usize, bool) {
    let mut quote = None;
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'>' => return (i + 1, i > from && b[i - 1] == b'/'),
            None => {}
        }
        i += 1;
    }
    (b.len(), false)
}

/// The index just past a declaration starting after `<!` at `from`, and the deepest
/// element nesting inside its quoted values (entity replacement texts).
fn declaration(b: &[u8], from: usize) -> (usize, usize) {
    let mut brackets = 0usize;
    let mut deepest = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                let end = b[i + 1..]
                    .iter()
                    .position(|&c| c == q)
                    .map_or(b.len(), |p| i + 1 + p);
                deepest = deepest.max(markup_depth(&b[i + 1..end]));
                i = end;
            }
            b'[' => brackets += 1,
            b']' => brackets = brackets.saturating_sub(1),
            b'<' if brackets > 0 && b[i..].starts_with(b"<!--") => {
                i = skip_past(b, i + 4, b"-->");
                continue;
            }
            b'>' if brackets == 0 => return (i + 1, deepest),
            _ => {}
        }
        i += 1;
    }
    (b.len(), deepest)
}

/// The deepest element nesting in a fragment (an entity's replacement text).
fn markup_depth(b: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        let start = i + off;
        if b[start..].starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = tag_end(b, start + 2).0;
        } else if b[start..].starts_with(b"<!") || b[start..].starts_with(b"<?") {
            i = tag_end(b, start + 2).0;
        } else {
            let (end, empty) = tag_end(b, start + 1);
            if !empty {
                depth += 1;
                deepest = deepest.max(depth);
            }
            i = end;
        }
        if i >= b.len() {
            break;
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_open_elements_only() {
        let t = "<?xml version='1.0'?>\n<!-- <a><b> -->\n<a x=\"<b>\" y='>'>\n<b/><c><![CDATA[<d><e>]]></c>\n</a>";
        assert_eq!(check(t, 2), Ok(()));
        assert_eq!(check(t, 1), Err(TooDeep { line: 4, depth: 2 }));
        let deep = format!("{}{}", "<z>\n".repeat(300), "</z>".repeat(300));
        assert_eq!(
            check(&deep, 256),
            Err(TooDeep {
                line: 257,
                depth: 257
            })
        );
        assert_eq!(check(&deep, 300), Ok(()));
    }

    #[test]
    fn entities_with_markup_count_at_their_deepest() {
        let t = "<!DOCTYPE p [ <!ENTITY e \"<a><b>x</b></a>\"> <!-- ] > --> ]>\n<p><q>&e;</q></p>";
        // Two levels in the document, and the entity's two levels ten times over.
        assert_eq!(check(t, 22), Ok(()));
        assert_eq!(check(t, 21), Err(TooDeep { line: 2, depth: 22 }));
        let plain = "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<p/>";
        assert_eq!(check(plain, 1), Ok(()));
    }

    #[test]
    fn garbage_never_panics() {
        for t in [
            "<",
            "<!",
            "<!--",
            "<![CDATA[",
            "<a '",
            "<!DOCTYPE [\"",
            "</",
            "<a/",
            "<<>>",
        ] {
            let _ = check(t, 1);
        }
    }
}
