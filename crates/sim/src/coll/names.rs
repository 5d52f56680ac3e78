//! Every name of a collective, an algorithm and a selector, from one table each.
//!
//! A [`Collective`] has four kinds of names, all in one table (`TABLE`):
//!
//! * its name on the command line and in SimGrid's configuration (`--algorithm
//!   reduce_scatter=...`, `--cfg=smpi/reduce_scatter:...`), with the spellings other tools use
//!   as aliases (SimGrid's time-independent traces write `reducescatter`);
//! * the MPI function reports name it by (`MPI_Reduce_scatter`);
//! * the families of the MPI functions it stands for in a replay (`mpiscope_mpispec::family`:
//!   `reduce_scatter_block` runs as `reduce_scatter`, `alltoallw` as `alltoallv` counted in
//!   bytes);
//! * its action in SimGrid's time-independent traces (`reducescatter`), matched exactly.
//!
//! The algorithms of a collective are listed by the file that implements them, in its
//! `ALGORITHMS` table (each name beside the function that builds it, so the two cannot drift),
//! with `ALIASES` for other spellings; `table` finds a collective's table, [`algorithms`] lists
//! its names (gathered at compile time) and [`resolve_algorithm`] turns any accepted spelling
//! into the canonical name (exact, then ignoring case, then an alias: `bcast=binomial` is
//! `binomial_tree`). Front ends check a name with it, so they accept exactly what the library
//! runs.

use std::str::FromStr;

use super::{
    allgather, allgatherv, allreduce, alltoall, alltoallv, barrier, bcast, gather, reduce,
    reduce_scatter, scan, scatter, Algorithm, Collective, Selector,
};

/// One collective's names.
struct Names {
    kind: Collective,
    /// The name on the command line and in SimGrid's configuration.
    name: &'static str,
    /// Other spellings accepted for `name`.
    aliases: &'static [&'static str],
    /// The MPI function, as reports name it.
    function: &'static str,
    /// The MPI function families (`mpiscope_mpispec::family`) replayed as this collective.
    families: &'static [&'static str],
    /// The action of SimGrid's time-independent traces.
    ti: &'static str,
}

/// The collectives and their names, in [`Collective::ALL`]'s order.
const TABLE: [Names; 15] = {
    use Collective::*;
    const fn n(
        kind: Collective,
        name: &'static str,
        aliases: &'static [&'static str],
        function: &'static str,
        families: &'static [&'static str],
    ) -> Names {
        Names {
            kind,
            name,
            aliases,
            function,
            families,
            // SimGrid's actions are the names, one excepted (below).
            ti: name,
        }
    }
    [
        n(Barrier, "barrier", &[], "MPI_Barrier", &["barrier"]),
        n(Bcast, "bcast", &[], "MPI_Bcast", &["bcast"]),
        n(Reduce, "reduce", &[], "MPI_Reduce", &["reduce"]),
        n(Allreduce, "allreduce", &[], "MPI_Allreduce", &["allreduce"]),
        n(Alltoall, "alltoall", &[], "MPI_Alltoall", &["alltoall"]),
        n(
            Alltoallv,
            "alltoallv",
            &[],
            "MPI_Alltoallv",
            &["alltoallv", "alltoallw"],
        ),
        n(Gather, "gather", &[], "MPI_Gather", &["gather"]),
        n(Gatherv, "gatherv", &[], "MPI_Gatherv", &["gatherv"]),
        n(Scatter, "scatter", &[], "MPI_Scatter", &["scatter"]),
        n(Scatterv, "scatterv", &[], "MPI_Scatterv", &["scatterv"]),
        n(Allgather, "allgather", &[], "MPI_Allgather", &["allgather"]),
        n(
            Allgatherv,
            "allgatherv",
            &[],
            "MPI_Allgatherv",
            &["allgatherv"],
        ),
        Names {
            ti: "reducescatter",
            ..n(
                ReduceScatter,
                "reduce_scatter",
                &["reducescatter"],
                "MPI_Reduce_scatter",
                &["reduce_scatter", "reduce_scatter_block"],
            )
        },
        n(Scan, "scan", &[], "MPI_Scan", &["scan"]),
        n(Exscan, "exscan", &[], "MPI_Exscan", &["exscan"]),
    ]
};

