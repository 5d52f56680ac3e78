//! Placing MPI ranks on hosts: hostfiles and mappings.
//!
//! A [`Hostfile`] is read as `smpirun` reads it (SimGrid 3.32): if any line contains a `:`,
//! every line `name:N` becomes `N` lines `name` (split at the *last* `:`; the name is kept
//! as is) and every other line is trimmed; otherwise lines are taken verbatim. Empty lines
//! are skipped. Rank `i` runs on entry `i mod entries`. Names must match host names
//! exactly (`"n0 "` with a trailing space is not `n0`).
//!
//! A [`Mapping`] says how ranks go to hosts: sequentially (`k` ranks per host, host after
//! host), round-robin over hosts, by a seeded random permutation of the hosts, or from a
//! hostfile. [`map_ranks`] applies one to a platform.

use std::path::Path;

use super::{HostId, Platform, PlatformError};

/// One entry of a hostfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostfileEntry {
    /// Host name, as written.
    pub name: String,
    /// 1-based line of the file it comes from.
    pub line: usize,
}

/// A parsed hostfile: the expanded list of host names, one per rank slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hostfile {
    /// File name, for errors.
    pub path: String,
    /// Entries, expanded (`n0:2` gives two entries).
    pub entries: Vec<HostfileEntry>,
}

impl Hostfile {
    /// Parses hostfile text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Hostfile, PlatformError> {
        const MAX_ENTRIES: u64 = 1 << 24;
        let colon_mode = text.contains(':');
        let mut entries = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let line = i + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            if colon_mode {
                if let Some(pos) = raw.rfind(':') {
                    let (name, count) = (&raw[..pos], raw[pos + 1..].trim());
                    let n: i64 = count.parse().map_err(|_| PlatformError::Syntax {
                        path: path.to_string(),
                        line,
                        message: format!("`{count}` is not a number of processes"),
                    })?;
                    if n > 0 && (n as u64).saturating_add(entries.len() as u64) > MAX_ENTRIES {
                        return Err(PlatformError::Syntax {
                            path: path.to_string(),
                            line,
                            message: format!("too many processes ({n})"),
                        });
                    }
                    if !name.is_empty() {
                        for _ in 0..n.max(0) {
                            entries.push(HostfileEntry {
                                name: name.to_string(),
                                line,
                            });
                        }
                    }
                    continue;
                }
                let name = raw.trim();
                if !name.is_empty() {
                    entries.push(HostfileEntry {
                        name: name.to_string(),
                        line,
                    });
                }
            } else if !raw.is_empty() {
                entries.push(HostfileEntry {
                    name: raw.to_string(),
                    line,
                });
            }
        }
        if entries.is_empty() {
            return Err(PlatformError::Syntax {
                path: path.to_string(),
                line: 0,
                message: "the hostfile is empty".into(),
            });
        }
        Ok(Hostfile {
            path: path.to_string(),
            entries,
        })
    }

    /// Reads and parses a hostfile.
    pub fn from_path(path: &Path) -> Result<Hostfile, PlatformError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PlatformError::Io {
            path: name.clone(),
            source,
        })?;
        Hostfile::parse(&text, &name)
    }

    /// A hostfile listing `names` in order.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Hostfile {
        Hostfile {
            path: "<hostfile>".into(),
            entries: names
                .iter()
                .enumerate()
                .map(|(i, n)| HostfileEntry {
                    name: n.as_ref().to_string(),
                    line: i + 1,
                })
                .collect(),
        }
    }
}

/// How ranks are placed on hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// Ranks `0..k` on host 0, `k..2k` on host 1, …, wrapping around to host 0 after the
    /// last host.
    Sequential {
        /// Ranks per host (`k ≥ 1`).
        ranks_per_host: u32,
    },
    /// Rank `i` on host `i mod hosts`.
    RoundRobin,
    /// Hosts in a random order (a permutation drawn from `seed`, the same on every
    /// machine), then filled sequentially with `ranks_per_host` ranks each.
    Random {
        /// Seed of the permutation.
        seed: u64,
        /// Ranks per host (`k ≥ 1`).
        ranks_per_host: u32,
    },
    /// Rank `i` on the host of entry `i mod entries` of the hostfile, as `smpirun`.
    Hostfile(Hostfile),
}

impl std::str::FromStr for Mapping {
    type Err = String;

