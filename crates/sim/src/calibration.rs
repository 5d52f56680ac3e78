//! The measured parameters a platform carries under `mpiscope/*` keys of its `[config]`:
//! what `mpiscope calibrate` writes and what the simulator and the HPL skeleton read back.
//!
//! [`Calibration`] is the typed view of those keys and the one place that knows their
//! names ([`Key`]) and their syntax, both ways: [`Calibration::read`] parses the keys a
//! reader asks for (the network model reads `mpiscope/loggp`, the CPU model the core
//! efficiency and the wake-up delay, the HPL skeleton the kernel models), and
//! [`Calibration::line`] writes a key's `[config]` line. A value written and read back is
//! the same number (floats are written in Rust's shortest round-trip form), except the
//! core efficiencies, which are written with four decimals.
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `mpiscope/loggp` | `"L,o,g,G"` | LogGP's parameters, seconds (G: seconds per byte) |
//! | `mpiscope/core-efficiency` | `"1 0.8 ..."` | per-core speed factor with 1, 2, ... cores busy |
//! | `mpiscope/oversubscribed-wake-up` | seconds | how late a waiting rank gets its oversubscribed core back |
//! | `mpiscope/dgemm` | `"a c [d [e]]"` | dgemm time `a m n k + c m n + d m k + e n k` (`d`, `e`: 0 when absent) |
//! | `mpiscope/dtrsm` | `"b c"` | dtrsm time `b m^2 n + c m n` (`m` the triangle's order) |
//! | `mpiscope/panel` | `"p c"` | LU panel factorization time `p n^2 (m - n/3) + c m n` |
//! | `mpiscope/pack` | seconds per byte | a strided message's extra cost over a contiguous one |
//! | `mpiscope/laswp` | `"g c"` | HPL's row gather, `(g + c)` seconds per element moved |
//! | `mpiscope/reduction` | seconds per byte | a reduction operator combining a received buffer into the partial result |
//!
//! The dgemm model's `d m k` and `e n k` terms are the per-call packing of its operands
//! `A` (m x k) and `B` (k x n), which an HPL update of NB-wide chunks pays once per chunk;
//! a value of two numbers (what calibrations before these terms wrote) reads as `d = e =
//! 0`, and a model without them is written with two numbers, so old platforms read and
//! simulate as before.
//!
//! Errors name the key and its value, as the readers print them after the platform file.

use std::collections::BTreeMap;

/// A `mpiscope/*` key of a platform's `[config]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// `mpiscope/loggp`: [`LogGpValues`].
    LogGp,
    /// `mpiscope/core-efficiency`: per-core speed factors with 1, 2, ... busy cores.
    CoreEfficiency,
    /// `mpiscope/oversubscribed-wake-up`: seconds.
    OversubscribedWakeUp,
    /// `mpiscope/dgemm`: a [`KernelCost`] per `m n k`.
    Dgemm,
    /// `mpiscope/dtrsm`: a [`KernelCost`] per `m^2 n`.
    Dtrsm,
    /// `mpiscope/panel`: a [`KernelCost`] per `n^2 (m - n/3)`.
    Panel,
    /// `mpiscope/pack`: seconds per byte.
    Pack,
    /// `mpiscope/laswp`: a [`KernelCost`] per element moved.
    Laswp,
    /// `mpiscope/reduction`: seconds per byte a reduction operator combines.
    Reduction,
}

impl Key {
    /// Every key, in the order readers check them and warnings suggest them.
    pub const ALL: [Key; 9] = [
        Key::LogGp,
        Key::CoreEfficiency,
        Key::OversubscribedWakeUp,
        Key::Dgemm,
        Key::Dtrsm,
        Key::Panel,
        Key::Pack,
        Key::Laswp,
        Key::Reduction,
    ];

    /// The kernel models, the HPL skeleton's keys, in the order it checks them.
    pub const KERNELS: [Key; 5] = [Key::Dgemm, Key::Dtrsm, Key::Panel, Key::Laswp, Key::Pack];