impl Collective {
    /// Every collective.
    pub const ALL: [Collective; 15] = {
        let mut all = [Collective::Barrier; 15];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].kind;
            i += 1;
        }
        all
    };

    fn names(self) -> &'static Names {
        // TABLE lists every collective once, in declaration order.
        &TABLE[self as usize]
    }

    /// The name on the command line and in SimGrid's configuration (`reduce_scatter`).
    pub fn name(self) -> &'static str {
        self.names().name
    }

    /// The MPI function (`MPI_Reduce_scatter`).
    pub fn function(self) -> &'static str {
        self.names().function
    }

    /// The collective called `name` or one of its aliases (`reducescatter`), in any case.
    pub fn from_name(name: &str) -> Option<Collective> {
        TABLE
            .iter()
            .find(|n| {
                n.name.eq_ignore_ascii_case(name)
                    || n.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            })
            .map(|n| n.kind)
    }

    /// The collective a replay runs for a call of the MPI function family `family`
    /// (`reduce_scatter_block` -> `ReduceScatter`); `None` for other families (neighborhood
    /// collectives included).
    pub fn of_family(family: &str) -> Option<Collective> {
        TABLE
            .iter()
            .find(|n| n.families.contains(&family))
            .map(|n| n.kind)
    }

    /// The action of SimGrid's time-independent traces (`reducescatter`).
    pub fn ti_action(self) -> &'static str {
        self.names().ti
    }

    /// The collective whose time-independent trace action is exactly `action`.
    pub fn of_ti_action(action: &str) -> Option<Collective> {
        TABLE.iter().find(|n| n.ti == action).map(|n| n.kind)
    }

    /// Every collective's name, for help and error messages (`barrier, bcast, ...`).
    pub fn names_list() -> String {
        TABLE.iter().map(|n| n.name).collect::<Vec<_>>().join(", ")
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Collective {
    type Err = String;

    /// As [`Collective::from_name`]; the error lists the names.
    fn from_str(s: &str) -> Result<Collective, String> {
        Collective::from_name(s).ok_or_else(|| {
            format!(
                "unknown collective `{s}` (known: {})",
                Collective::names_list()
            )
        })
    }
}

/// The algorithms of `kind`, in the order users see them: the table of the file that
/// implements them.
pub(crate) const fn table(kind: Collective) -> &'static [Algorithm] {
    match kind {
        Collective::Barrier => barrier::ALGORITHMS,
        Collective::Bcast => bcast::ALGORITHMS,
        Collective::Reduce => reduce::ALGORITHMS,
        Collective::Allreduce => allreduce::ALGORITHMS,
        Collective::Alltoall => alltoall::ALGORITHMS,
        Collective::Alltoallv => alltoallv::ALGORITHMS,
        Collective::Gather => gather::GATHER_ALGORITHMS,
        Collective::Gatherv => gather::GATHERV_ALGORITHMS,
        Collective::Scatter => scatter::SCATTER_ALGORITHMS,
        Collective::Scatterv => scatter::SCATTERV_ALGORITHMS,
        Collective::Allgather => allgather::ALGORITHMS,
        Collective::Allgatherv => allgatherv::ALGORITHMS,
        Collective::ReduceScatter => reduce_scatter::ALGORITHMS,
        Collective::Scan | Collective::Exscan => scan::ALGORITHMS,
    }
}

/// How many algorithm names the tables hold, all collectives together.
const NAME_COUNT: usize = {
    let mut n = 0;
    let mut k = 0;
    while k < Collective::ALL.len() {
        n += table(Collective::ALL[k]).len();
        k += 1;
    }
    n
};

