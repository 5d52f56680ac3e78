//! `comms.c`: communicators created, split, duplicated, freed; their definitions and ids.

use super::*;

/// Communicator ids one rank recorded for the communicators of comms.c.
#[derive(Default, Debug)]
struct CommIds {
    half: i64,
    dup: i64,
    rev: Option<i64>,
    inter: i64,
    merged: i64,
    cart: i64,
}

fn expect_comms(t: &Traced) -> (Outcome, Vec<CommIds>) {
    let n = i64::from(t.np);
    let m = n / 2;
    let mut out = Outcome::default();
    let mut all_ids = Vec::new();
    for r in 0..n {
        let (c, h) = (r % 2, r / 2);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        let mut s = Seq::new(t, r as u32, 0);
        let sum = s.op("MPI_SUM");
        let mut ids = CommIds::default();
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("1 split");
        let half = s.new_comm("MPI_Comm_split", a().comm(WORLD));
        ids.half = half;
        s.ev("MPI_Comm_rank", a().comm(half));
        s.ev("MPI_Comm_size", a().comm(half));
        // Half rank x is world rank 2x + c.
        let (hnext, hprev) = (2 * ((h + 1) % m) + c, 2 * ((h - 1 + m) % m) + c);
        let recv = |s: &mut Seq| {
            s.ev(
                "MPI_Recv",
                a().p2p(hprev, 5, half).buf(3, 4).st(hprev, 5, 12),
            );
        };
        let send = |s: &mut Seq| {
            s.ev("MPI_Send", a().p2p(hnext, 5, half).buf(3, 4));
        };
        if h != 0 {
            recv(&mut s);
            send(&mut s);
        } else {
            send(&mut s);
            recv(&mut s);
        }
        s.ev("MPI_Bcast", a().comm(half).buf(4, 4).root(2 + c));
        s.ev("MPI_Reduce", a().comm(half).buf(1, 4).root(c).op(sum));
        s.ev("MPI_Allreduce", a().comm(half).buf(1, 4).op(sum));

        s.phase("2 dup");
        let dup = s.new_comm("MPI_Comm_dup", a().comm(WORLD));
        ids.dup = dup;
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 7, dup)
                .buf(2, 4)
                .from(prev, 7)
                .rbuf(2, 4)
                .st(prev, 7, 8),
        );
        s.ev("MPI_Allreduce", a().comm(dup).buf(1, 4).op(sum));
        s.ev("MPI_Comm_free", a().comm(dup));

        s.phase("3 create");
        s.ev("MPI_Comm_group", a().comm(WORLD));
        s.ev("MPI_Group_incl", a());
        if r == 0 {
            // Not a member: MPI_COMM_NULL, no new communicator.
            s.ev("MPI_Comm_create", a().comm(WORLD));
        } else {
            let rev = s.new_comm("MPI_Comm_create", a().comm(WORLD));
            ids.rev = Some(rev);
            // Rev rank v is world rank n-1-v.
            let (v, k) = (n - 1 - r, n - 1);
            let (to, from) = (n - 1 - (v + 1) % k, n - 1 - (v - 1 + k) % k);
            s.ev("MPI_Comm_rank", a().comm(rev));
            s.ev(
                "MPI_Sendrecv",
                a().p2p(to, 8, rev)
                    .buf(1, 4)
                    .from(from, 8)
                    .rbuf(1, 4)
                    .st(from, 8, 4),
            );
            s.ev("MPI_Bcast", a().comm(rev).buf(2, 4).root(n - 1));
            let g = a().comm(rev).buf(1, 4).root(n - 3);
            s.ev("MPI_Gather", if v == 2 { g.rbuf(1, 4) } else { g });
            s.ev("MPI_Comm_free", a().comm(rev));
        }
        s.ev("MPI_Group_free", a());
        s.ev("MPI_Group_free", a());

        s.phase("4 intercomm");
        let inter = s.new_comm("MPI_Intercomm_create", a().comm(half).s(Slot::Tag, 77));
        ids.inter = inter;
        s.ev("MPI_Comm_remote_size", a().comm(inter));
        // Remote rank x is world rank 2x + 1 - c.
        let partner = 2 * h + 1 - c;
        if c == 0 {
            s.ev("MPI_Send", a().p2p(partner, 9, inter).buf(4, 4));
            s.ev(
                "MPI_Recv",
                a().p2p(partner, 10, inter).buf(4, 4).st(partner, 10, 16),
            );
        } else {
            s.ev(
                "MPI_Recv",
                a().p2p(partner, 9, inter).buf(4, 4).st(partner, 9, 16),
            );
            s.ev("MPI_Send", a().p2p(partner, 10, inter).buf(4, 4));
        }
        let root = if c == 1 {
            0
        } else if h == 0 {
            PEER_ROOT
        } else {
            PEER_NULL
        };
        s.ev("MPI_Bcast", a().comm(inter).buf(3, 4).root(root));
        // Regression: MPI_Intercomm_merge recorded no `comm` (its communicator parameter is
        // called `intercomm`).
        let merged = s.new_comm("MPI_Intercomm_merge", a().comm(inter));
        ids.merged = merged;
        s.ev("MPI_Comm_rank", a().comm(merged));
        s.ev("MPI_Comm_size", a().comm(merged));
        // Merged rank x is world 2x for x < m (the low group, evens), 2(x-m)+1 after.
        let q = c * m + h;
        let mw = |x: i64| if x < m { 2 * x } else { 2 * (x - m) + 1 };
        let (to, from) = (mw((q + 1) % n), mw((q - 1 + n) % n));
        s.ev(
            "MPI_Sendrecv",
            a().p2p(to, 11, merged)
                .buf(1, 4)
                .from(from, 11)
                .rbuf(1, 4)
                .st(from, 11, 4),
        );
        s.ev("MPI_Allreduce", a().comm(merged).buf(1, 4).op(sum));
        s.ev("MPI_Comm_free", a().comm(merged));
        s.ev("MPI_Comm_free", a().comm(inter));

        s.phase("5 cart");
        let cart = s.new_comm("MPI_Cart_create", a().comm(WORLD));
        ids.cart = cart;
        s.ev("MPI_Cart_shift", a().comm(cart));
        let dst = if r == n - 1 { PEER_NULL } else { r + 1 };
        let src = if r == 0 { PEER_NULL } else { r - 1 };
        // A receive from MPI_PROC_NULL completes with source PROC_NULL, tag ANY_TAG, 0 bytes.
        let st = if r == 0 {
            (PEER_NULL, TAG_ANY, 0)
        } else {
            (r - 1, 12, 8)
        };
        s.ev(
            "MPI_Sendrecv",
            a().p2p(dst, 12, cart)
                .buf(2, 4)
                .from(src, 12)
                .rbuf(2, 4)
                .st(st.0, st.1, st.2),
        );
        s.ev("MPI_Comm_free", a().comm(cart));

        s.phase("6 free");
        s.ev("MPI_Comm_free", a().comm(half));
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
        all_ids.push(ids);
    }
    (out, all_ids)
}