    /// The option's name (`mpiscope/dgemm`).
    pub fn name(self) -> &'static str {
        match self {
            Key::LogGp => "mpiscope/loggp",
            Key::CoreEfficiency => "mpiscope/core-efficiency",
            Key::OversubscribedWakeUp => "mpiscope/oversubscribed-wake-up",
            Key::Dgemm => "mpiscope/dgemm",
            Key::Dtrsm => "mpiscope/dtrsm",
            Key::Panel => "mpiscope/panel",
            Key::Pack => "mpiscope/pack",
            Key::Laswp => "mpiscope/laswp",
            Key::Reduction => "mpiscope/reduction",
        }
    }

    /// The key of option `name`, if it is one.
    pub fn named(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// LogGP's parameters as `mpiscope calibrate` measures them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LogGpValues {
    /// Latency, seconds.
    pub l: f64,
    /// Overhead per message at each end, seconds.
    pub o: f64,
    /// Gap between two messages of a host, seconds.
    pub g: f64,
    /// Gap per byte, seconds.
    pub big_g: f64,
}

/// A kernel's time model: `per_work` seconds per unit of its work (`m n k` for dgemm) plus
/// `per_element` seconds per element of its output (`m n`), and for dgemm
/// `per_a_element` seconds per element of `A` (`m k`) plus `per_b_element` per element of
/// `B` (`k n`): the packing of both operands that each call makes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KernelCost {
    /// Seconds per unit of work (at least 0).
    pub per_work: f64,
    /// Seconds per output element (may be negative: a fit's lower-order term).
    pub per_element: f64,
    /// Seconds per element of dgemm's `A`, `m k` (0 for the other kernels).
    pub per_a_element: f64,
    /// Seconds per element of dgemm's `B`, `k n` (0 for the other kernels).
    pub per_b_element: f64,
}

impl KernelCost {
    /// A two-term model `per_work`, `per_element` (the packing terms 0).
    pub fn new(per_work: f64, per_element: f64) -> KernelCost {
        KernelCost {
            per_work,
            per_element,
            ..KernelCost::default()
        }
    }

    /// Seconds for a dgemm of `m x n x k` under this model: `a m n k + c m n + d m k +
    /// e n k`, the packing terms only when set (so that a two-term model gives exactly
    /// `a m n k + c m n`); may be negative with a negative `c`.
    pub fn dgemm_seconds(&self, m: f64, n: f64, k: f64) -> f64 {
        let mut t = self.per_work * m * n * k + self.per_element * m * n;
        if self.per_a_element != 0.0 {
            t += self.per_a_element * m * k;
        }
        if self.per_b_element != 0.0 {
            t += self.per_b_element * n * k;
        }
        t
    }
}

/// The `mpiscope/*` values of a platform; `None` (or empty) for a key it does not carry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Calibration {
    /// `mpiscope/loggp`.
    pub loggp: Option<LogGpValues>,
    /// `mpiscope/core-efficiency`: positive factors, one per number of busy cores.
    pub core_efficiency: Option<Vec<f64>>,
    /// `mpiscope/oversubscribed-wake-up`, seconds (at least 0).
    pub oversubscribed_wake_up: Option<f64>,
    /// `mpiscope/dgemm`.
    pub dgemm: Option<KernelCost>,
    /// `mpiscope/dtrsm`.
    pub dtrsm: Option<KernelCost>,
    /// `mpiscope/panel`.
    pub panel: Option<KernelCost>,
    /// `mpiscope/pack`, seconds per byte (at least 0).
    pub pack: Option<f64>,
    /// `mpiscope/laswp`.
    pub laswp: Option<KernelCost>,
    /// `mpiscope/reduction`, seconds per byte (at least 0).
    pub reduction: Option<f64>,
}

impl Calibration {
    /// Every `mpiscope/*` key of `config` (a platform's options).
    pub fn from_config(config: &BTreeMap<String, String>) -> Result<Calibration, String> {
        Calibration::read(config, &Key::ALL)
    }

    /// The `keys` of `config` (a platform's options), checked in that order; the others
    /// stay unset, whatever they hold.
    pub fn read(config: &BTreeMap<String, String>, keys: &[Key]) -> Result<Calibration, String> {
        let mut c = Calibration::default();
        for &key in keys {
            let Some(v) = config.get(key.name()) else {
                continue;
            };
            match key {
                Key::LogGp => c.loggp = Some(parse_loggp(v)?),
                Key::CoreEfficiency => c.core_efficiency = Some(parse_efficiency(v)?),
                Key::OversubscribedWakeUp => c.oversubscribed_wake_up = Some(parse_wake_up(v)?),
                Key::Pack => c.pack = Some(parse_per_byte(key, v)?),
                Key::Reduction => c.reduction = Some(parse_per_byte(key, v)?),
                Key::Dgemm => c.dgemm = Some(parse_dgemm(v)?),
                Key::Dtrsm => c.dtrsm = Some(parse_kernel(key, v)?),
                Key::Panel => c.panel = Some(parse_kernel(key, v)?),
                Key::Laswp => c.laswp = Some(parse_kernel(key, v)?),
            }
        }
        Ok(c)
    }