/// Every table's names one after the other, in [`Collective::ALL`]'s order, and where each
/// collective's names start (collective `k`'s are `at[k]..at[k + 1]`): the tables' names as
/// `'static` slices, computed when compiling.
static ALGORITHM_NAMES: ([&str; NAME_COUNT], [usize; Collective::ALL.len() + 1]) = {
    let mut names = [""; NAME_COUNT];
    let mut at = [0; Collective::ALL.len() + 1];
    let mut n = 0;
    let mut k = 0;
    while k < Collective::ALL.len() {
        at[k] = n;
        let t = table(Collective::ALL[k]);
        let mut i = 0;
        while i < t.len() {
            names[n] = t[i].name;
            n += 1;
            i += 1;
        }
        k += 1;
    }
    at[Collective::ALL.len()] = n;
    (names, at)
};

/// The algorithms of `kind`, by their canonical names (those [`super::program`]'s `forced`
/// accepts, with the spellings [`resolve_algorithm`] knows), in the order of its table.
pub fn algorithms(kind: Collective) -> &'static [&'static str] {
    let (names, at) = &ALGORITHM_NAMES;
    // TABLE, hence Collective::ALL, follows the enum's order.
    let k = kind as usize;
    &names[at[k]..at[k + 1]]
}

/// Other names accepted for the algorithms of `kind` (alias, canonical name).
pub(crate) fn aliases(kind: Collective) -> &'static [(&'static str, &'static str)] {
    match kind {
        Collective::Barrier => barrier::ALIASES,
        Collective::Bcast => bcast::ALIASES,
        Collective::Reduce => reduce::ALIASES,
        Collective::Allreduce => allreduce::ALIASES,
        Collective::Alltoall => alltoall::ALIASES,
        Collective::Alltoallv => alltoallv::ALIASES,
        Collective::Gather => gather::GATHER_ALIASES,
        Collective::Gatherv | Collective::Scatterv => &[("default", "linear")],
        Collective::Scatter => scatter::SCATTER_ALIASES,
        Collective::Allgather => allgather::ALIASES,
        Collective::Allgatherv => allgatherv::ALIASES,
        Collective::ReduceScatter => reduce_scatter::ALIASES,
        Collective::Scan | Collective::Exscan => scan::ALIASES,
    }
}

/// The canonical name of algorithm `name` of `kind`: an exact name, then a name in another
/// case, then an alias (`binomial` for bcast's `binomial_tree`); `None` if there is none.
pub fn resolve_algorithm(kind: Collective, name: &str) -> Option<&'static str> {
    let names = algorithms(kind);
    names
        .iter()
        .find(|n| **n == name)
        .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(name)))
        .copied()
        .or_else(|| {
            aliases(kind)
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(name))
                .map(|(_, c)| *c)
        })
}

/// Reads a forced algorithm `COLL=NAME` (`bcast=binomial`): the collective and the
/// algorithm's canonical name. The error says what is wrong, with the names known.
pub fn parse_forced(spec: &str) -> Result<(Collective, &'static str), String> {
    let (c, n) = spec
        .split_once('=')
        .ok_or_else(|| "expected COLL=NAME".to_string())?;
    let kind: Collective = c.trim().parse()?;
    let n = n.trim();
    let name = resolve_algorithm(kind, n).ok_or_else(|| {
        format!(
            "no {kind} algorithm `{n}` (known: {})",
            algorithms(kind).join(", ")
        )
    })?;
    Ok((kind, name))
}

impl Selector {
    /// Every selector.
    pub const ALL: [Selector; 3] = [Selector::Ompi, Selector::Mpich, Selector::OpenMpi4];

    /// The name on the command line (`ompi`, `mpich`, `openmpi4`).
    pub fn name(self) -> &'static str {
        match self {
            Selector::Ompi => "ompi",
            Selector::Mpich => "mpich",
            Selector::OpenMpi4 => "openmpi4",
        }
    }
}

impl FromStr for Selector {
    type Err = String;