    /// `sequential[:K]` (K ranks per host, hosts in order), `round-robin`,
    /// `random[:SEED[:K]]` (hosts in a seeded random order, K ranks each). Hostfiles are
    /// read with [`Hostfile::from_path`].
    fn from_str(s: &str) -> Result<Mapping, String> {
        let (name, arg) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
        let number = |what: &str, v: Option<&str>, default: u64| -> Result<u64, String> {
            v.map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("mapping `{s}`: {what} `{v}` is not a number"))
            })
        };
        let per_host = |v: Option<&str>| -> Result<u32, String> {
            let k = number("K", v, 1)?;
            u32::try_from(k)
                .ok()
                .filter(|k| *k >= 1)
                .ok_or_else(|| format!("mapping `{s}`: K must be between 1 and 2^32-1"))
        };
        match name {
            "sequential" => Ok(Mapping::Sequential {
                ranks_per_host: per_host(arg)?,
            }),
            "round-robin" | "roundrobin" if arg.is_none() => Ok(Mapping::RoundRobin),
            "random" => {
                let (seed, k) =
                    match arg.map(|a| a.split_once(':').map_or((a, None), |(x, y)| (x, Some(y)))) {
                        None => (None, None),
                        Some((seed, k)) => (Some(seed), k),
                    };
                Ok(Mapping::Random {
                    seed: number("SEED", seed, 0)?,
                    ranks_per_host: per_host(k)?,
                })
            }
            _ => Err(format!(
                "mapping `{s}`: expected sequential[:K], round-robin or random[:SEED[:K]]"
            )),
        }
    }
}

/// SplitMix64: a small, fast, well-mixed 64-bit generator (Vigna), enough for drawing a
/// permutation reproducibly.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), without modulo bias (Lemire's method).
    pub fn below(&mut self, n: u64) -> u64 {
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }
}

/// A permutation of `0..n` drawn from `seed` (Fisher–Yates).
pub fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

/// The host of each of `nranks` ranks.
pub fn map_ranks(
    platform: &Platform,
    nranks: u32,
    mapping: &Mapping,
) -> Result<Vec<HostId>, PlatformError> {
    let n = platform.hosts.len();
    if n == 0 {
        return Err(PlatformError::Invalid("the platform has no hosts".into()));
    }
    let per_host = |k: u32| -> Result<u64, PlatformError> {
        if k == 0 {
            Err(PlatformError::Invalid(
                "ranks_per_host must be at least 1".into(),
            ))
        } else {
            Ok(k as u64)
        }
    };
    match mapping {
        Mapping::Sequential { ranks_per_host } => {
            let k = per_host(*ranks_per_host)?;
            Ok((0..nranks as u64)
                .map(|r| ((r / k) % n as u64) as HostId)
                .collect())
        }
        Mapping::RoundRobin => Ok((0..nranks as u64)
            .map(|r| (r % n as u64) as HostId)
            .collect()),
        Mapping::Random {
            seed,
            ranks_per_host,
        } => {
            let k = per_host(*ranks_per_host)?;
            let perm = permutation(n, *seed);
            Ok((0..nranks as u64)
                .map(|r| perm[((r / k) % n as u64) as usize])
                .collect())
        }
        Mapping::Hostfile(hf) => {
            if hf.entries.is_empty() {
                return Err(PlatformError::Syntax {
                    path: hf.path.clone(),
                    line: 0,
                    message: "the hostfile is empty".into(),
                });
            }
            let mut hosts = Vec::with_capacity(hf.entries.len());
            for e in &hf.entries {
                let h = platform
                    .host_id(&e.name)
                    .ok_or_else(|| PlatformError::Syntax {
                        path: hf.path.clone(),
                        line: e.line,
                        message: format!("host `{}` is not in the platform", e.name),
                    })?;
                hosts.push(h);
            }
            Ok((0..nranks as usize)
                .map(|r| hosts[r % hosts.len()])
                .collect())
        }
    }
}