    /// The model of kernel `key` (`None` for a key that is not a kernel's).
    pub fn kernel(&self, key: Key) -> Option<KernelCost> {
        match key {
            Key::Dgemm => self.dgemm,
            Key::Dtrsm => self.dtrsm,
            Key::Panel => self.panel,
            Key::Laswp => self.laswp,
            _ => None,
        }
    }

    /// The slot of kernel `key`'s model (`None` for a key that is not a kernel's).
    pub fn kernel_mut(&mut self, key: Key) -> Option<&mut Option<KernelCost>> {
        match key {
            Key::Dgemm => Some(&mut self.dgemm),
            Key::Dtrsm => Some(&mut self.dtrsm),
            Key::Panel => Some(&mut self.panel),
            Key::Laswp => Some(&mut self.laswp),
            _ => None,
        }
    }

    /// The `[config]` line of `key` (TOML, newline included), `None` when unset.
    pub fn line(&self, key: Key) -> Option<String> {
        let value = match key {
            Key::LogGp => self
                .loggp
                .map(|p| format!("\"{:e},{:e},{:e},{:e}\"", p.l, p.o, p.g, p.big_g))?,
            Key::CoreEfficiency => {
                let e: Vec<String> = self
                    .core_efficiency
                    .as_ref()?
                    .iter()
                    .map(|e| format!("{e:.4}"))
                    .collect();
                format!("\"{}\"", e.join(" "))
            }
            Key::OversubscribedWakeUp => format!("{:e}", self.oversubscribed_wake_up?),
            Key::Pack => format!("{:e}", self.pack?),
            Key::Reduction => format!("{:e}", self.reduction?),
            Key::Dgemm | Key::Dtrsm | Key::Panel | Key::Laswp => {
                let k = self.kernel(key)?;
                if k.per_a_element == 0.0 && k.per_b_element == 0.0 {
                    format!("\"{:e} {:e}\"", k.per_work, k.per_element)
                } else {
                    format!(
                        "\"{:e} {:e} {:e} {:e}\"",
                        k.per_work, k.per_element, k.per_a_element, k.per_b_element
                    )
                }
            }
        };
        Some(format!("\"{}\" = {value}\n", key.name()))
    }

    /// The `[config]` lines of every key set, in [`Key::ALL`]'s order.
    pub fn to_config(&self) -> String {
        Key::ALL.iter().filter_map(|&k| self.line(k)).collect()
    }
}

/// `L,o,g,G` in seconds (and seconds per byte), as `mpiscope calibrate` writes them.
fn parse_loggp(v: &str) -> Result<LogGpValues, String> {
    let values: Vec<f64> = v
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|v: &Vec<f64>| v.len() == 4 && v.iter().all(|x| x.is_finite() && *x >= 0.0))
        .ok_or_else(|| format!("mpiscope/loggp `{v}` is not four non-negative numbers L,o,g,G"))?;
    Ok(LogGpValues {
        l: values[0],
        o: values[1],
        g: values[2],
        big_g: values[3],
    })
}

/// Per-core speed factors with 1, 2, ... busy cores: positive numbers separated by spaces.
fn parse_efficiency(v: &str) -> Result<Vec<f64>, String> {
    v.split_whitespace()
        .map(|x| x.parse::<f64>().ok().filter(|e| e.is_finite() && *e > 0.0))
        .collect::<Option<Vec<f64>>>()
        .filter(|e| !e.is_empty())
        .ok_or_else(|| {
            format!(
                "mpiscope/core-efficiency `{v}`: expected positive speed factors with 1, 2, ... \
                 busy cores (\"1 0.8\")"
            )
        })
}

/// A non-negative number of seconds.
fn parse_wake_up(v: &str) -> Result<f64, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite() && *d >= 0.0)
        .ok_or_else(|| {
            format!(
                "mpiscope/oversubscribed-wake-up `{v}`: expected a non-negative number of seconds"
            )
        })
}