    /// `ompi` (or `openmpi`), `mpich` or `openmpi4`.
    fn from_str(s: &str) -> Result<Selector, String> {
        match s {
            "ompi" | "openmpi" => Ok(Selector::Ompi),
            "mpich" => Ok(Selector::Mpich),
            "openmpi4" => Ok(Selector::OpenMpi4),
            _ => Err("expected ompi, mpich or openmpi4".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_follows_the_enum_and_names_are_unique() {
        for (i, n) in TABLE.iter().enumerate() {
            assert_eq!(n.kind as usize, i, "{}", n.name);
            assert_eq!(Collective::ALL[i], n.kind);
            assert_eq!(Collective::from_name(n.name), Some(n.kind));
            assert_eq!(n.kind.name().parse::<Collective>(), Ok(n.kind));
            assert!(n.function.starts_with("MPI_"));
            assert_eq!(
                n.function.to_ascii_lowercase(),
                format!("mpi_{}", n.name),
                "the function is the name"
            );
        }
        let mut all: Vec<&str> = TABLE
            .iter()
            .flat_map(|n| std::iter::once(n.name).chain(n.aliases.iter().copied()))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a name or alias used twice");
    }

    #[test]
    fn families_and_aliases() {
        assert_eq!(
            Collective::of_family("reduce_scatter_block"),
            Some(Collective::ReduceScatter)
        );
        assert_eq!(
            Collective::of_family("alltoallw"),
            Some(Collective::Alltoallv)
        );
        assert_eq!(Collective::of_family("neighbor_alltoall"), None);
        assert_eq!(Collective::of_family("send"), None);
        assert_eq!(
            Collective::of_ti_action("reducescatter"),
            Some(Collective::ReduceScatter)
        );
        assert_eq!(Collective::of_ti_action("reduce_scatter"), None);
        assert_eq!(Collective::of_ti_action("Bcast"), None);
        assert_eq!(Collective::of_ti_action("bcast"), Some(Collective::Bcast));
        assert_eq!(
            Collective::from_name("reducescatter"),
            Some(Collective::ReduceScatter)
        );
        assert_eq!(Collective::from_name("BCAST"), Some(Collective::Bcast));
        let e = "frob".parse::<Collective>().unwrap_err();
        assert!(
            e.contains("unknown collective `frob`") && e.contains("exscan"),
            "{e}"
        );
    }

    #[test]
    fn every_collective_family_of_mpi_but_the_neighborhood_ones_is_replayed() {
        for f in [
            "barrier",
            "bcast",
            "reduce",
            "allreduce",
            "gather",
            "gatherv",
            "scatter",
            "scatterv",
            "allgather",
            "allgatherv",
            "alltoall",
            "alltoallv",
            "alltoallw",
            "reduce_scatter",
            "reduce_scatter_block",
            "scan",
            "exscan",
        ] {
            assert!(Collective::of_family(f).is_some(), "{f}");
        }
    }

    #[test]
    fn forced_algorithms_accept_aliases_and_cases() {
        assert_eq!(
            parse_forced("bcast=binomial"),
            Ok((Collective::Bcast, "binomial_tree"))
        );
        assert_eq!(
            parse_forced("bcast=BINOMIAL_TREE"),
            Ok((Collective::Bcast, "binomial_tree"))
        );
        assert_eq!(
            parse_forced("reducescatter=default"),
            parse_forced("reduce_scatter=default")
        );
        assert_eq!(parse_forced("bcast").unwrap_err(), "expected COLL=NAME");
        let e = parse_forced("bcast=nonesuch").unwrap_err();
        assert!(
            e.starts_with("no bcast algorithm `nonesuch` (known: binomial_tree, "),
            "{e}"
        );
        assert!(parse_forced("frob=x")
            .unwrap_err()
            .starts_with("unknown collective `frob`"));
        // Every alias leads to an algorithm that exists.
        for kind in Collective::ALL {
            for (alias, canonical) in aliases(kind) {
                assert!(algorithms(kind).contains(canonical), "{kind}: {alias}");
                assert_eq!(resolve_algorithm(kind, alias), Some(*canonical));
            }
        }
    }

    #[test]
    fn selectors_by_name() {
        for s in Selector::ALL {
            assert_eq!(s.name().parse::<Selector>(), Ok(s));
        }
        assert_eq!("openmpi".parse::<Selector>(), Ok(Selector::Ompi));
        assert!("frob".parse::<Selector>().is_err());
    }
}
