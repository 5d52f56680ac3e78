//! The algorithm tables: names unique, aliases leading into their own table, the selectors
//! choosing only listed algorithms, and every algorithm of every collective building a
//! well-formed program (peers in the communicator, waits on posted requests) on small
//! communicators, every rank, empty to large counts, without an error or a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::names::table;
use super::*;

const COUNTS: [u64; 4] = [0, 1, 1000, 100_000];

/// The arguments of one call as rank `rank` sees it: `count` elements of 8 bytes per block,
/// the per-rank vectors uniform or (`uneven`) `count × (r mod 3)`.
fn call(kind: Collective, size: u32, rank: u32, root: u32, count: u64, uneven: bool) -> CollArgs {
    let counts: Vec<u64> = (0..size)
        .map(|r| {
            if uneven {
                count * u64::from(r % 3)
            } else {
                count
            }
        })
        .collect();
    let mine = counts[rank as usize];
    let (mut send_counts, mut recv_counts) = (Vec::new(), Vec::new());
    let (mut own, mut recv_count) = (count, count);
    match kind {
        Collective::Alltoallv => {
            send_counts = counts.clone();
            recv_counts = counts;
        }
        Collective::Allgatherv | Collective::ReduceScatter => {
            recv_counts = counts;
            own = mine;
        }
        Collective::Gatherv => {
            recv_counts = counts;
            own = mine;
        }
        Collective::Scatterv => {
            send_counts = counts;
            recv_count = mine;
        }
        _ => {}
    }
    CollArgs {
        kind,
        size,
        rank,
        root,
        count: own,
        recv_count,
        dtype_size: 8,
        recv_dtype_size: 8,
        send_counts,
        recv_counts,
    }
}

/// Runs a program to its end: every peer below `size`, every wait on a request posted
/// before. The number of operations, or what is wrong.
fn drain(mut prog: Box<dyn Program>, size: u32) -> Result<usize, String> {
    let (mut n, mut posted) = (0usize, 0u32);
    while let Some(op) = prog.next_op() {
        n += 1;
        match op {
            POp::Send { peer, .. } | POp::Recv { peer, .. } if peer >= size => {
                return Err(format!("operation {n}: peer {peer} of {size} ranks"));
            }
            POp::Isend { peer, .. } | POp::Irecv { peer, .. } => {
                if peer >= size {
                    return Err(format!("operation {n}: peer {peer} of {size} ranks"));
                }
                posted += 1;
            }
            POp::Wait(r) if r >= posted => {
                return Err(format!("operation {n}: waits request {r} of {posted}"));
            }
            _ => {}
        }
    }
    Ok(n)
}

#[test]
fn every_table_has_unique_names_and_aliases_lead_into_it() {
    for kind in Collective::ALL {
        let names: Vec<&str> = table(kind).iter().map(|a| a.name).collect();
        assert!(!names.is_empty(), "{kind}: no algorithm");
        assert_eq!(algorithms(kind), &names[..], "{kind}: names in table order");
        for (i, name) in names.iter().enumerate() {
            assert!(!name.is_empty(), "{kind}: empty name");
            assert!(
                !names[..i].iter().any(|n| n.eq_ignore_ascii_case(name)),
                "{kind}: `{name}` listed twice"
            );
            assert_eq!(resolve_algorithm(kind, name), Some(*name));
        }
        for (alias, canonical) in names::aliases(kind) {
            assert!(
                names.contains(canonical),
                "{kind}: alias `{alias}` leads to `{canonical}`, not in the table"
            );
            assert!(
                !names.iter().any(|n| n.eq_ignore_ascii_case(alias)),
                "{kind}: alias `{alias}` hides an algorithm of that name"
            );
            assert_eq!(resolve_algorithm(kind, alias), Some(*canonical));
        }
    }
}

#[test]
fn selectors_choose_listed_algorithms() {
    for kind in Collective::ALL {
        for selector in Selector::ALL {
            for size in [2, 3, 4, 7, 8, 9, 16, 64, 100, 1024] {
                for count in [0, 1, 100, 10_000, 1_000_000] {
                    let a = call(kind, size, 0, 0, count, false);
                    let name = algorithm_name(&a, selector, None).unwrap();
                    assert!(
                        algorithms(kind).contains(&name),
                        "{kind} {selector:?} p={size} count={count}: `{name}` is not listed"
                    );
                }
            }
        }
    }
}

/// What is wrong with forcing `name` on this call, if anything (a panic included).
fn check(a: &CollArgs, selector: Selector, name: &str) -> Option<String> {
    let built = catch_unwind(AssertUnwindSafe(|| {
        let prog = program(a, selector, Some(name)).map_err(|e| e.to_string())?;
        drain(prog, a.size)
    }));
    match built {
        Ok(Ok(ops)) if a.size == 1 && ops != 0 => Some(format!("{ops} operations on one rank")),
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e),
        Err(_) => Some("panicked".to_string()),
    }
}

#[test]
fn every_algorithm_builds_for_every_rank_and_count() {
    let mut failures = Vec::new();
    for kind in Collective::ALL {
        for algorithm in table(kind) {
            for size in 1..=9u32 {
                let cases = (0..size).flat_map(|rank| {
                    [0, size - 1].into_iter().flat_map(move |root| {
                        COUNTS.into_iter().flat_map(move |count| {
                            [false, true].map(|uneven| (rank, root, count, uneven))
                        })
                    })
                });
                for (rank, root, count, uneven) in cases {
                    let a = call(kind, size, rank, root, count, uneven);
                    for selector in Selector::ALL {
                        if let Some(why) = check(&a, selector, algorithm.name) {
                            failures.push(format!(
                                "{kind} {} {selector:?} p={size} rank={rank} root={root} \
                                 count={count} uneven={uneven}: {why}",
                                algorithm.name
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

#[test]
fn the_forced_algorithm_is_the_one_built() {
    for kind in Collective::ALL {
        for algorithm in table(kind) {
            let a = call(kind, 5, 1, 0, 1000, false);
            let used = algorithms_used(&a, Selector::Ompi, Some(algorithm.name)).unwrap();
            assert_eq!(used.first(), Some(&algorithm.name), "{kind}");
        }
        let e = program(
            &call(kind, 5, 1, 0, 1000, false),
            Selector::Ompi,
            Some("no_such_algorithm"),
        )
        .err()
        .unwrap();
        assert!(
            matches!(&e, CollError::UnknownAlgorithm { name, .. } if name == "no_such_algorithm"),
            "{kind}: {e}"
        );
    }
}