/// A non-negative number of seconds per byte.
fn parse_per_byte(key: Key, v: &str) -> Result<f64, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| {
            format!(
                "{} `{v}` is not a non-negative number (seconds per byte)",
                key.name()
            )
        })
}

/// Two numbers `a c`, `a` non-negative.
fn parse_kernel(key: Key, v: &str) -> Result<KernelCost, String> {
    let key = key.name();
    let x: Vec<f64> = v
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{key} `{v}` is not two numbers"))?;
    match x[..] {
        [a, c] if a.is_finite() && c.is_finite() && a >= 0.0 => Ok(KernelCost::new(a, c)),
        _ => Err(format!("{key} `{v}` is not two numbers (seconds)")),
    }
}

/// `a c [d [e]]`: dgemm's two terms, then its packing terms (absent: 0); `a`, `d` and `e`
/// non-negative.
fn parse_dgemm(v: &str) -> Result<KernelCost, String> {
    let bad = || {
        format!(
            "mpiscope/dgemm `{v}` is not two to four numbers `a c [d [e]]` (seconds; a, d, e \
             non-negative)"
        )
    };
    let x: Vec<f64> = v
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if !(2..=4).contains(&x.len()) || x.iter().any(|t| !t.is_finite()) {
        return Err(bad());
    }
    let term = |i: usize| x.get(i).copied().unwrap_or(0.0);
    let cost = KernelCost {
        per_work: x[0],
        per_element: x[1],
        per_a_element: term(2),
        per_b_element: term(3),
    };
    if cost.per_work < 0.0 || cost.per_a_element < 0.0 || cost.per_b_element < 0.0 {
        return Err(bad());
    }
    Ok(cost)
}