/// What a placement of `nranks` ranks on a platform of `hosts` hosts does that its mapping
/// does not say: ranks wrapping around to hosts that already have their share. A
/// `sequential:K` or `random:SEED:K` mapping wraps when there are more than `K` ranks per
/// host; a hostfile (read as `smpirun` reads it) when it lists fewer slots than ranks.
/// Round-robin places ranks modulo the hosts by definition and never warns. `None` when
/// nothing wraps (or the platform has no hosts, which [`map_ranks`] refuses).
pub fn wrap_warning(hosts: usize, nranks: u32, mapping: &Mapping) -> Option<String> {
    let most = |slots: u64, slot_of: &dyn Fn(u64) -> u64| -> u64 {
        let mut per = vec![0u64; slots as usize];
        for r in 0..u64::from(nranks) {
            per[slot_of(r) as usize] += 1;
        }
        per.into_iter().max().unwrap_or(0)
    };
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let n = hosts as u64;
    match mapping {
        Mapping::Sequential { ranks_per_host: k }
        | Mapping::Random {
            ranks_per_host: k, ..
        } => {
            let k = u64::from(*k);
            if n == 0 || k == 0 || u64::from(nranks) <= k.saturating_mul(n) {
                return None;
            }
            let name = match mapping {
                Mapping::Random { seed, .. } => format!("random:{seed}:{k}"),
                _ => format!("sequential:{k}"),
            };
            Some(format!(
                "mapping {name}: {nranks} ranks at {k} per host need {} hosts, the platform has {n}: \
                 the placement wraps around to the first host{}, up to {} ranks share a host",
                u64::from(nranks).div_ceil(k),
                plural(n),
                most(n, &|r| (r / k) % n),
            ))
        }
        Mapping::RoundRobin => None,
        Mapping::Hostfile(hf) => {
            let e = hf.entries.len() as u64;
            if e == 0 || u64::from(nranks) <= e {
                return None;
            }
            let per = most(e, &|r| r % e);
            Some(format!(
                "hostfile {}: {e} slot{} for {nranks} ranks: rank i goes to slot i mod {e} (as smpirun \
                 places them), so the placement wraps around, up to {per} ranks on one slot's host",
                hf.path,
                plural(e),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{cluster, ClusterSpec};

    fn plat(n: usize) -> Platform {
        let mut s = ClusterSpec::new(n, 1e9, 1e-6);
        s.prefix = "n".into();
        cluster(s).unwrap()
    }

    #[test]
    fn mapping_from_str() {
        let m = |s: &str| s.parse::<Mapping>();
        assert_eq!(
            m("sequential"),
            Ok(Mapping::Sequential { ranks_per_host: 1 })
        );
        assert_eq!(
            m("sequential:4"),
            Ok(Mapping::Sequential { ranks_per_host: 4 })
        );
        assert_eq!(m("round-robin"), Ok(Mapping::RoundRobin));
        assert_eq!(
            m("random"),
            Ok(Mapping::Random {
                seed: 0,
                ranks_per_host: 1
            })
        );
        assert_eq!(
            m("random:7"),
            Ok(Mapping::Random {
                seed: 7,
                ranks_per_host: 1
            })
        );
        assert_eq!(
            m("random:7:2"),
            Ok(Mapping::Random {
                seed: 7,
                ranks_per_host: 2
            })
        );
        for bad in [
            "sequential:0",
            "sequential:x",
            "random:x",
            "random:1:0",
            "diagonal",
            "round-robin:2",
        ] {
            let e = m(bad).unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn platform_mapping_hostfile_parse() {
        let hf = Hostfile::parse("n0:2\nn1\n", "hf").unwrap();
        let names: Vec<&str> = hf.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["n0", "n0", "n1"]);
        // The note's measurement: `n0:2 / n1` with -np 5 gives n0, n0, n1, n0, n0.
        let p = plat(4);
        let m = map_ranks(&p, 5, &Mapping::Hostfile(hf)).unwrap();
        assert_eq!(m, [0, 0, 1, 0, 0]);
        // Without colons, lines are verbatim: a trailing space is part of the name.
        let hf = Hostfile::parse("n0 \nn1\n", "hf2").unwrap();
        let err = map_ranks(&p, 2, &Mapping::Hostfile(hf))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("hf2:1:") && err.contains("`n0 `"), "{err}");
        // With colons somewhere, other lines are trimmed; empty lines skipped; last colon.
        let hf = Hostfile::parse("  n2  \n\nn3:1\na:b:3\n", "hf3").unwrap();
        let names: Vec<&str> = hf.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["n2", "n3", "a:b", "a:b", "a:b"]);
        assert_eq!(hf.entries[1].line, 3);
        assert!(Hostfile::parse("n0:x\n", "bad").is_err());
        assert!(Hostfile::parse("\n\n", "empty").is_err());
        assert_eq!(Hostfile::parse("n0:0\nn1\n", "z").unwrap().entries.len(), 1);
        assert!(Hostfile::parse("n0:99999999999\n", "big").is_err());
    }

    #[test]
    fn platform_mapping_kinds() {
        let p = plat(4);
        let seq = map_ranks(&p, 10, &Mapping::Sequential { ranks_per_host: 3 }).unwrap();
        assert_eq!(seq, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
        let seq = map_ranks(&p, 10, &Mapping::Sequential { ranks_per_host: 2 }).unwrap();
        assert_eq!(seq, [0, 0, 1, 1, 2, 2, 3, 3, 0, 0]);
        let rr = map_ranks(&p, 6, &Mapping::RoundRobin).unwrap();
        assert_eq!(rr, [0, 1, 2, 3, 0, 1]);
        assert!(map_ranks(&p, 2, &Mapping::Sequential { ranks_per_host: 0 }).is_err());
        let hf = Mapping::Hostfile(Hostfile::from_names(&["n3", "n1"]));
        assert_eq!(map_ranks(&p, 3, &hf).unwrap(), [3, 1, 3]);
    }

    #[test]
    fn platform_mapping_random_is_a_seeded_permutation() {
        let p = plat(64);
        let m = |seed| {
            map_ranks(
                &p,
                64,
                &Mapping::Random {
                    seed,
                    ranks_per_host: 1,
                },
            )
            .unwrap()
        };
        let a = m(7);
        assert_eq!(a, m(7), "deterministic");
        assert_ne!(a, m(8), "seed matters");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..64).collect::<Vec<u32>>(), "a permutation");
        assert_ne!(a, (0..64).collect::<Vec<u32>>());
        // Two ranks per host: pairs of ranks share a host.
        let b = map_ranks(
            &p,
            8,
            &Mapping::Random {
                seed: 7,
                ranks_per_host: 2,
            },
        )
        .unwrap();
        assert_eq!(b[0], b[1]);
        assert_eq!(b[0], a[0]);
        assert_eq!(b[2], a[1]);
        // The generator itself: fixed reference values keep permutations stable across
        // versions (SplitMix64 with seed 0).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut g = SplitMix64::new(1);
        for n in [1u64, 2, 3, 10, 1 << 40] {
            for _ in 0..100 {
                assert!(g.below(n) < n);
            }
        }
    }

    #[test]
    fn wrapping_placements_say_so() {
        let seq = |k| Mapping::Sequential { ranks_per_host: k };
        // The case: 4 ranks, 2 per host, 1 host.
        let w = wrap_warning(1, 4, &seq(2)).expect("wraps");
        assert_eq!(
            w,
            "mapping sequential:2: 4 ranks at 2 per host need 2 hosts, the platform has 1: \
             the placement wraps around to the first host, up to 4 ranks share a host"
        );
        assert_eq!(wrap_warning(2, 4, &seq(2)), None);
        assert_eq!(wrap_warning(4, 4, &seq(1)), None);
        // 5 ranks, 2 per host on 2 hosts: ranks 0, 1, 4 on the first host.
        assert!(wrap_warning(2, 5, &seq(2))
            .expect("wraps")
            .ends_with("up to 3 ranks share a host"));
        let random = Mapping::Random {
            seed: 7,
            ranks_per_host: 1,
        };
        assert!(wrap_warning(3, 4, &random)
            .expect("wraps")
            .starts_with("mapping random:7:1: 4 ranks"));
        assert_eq!(wrap_warning(4, 4, &random), None);
        assert_eq!(wrap_warning(1, 64, &Mapping::RoundRobin), None);
        let hf = Mapping::Hostfile(Hostfile::from_names(&["n0", "n1"]));
        assert_eq!(wrap_warning(8, 2, &hf), None);
        assert_eq!(
            wrap_warning(8, 5, &hf).expect("wraps"),
            "hostfile <hostfile>: 2 slots for 5 ranks: rank i goes to slot i mod 2 (as smpirun \
             places them), so the placement wraps around, up to 3 ranks on one slot's host"
        );
        assert_eq!(wrap_warning(0, 5, &seq(1)), None);
    }
}
