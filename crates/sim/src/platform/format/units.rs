//! Values with units, as SimGrid 3.32 writes them in platform files.
//!
//! A value is a number (C `strtod` syntax) immediately followed by a unit suffix that must
//! match exactly (case-sensitive). A value without suffix is in the default unit (SimGrid
//! warns about it, we accept it silently).
//!
//! | quantity | default | suffixes |
//! |---|---|---|
//! | bandwidth (bytes/s) | `Bps` | `Bps`, `kBps` … `YBps` (×1000ⁿ), `KiBps` … `YiBps` (×1024ⁿ), `bps`, `kbps` …, `Kibps` … (bits: ÷8) |
//! | time (s) | `s` | `w`, `d`, `h`, `m`, `s`, `ms`, `us`, `ns`, `ps` |
//! | speed (flop/s) | `f` | `f`, `kf` … `Yf` (×1000ⁿ), `flops`, `kiloflops` … `yottaflops` |
//! | size (bytes) | `B` | `B`, `kB` …, `KiB` …, `b`, `kb` …, `Kib` … |
//!
//! So `10Gbps` is 1.25e9 B/s, `1GBps` is 1e9 B/s, `1GiBps` is 1073741824 B/s, `24us` is
//! 24e-6 s, `1Gf` is 1e9 flop/s. Capitalised decimal prefixes (`KBps`) and `Gflops` are
//! errors, as in SimGrid. The multiplication is done as SimGrid does it (the number times a
//! factor obtained by repeated multiplication), so values are bit-identical to SimGrid's
//! (`10us` is `10 × 1e-6`, which is not exactly `1e-5`).

/// Decimal prefixes, abbreviated.
const DEC_SHORT: [&str; 8] = ["k", "M", "G", "T", "P", "E", "Z", "Y"];
/// Binary prefixes, abbreviated.
const BIN_SHORT: [&str; 8] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
/// Decimal prefixes, long form.
const DEC_LONG: [&str; 8] = [
    "kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta",
];

/// The factor of `suffix` for a base `unit` worth `value`, with the given prefix table and
/// multiplier; `None` if `suffix` is not `unit` with one of the prefixes.
fn prefixed(suffix: &str, unit: &str, value: f64, prefixes: &[&str; 8], mult: f64) -> Option<f64> {
    if suffix == unit {
        return Some(value);
    }
    let head = suffix.strip_suffix(unit)?;
    let mut v = value;
    for p in prefixes {
        v *= mult;
        if *p == head {
            return Some(v);
        }
    }
    None
}

/// Splits `s` into the longest prefix `strtod` would read and the rest; `None` when no
/// number starts `s`.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] as char).is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    // inf, infinity, nan (any case)
    let rest = &s[i..];
    let lower: String = rest
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            let end = i + word.len();
            let v: f64 = s[start..end].parse().ok()?;
            return Some((v, &s[end..]));
        }
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut n_digits = i - digits_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        n_digits += i - frac_start;
    }
    if n_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let text = &s[start..i];
    // Rust does not accept a leading '+' followed by '.', nor "5." in all versions; normalise.
    let v: f64 = match text.parse() {
        Ok(v) => v,
        Err(_) => {
            let mut t = text.trim_start_matches('+').to_string();
            if t.ends_with('.') {
                t.push('0');
            }
            if t.starts_with('.') || t.starts_with("-.") {
                t = t.replacen('.', "0.", 1);
            }
            t.parse().ok()?
        }
    };
    Some((v, &s[i..]))
}

/// Parses a value with a unit; `lookup` maps a suffix to its factor.
fn parse_with(
    s: &str,
    kind: &str,
    default_unit: &str,
    lookup: impl Fn(&str) -> Option<f64>,
) -> Result<f64, String> {
    let (v, rest) = split_number(s).ok_or_else(|| format!("cannot parse {kind} `{s}`"))?;
    let literal_inf = s.to_ascii_lowercase().contains("inf");
    if v.is_infinite() && !literal_inf {
        return Err(format!("{kind} `{s}` is out of range"));
    }
    let unit = if rest.is_empty() { default_unit } else { rest };
    let factor = lookup(unit).ok_or_else(|| format!("unknown unit `{unit}` in {kind} `{s}`"))?;
    let r = v * factor;
    if r.is_infinite() && !v.is_infinite() {
        return Err(format!("{kind} `{s}` is out of range"));
    }
    Ok(r)
}

/// Factor of a bandwidth suffix.
fn bandwidth_factor(u: &str) -> Option<f64> {
    prefixed(u, "Bps", 1.0, &DEC_SHORT, 1000.0)
        .or_else(|| prefixed(u, "Bps", 1.0, &BIN_SHORT, 1024.0))
        .or_else(|| prefixed(u, "bps", 0.125, &DEC_SHORT, 1000.0))
        .or_else(|| prefixed(u, "bps", 0.125, &BIN_SHORT, 1024.0))
}

/// Factor of a size suffix.
fn size_factor(u: &str) -> Option<f64> {
    prefixed(u, "B", 1.0, &DEC_SHORT, 1000.0)
        .or_else(|| prefixed(u, "B", 1.0, &BIN_SHORT, 1024.0))
        .or_else(|| prefixed(u, "b", 0.125, &DEC_SHORT, 1000.0))
        .or_else(|| prefixed(u, "b", 0.125, &BIN_SHORT, 1024.0))
}