/// A calibration with every key set, to values that are not round in decimal (tests).
#[cfg(test)]
pub(crate) fn sample() -> Calibration {
    let cost = |a: f64, c: f64| Some(KernelCost::new(a, c));
    Calibration {
        loggp: Some(LogGpValues {
            l: 1.7999999999999986e-7,
            o: 1.1e-7,
            g: 2.2e-7,
            big_g: 1.0 / 9e9,
        }),
        core_efficiency: Some(vec![1.0, 0.9512, 0.75]),
        oversubscribed_wake_up: Some(1.3996e-3),
        dgemm: Some(KernelCost {
            per_a_element: 2.2e-10,
            per_b_element: 3.0e-10 / 7.0,
            ..KernelCost::new(2.0 / 3.1e10, 1.0 / 7e9)
        }),
        dtrsm: cost(1.0 / 1.7e10, -3.3e-12),
        panel: cost(1.0 / 6e9, 0.0),
        pack: Some(1.9298245614035085e-10),
        laswp: cost(1.0 / 3e8, 0.0),
        reduction: Some(1.0 / 7.3e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn keys_are_named_once() {
        for k in Key::ALL {
            assert_eq!(Key::named(k.name()), Some(k));
            assert!(k.name().starts_with("mpiscope/"));
        }
        assert_eq!(Key::named("mpiscope/dgem"), None);
        for k in Key::KERNELS {
            assert!(Key::ALL.contains(&k));
        }
    }

    #[test]
    fn lines_are_what_readers_parse() {
        let c = sample();
        let lines = c.to_config();
        assert_eq!(lines.lines().count(), 9, "{lines}");
        // The values without the TOML quoting, as a platform reader hands them over.
        let pairs: Vec<(String, String)> = lines
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(" = ").unwrap();
                (k.trim_matches('"').into(), v.trim_matches('"').into())
            })
            .collect();
        let back = Calibration::from_config(&pairs.into_iter().collect()).unwrap();
        assert_eq!(back, c);
        assert!(lines.contains("\"mpiscope/core-efficiency\" = \"1.0000 0.9512 0.7500\"\n"));
        assert!(lines.contains("\"mpiscope/oversubscribed-wake-up\" = 1.3996e-3\n"));
        assert_eq!(Calibration::default().to_config(), "");
        assert_eq!(Calibration::default().line(Key::Pack), None);
    }

    #[test]
    fn only_the_keys_asked_for_are_read() {
        let c = config(&[
            ("mpiscope/loggp", "1,2"),
            ("mpiscope/pack", "2e-10"),
            ("smpi/bw-factor", "0:1"),
        ]);
        let read = Calibration::read(&c, &[Key::Pack]).unwrap();
        assert_eq!(read.pack, Some(2e-10));
        assert_eq!(read.loggp, None);
        let e = Calibration::from_config(&c).unwrap_err();
        assert!(e.contains("mpiscope/loggp `1,2`"), "{e}");
    }

    #[test]
    fn malformed_values_are_named() {
        for (key, bad, says) in [
            ("mpiscope/loggp", "1,2,3,-4", "four non-negative numbers"),
            ("mpiscope/core-efficiency", "1 0", "positive speed factors"),
            ("mpiscope/core-efficiency", "", "positive speed factors"),
            (
                "mpiscope/oversubscribed-wake-up",
                "-1",
                "non-negative number of seconds",
            ),
            (
                "mpiscope/oversubscribed-wake-up",
                "inf",
                "non-negative number of seconds",
            ),
            ("mpiscope/pack", "x", "seconds per byte"),
            ("mpiscope/reduction", "-1e-10", "seconds per byte"),
            ("mpiscope/reduction", "fast", "seconds per byte"),
            ("mpiscope/dgemm", "1 x", "is not two to four numbers"),
            ("mpiscope/dgemm", "1", "is not two to four numbers"),
            ("mpiscope/dgemm", "1 2 3 4 5", "is not two to four numbers"),
            ("mpiscope/dgemm", "1 2 -3", "a, d, e non-negative"),
            ("mpiscope/dgemm", "1 2 0 inf", "is not two to four numbers"),
            ("mpiscope/dtrsm", "1", "is not two numbers (seconds)"),
            ("mpiscope/panel", "-1 0", "is not two numbers (seconds)"),
            ("mpiscope/laswp", "nan 0", "is not two numbers (seconds)"),
        ] {
            let e = Calibration::from_config(&config(&[(key, bad)])).unwrap_err();
            assert!(
                e.starts_with(&format!("{key} `{bad}`")) && e.contains(says),
                "{key} = {bad}: {e}"
            );
        }
        // A negative lower-order term is a fit's, and kept.
        let c = Calibration::from_config(&config(&[("mpiscope/dgemm", "1e-11 -2e-10")]));
        assert_eq!(c.unwrap().dgemm.unwrap().per_element, -2e-10);
    }

    /// A dgemm value of two numbers (what calibrations wrote before the packing terms)
    /// reads as the same model with those terms 0 and is written back as two numbers;
    /// three and four numbers add `d m k`, then `e n k`.
    #[test]
    fn dgemm_reads_two_to_four_terms() {
        let read = |v: &str| {
            Calibration::from_config(&config(&[("mpiscope/dgemm", v)]))
                .unwrap()
                .dgemm
                .unwrap()
        };
        let old = read("2.5e-11 1.5e-10");
        assert_eq!(old, KernelCost::new(2.5e-11, 1.5e-10));
        let line = Calibration {
            dgemm: Some(old),
            ..Calibration::default()
        }
        .line(Key::Dgemm);
        assert_eq!(line.unwrap(), "\"mpiscope/dgemm\" = \"2.5e-11 1.5e-10\"\n");
        // The two-term model's time is exactly a m n k + c m n, bit for bit.
        for (m, n, k) in [
            (2000.0, 128.0, 128.0),
            (1.0, 3.0, 7.0),
            (4000.0, 4000.0, 64.0),
        ] {
            let t: f64 = 2.5e-11 * m * n * k + 1.5e-10 * m * n;
            assert_eq!(old.dgemm_seconds(m, n, k).to_bits(), t.to_bits());
        }
        let three = read("2.5e-11 1.5e-10 4e-10");
        assert_eq!((three.per_a_element, three.per_b_element), (4e-10, 0.0));
        let four = read("2.5e-11 1.5e-10 4e-10 5e-10");
        assert_eq!((four.per_a_element, four.per_b_element), (4e-10, 5e-10));
        let t = four.dgemm_seconds(100.0, 10.0, 20.0);
        let want = 2.5e-11 * 2e4 + 1.5e-10 * 1e3 + 4e-10 * 2e3 + 5e-10 * 200.0;
        assert!((t / want - 1.0).abs() < 1e-12, "{t} {want}");
        // The other kernels keep two numbers.
        let e = Calibration::from_config(&config(&[("mpiscope/dtrsm", "1e-11 0 1e-10")]));
        assert!(e.unwrap_err().contains("is not two numbers"));
    }
}