/// The communicator tables of comms.c: members as world ranks, kinds, sizes, and keys
/// equal on all members (and different for different communicators).
fn check_comm_tables(t: &Traced, ids: &[CommIds], fails: &mut Vec<String>) {
    let n = t.np;
    let m = n / 2;
    let ctx = format!("{} comms np{n}", t.mpi.name());
    let def = |r: usize, id: i64| {
        u32::try_from(id)
            .ok()
            .and_then(|i| t.ranks[r].tables.comms.get(&i))
            .cloned()
    };
    let mut keys: BTreeMap<&str, BTreeMap<u32, u64>> = BTreeMap::new();
    let mut id_fails = Vec::new();
    let mut expect = |r: usize,
                      what: &'static str,
                      id: Option<i64>,
                      kind: CommKind,
                      ranks: Vec<u32>,
                      remote: Vec<u32>| {
        let Some(id) = id else { return };
        let Some(d) = def(r, id) else {
            fails.push(format!(
                "{ctx} rank {r}: {what} communicator {id} is not defined"
            ));
            return;
        };
        let want = (kind, ranks.len() as u32, ranks.clone(), remote.clone());
        let got = (d.kind, d.size, d.ranks.clone(), d.remote.clone());
        if got != want {
            fails.push(format!("{ctx} rank {r}: {what} communicator {id} is {got:?}, expected (kind, size, ranks, remote) {want:?}"));
        }
        // Keys: one per communicator and colour (the halves are two communicators).
        let group = match what {
            "half" if r % 2 == 1 => "half odd",
            "half" => "half even",
            w => w,
        };
        keys.entry(group).or_default().insert(r as u32, d.key);
    };
    for (r, i) in ids.iter().enumerate() {
        let c = (r % 2) as u32;
        let mine: Vec<u32> = (0..m).map(|x| 2 * x + c).collect();
        let other: Vec<u32> = (0..m).map(|x| 2 * x + 1 - c).collect();
        let world: Vec<u32> = (0..n).collect();
        expect(
            r,
            "half",
            Some(i.half),
            CommKind::Intra,
            mine.clone(),
            vec![],
        );
        expect(
            r,
            "dup",
            Some(i.dup),
            CommKind::Intra,
            world.clone(),
            vec![],
        );
        expect(
            r,
            "rev",
            i.rev,
            CommKind::Intra,
            (1..n).rev().collect(),
            vec![],
        );
        expect(r, "inter", Some(i.inter), CommKind::Inter, mine, other);
        let merged: Vec<u32> = (0..m)
            .map(|x| 2 * x)
            .chain((0..m).map(|x| 2 * x + 1))
            .collect();
        expect(r, "merged", Some(i.merged), CommKind::Intra, merged, vec![]);
        expect(r, "cart", Some(i.cart), CommKind::Intra, world, vec![]);
        let all = [
            i.half,
            i.dup,
            i.rev.unwrap_or(-1),
            i.inter,
            i.merged,
            i.cart,
        ];
        let distinct: BTreeSet<i64> = all.iter().copied().filter(|&x| x >= 0).collect();
        let live = all.iter().filter(|&&x| x >= 0).count();
        if distinct.len() != live || distinct.contains(&0) || distinct.contains(&1) {
            id_fails.push(format!("{ctx} rank {r}: communicator ids not distinct from each other and from world/self: {i:?}"));
        }
    }
    fails.extend(id_fails);
    let expected_members: BTreeMap<&str, usize> = [
        ("half even", m),
        ("half odd", m),
        ("dup", n),
        ("rev", n - 1),
        ("inter", n),
        ("merged", n),
        ("cart", n),
    ]
    .into_iter()
    .map(|(k, v)| (k, v as usize))
    .collect();
    let mut firsts = BTreeMap::new();
    for (group, by_rank) in &keys {
        let distinct: BTreeSet<u64> = by_rank.values().copied().collect();
        if distinct.len() != 1 || by_rank.len() != expected_members[group] {
            fails.push(format!("{ctx}: {group} communicator keys differ between members or members missing: {by_rank:x?}"));
        }
        if let Some(&k) = distinct.iter().next() {
            if let Some(other) = firsts.insert(k, *group) {
                fails.push(format!(
                    "{ctx}: {group} and {other} communicators share the key {k:#x}"
                ));
            }
        }
    }
}

fn check_comms(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "comms", np);
    let (mut out, ids) = expect_comms(&t);
    generic_checks(&t, &mut out.fails);
    check_comm_tables(&t, &ids, &mut out.fails);
    check_report(&t, &out.counts, &mut out.fails);
    finish(t, out.fails);
}

/// Regression test for the communicator of `MPI_Intercomm_merge` (see `expect_comms`).
#[test]
fn openmpi_comms_4_ranks() {
    let _g = common::mpi_lock();
    check_comms(Mpi::OpenMpi, 4);
}

/// Regression test for the communicator of `MPI_Intercomm_merge` (see `expect_comms`).
#[test]
fn mpich_comms_4_ranks() {
    let _g = common::mpi_lock();
    check_comms(Mpi::Mpich, 4);
}