/// Factor of a speed suffix.
fn speed_factor(u: &str) -> Option<f64> {
    prefixed(u, "f", 1.0, &DEC_SHORT, 1000.0)
        .or_else(|| prefixed(u, "flops", 1.0, &DEC_LONG, 1000.0))
}

/// Factor of a time suffix.
fn time_factor(u: &str) -> Option<f64> {
    Some(match u {
        "w" => (7 * 24 * 60 * 60) as f64,
        "d" => (24 * 60 * 60) as f64,
        "h" => (60 * 60) as f64,
        "m" => 60.0,
        "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        "ps" => 1e-12,
        _ => return None,
    })
}

/// A bandwidth in bytes per second (`"10Gbps"` → 1.25e9). When several values are
/// separated by `,` or `;` (SimGrid's Wi-Fi rates), the first is returned.
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let first = s.split([',', ';']).next().unwrap_or(s);
    parse_with(first, "bandwidth", "Bps", bandwidth_factor)
}

/// A duration in seconds (`"24us"` → 2.4e-5).
pub fn parse_time(s: &str) -> Result<f64, String> {
    parse_with(s, "time", "s", time_factor)
}

/// A computing speed in flop/s (`"1Gf"` → 1e9).
pub fn parse_speed(s: &str) -> Result<f64, String> {
    parse_with(s, "speed", "f", speed_factor)
}

/// The speeds of a host's pstates, comma-separated (`"100Mf, 50Mf"`), each trimmed.
pub fn parse_speeds(s: &str) -> Result<Vec<f64>, String> {
    s.split(',').map(|p| parse_speed(p.trim())).collect()
}

/// A size in bytes (`"1KiB"` → 1024).
pub fn parse_size(s: &str) -> Result<f64, String> {
    parse_with(s, "size", "B", size_factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_units_bandwidth() {
        assert_eq!(parse_bandwidth("10Gbps").unwrap(), 1.25e9);
        assert_eq!(parse_bandwidth("1GBps").unwrap(), 1e9);
        assert_eq!(parse_bandwidth("100MBps").unwrap(), 1e8);
        assert_eq!(parse_bandwidth("1GiBps").unwrap(), 1073741824.0);
        assert_eq!(parse_bandwidth("8Gbps").unwrap(), 1e9);
        assert_eq!(parse_bandwidth("8000Mbps").unwrap(), 1e9);
        assert_eq!(parse_bandwidth("1000000kBps").unwrap(), 1e9);
        assert_eq!(parse_bandwidth("125MBps").unwrap(), 1.25e8);
        assert_eq!(parse_bandwidth("1Kibps").unwrap(), 128.0);
        assert_eq!(parse_bandwidth("42").unwrap(), 42.0);
        assert_eq!(parse_bandwidth("2.25GBps").unwrap(), 2.25e9);
        assert_eq!(parse_bandwidth("1e3kBps").unwrap(), 1e6);
        assert!(parse_bandwidth("1KBps").is_err());
        assert!(parse_bandwidth("1 GBps").is_err());
        assert!(parse_bandwidth("GBps").is_err());
        assert!(parse_bandwidth("").is_err());
        assert!(parse_bandwidth("1e999Bps").is_err());
    }

    #[test]
    fn platform_units_time_speed_size() {
        assert_eq!(parse_time("24us").unwrap(), 24.0 * 1e-6);
        assert_eq!(parse_time("10us").unwrap(), 10.0 * 1e-6);
        assert_eq!(parse_time("1ms").unwrap(), 1e-3);
        assert_eq!(parse_time("0").unwrap(), 0.0);
        assert_eq!(parse_time("2h").unwrap(), 7200.0);
        assert_eq!(parse_time("1.5").unwrap(), 1.5);
        assert_eq!(parse_time("500ns").unwrap(), 500.0 * 1e-9);
        assert!(parse_time("1sec").is_err());
        assert_eq!(parse_speed("1Gf").unwrap(), 1e9);
        assert_eq!(parse_speed("98.095Mf").unwrap(), 98.095e6);
        assert_eq!(parse_speed("1gigaflops").unwrap(), 1e9);
        assert_eq!(parse_speed("3flops").unwrap(), 3.0);
        assert!(parse_speed("1Gflops").is_err());
        assert_eq!(
            parse_speeds("100.0Mf,50.0Mf, 20.0Mf").unwrap(),
            vec![1e8, 5e7, 2e7]
        );
        assert_eq!(parse_size("1KiB").unwrap(), 1024.0);
        assert_eq!(parse_size("8b").unwrap(), 1.0);
        assert_eq!(parse_size("1MB").unwrap(), 1e6);
    }

    #[test]
    fn platform_units_strtod_forms() {
        assert_eq!(parse_time(".5s").unwrap(), 0.5);
        assert_eq!(parse_time("5.s").unwrap(), 5.0);
        assert_eq!(parse_time("+2s").unwrap(), 2.0);
        assert_eq!(parse_time(" 3s").unwrap(), 3.0);
        assert_eq!(parse_time("1e-6").unwrap(), 1e-6);
        assert!(parse_time("1es").is_err()); // "1" then unit "es"
        assert!(parse_time("inf").unwrap().is_infinite());
    }
}
