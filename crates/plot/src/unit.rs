//! Units: how a value is written on a tick, in a tooltip or in a table cell.

/// The quantity a number measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds, written in the nearest of s, ms, us, ns.
    Seconds,
    /// Bytes, written in B, KiB, MiB, GiB, TiB.
    Bytes,
    /// A count, written with k, M, G above ten thousand.
    Count,
    /// A percentage (the value is already in percent).
    Percent,
    /// A plain number without unit (speedup, ratio).
    Plain,
}

impl Unit {
    /// `v` in this unit, short.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Seconds => seconds(v),
            Unit::Bytes => bytes(v),
            Unit::Count => count(v),
            Unit::Percent => format!("{}%", plain(v)),
            Unit::Plain => plain(v),
        }
    }

    /// The unit's name in an axis title: `s`, `bytes`, ... (empty for plain numbers).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Percent => "%",
            Unit::Plain => "",
        }
    }
}

/// Seconds in a short human unit: `2.500 s`, `2.500 ms`, `2.500 us`, `2 ns`.
pub fn seconds(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 {
        format!("{v:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", v * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} us", v * 1e6)
    } else {
        format!("{:.0} ns", v * 1e9)
    }
}

/// Bytes in binary units: `512 B`, `1.5 KiB`.
pub fn bytes(v: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{} B", plain(x))
    } else {
        format!("{} {}", plain(x), U[i])
    }
}

/// A count: exact below ten thousand, else with k, M or G.
pub fn count(v: f64) -> String {
    let a = v.abs();
    if a < 1e4 {
        plain(v)
    } else if a < 1e6 {
        format!("{} k", plain(v / 1e3))
    } else if a < 1e9 {
        format!("{} M", plain(v / 1e6))
    } else {
        format!("{} G", plain(v / 1e9))
    }
}

/// A number with at most three decimals, trailing zeros dropped.
pub fn plain(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == v.round() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let digits = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(
            (
                seconds(2.5),
                seconds(0.0025),
                seconds(2.5e-6),
                seconds(2e-9)
            ),
            (
                "2.500 s".into(),
                "2.500 ms".into(),
                "2.500 us".into(),
                "2 ns".into()
            )
        );
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(count(12_000.0), "12 k");
        assert_eq!(count(42.0), "42");
        assert_eq!(Unit::Percent.format(12.345), "12.35%");
        assert_eq!(plain(0.125), "0.125");
        assert_eq!(plain(f64::NAN), "-");
    }
}
