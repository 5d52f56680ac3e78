//! Communicators as OTF2 defines them: one global id per communicator, shared by its
//! members. Each rank's trace numbers its communicators itself; the trace's `key` (the
//! same on every member) unifies them. `MPI_COMM_WORLD` is id 0 whatever rank is read
//! first; other communicators are numbered in order of first use.
//!
//! An OTF2 communicator names a group of kind `COMM_GROUP` whose members are positions in
//! the `COMM_LOCATIONS` group (the ranks' main threads, in rank order), and events give
//! peers and roots as ranks within the communicator: [`Comms::local_rank`] translates the
//! trace's world ranks. An intercommunicator is an OTF2 `InterComm` of its two groups,
//! ordered as every member orders them (the smaller member list first), so that both sides
//! write one definition; its events' peers and roots are ranks of the remote group, as in
//! MPI.

use std::collections::HashMap;

use mpiscope_trace::{CommDef, CommKind};

/// A communicator of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Comm {
    /// Its kind in the trace.
    pub(super) kind: CommKind,
    /// World rank of each communicator rank (`None` for `MPI_COMM_WORLD`: every rank); for
    /// an intercommunicator, its first group.
    pub(super) ranks: Option<Vec<u32>>,
    /// An intercommunicator's second group (world ranks).
    pub(super) remote: Option<Vec<u32>>,
}

/// Every communicator the events referred to, by global id.
#[derive(Debug, Default)]
pub(super) struct Comms {
    by_key: HashMap<u64, u32>,
    /// Index: global id (0 is `MPI_COMM_WORLD`).
    pub(super) list: Vec<Comm>,
}

impl Comms {
    /// A registry holding `MPI_COMM_WORLD` as id 0.
    pub(super) fn new() -> Comms {
        Comms {
            by_key: HashMap::new(),
            list: vec![Comm {
                kind: CommKind::World,
                ranks: None,
                remote: None,
            }],
        }
    }

    /// The global id of the communicator `def` (registered on first sight).
    pub(super) fn global(&mut self, def: &CommDef) -> u32 {
        if def.kind == CommKind::World {
            return 0;
        }
        if let Some(&id) = self.by_key.get(&def.key) {
            return id;
        }
        let id = self.list.len() as u32;
        self.by_key.insert(def.key, id);
        let comm = if def.kind == CommKind::Inter {
            // Both sides see the same two groups, each its own first.
            let (a, b) = if def.ranks <= def.remote {
                (&def.ranks, &def.remote)
            } else {
                (&def.remote, &def.ranks)
            };
            Comm {
                kind: def.kind,
                ranks: Some(a.clone()),
                remote: Some(b.clone()),
            }
        } else {
            Comm {
                kind: def.kind,
                ranks: Some(def.ranks.clone()),
                remote: None,
            }
        };
        self.list.push(comm);
        id
    }

    /// The global id of the communicator with trace key `key`, when registered (never
    /// `MPI_COMM_WORLD`, which is registered by kind).
    pub(super) fn by_key(&self, key: u64) -> Option<u32> {
        self.by_key.get(&key).copied()
    }

    /// The rank of world rank `world` in the communicator `id`, when a member (in an
    /// intercommunicator, its rank in its group: the two groups are disjoint, and a peer
    /// is always in the remote group).
    pub(super) fn local_rank(&self, id: u32, world: u32) -> Option<u32> {
        let c = self.list.get(id as usize)?;
        let find = |list: &Vec<u32>| list.iter().position(|&r| r == world).map(|p| p as u32);
        match &c.ranks {
            None => Some(world),
            Some(ranks) => find(ranks).or_else(|| c.remote.as_ref().and_then(find)),
        }
    }

    /// The name of communicator `id`.
    pub(super) fn name(&self, id: u32) -> String {
        match self.list.get(id as usize).map(|c| c.kind) {
            Some(CommKind::World) => "MPI_COMM_WORLD".to_owned(),
            Some(CommKind::Own) => "MPI_COMM_SELF".to_owned(),
            Some(CommKind::Inter) => format!("intercommunicator {id}"),
            _ => format!("communicator {id}"),
        }
    }

    /// The members of communicator `id` (of an intercommunicator: its first group) as
    /// positions in the rank order `ranks` (world ranks of the rank files); members
    /// without a rank file are left out.
    pub(super) fn members(&self, id: u32, ranks: &[u32]) -> Vec<u64> {
        match &self.list[id as usize].ranks {
            None => (0..ranks.len() as u64).collect(),
            Some(m) => positions(m, ranks),
        }
    }

    /// The second group of intercommunicator `id`, as [`Comms::members`] gives the first.
    pub(super) fn remote_members(&self, id: u32, ranks: &[u32]) -> Option<Vec<u64>> {
        let remote = self.list.get(id as usize)?.remote.as_ref()?;
        Some(positions(remote, ranks))
    }
}

/// The positions in `ranks` of the world ranks `members` (those without one left out).
fn positions(members: &[u32], ranks: &[u32]) -> Vec<u64> {
    let pos = |w: u32| ranks.iter().position(|&r| r == w).map(|p| p as u64);
    members.iter().filter_map(|&w| pos(w)).collect()
}

/// One rank's view: its communicator ids mapped to global ids.
#[derive(Debug, Default)]
pub(super) struct RankComms {
    ids: HashMap<u32, u32>,
}

impl RankComms {
    /// The global id of this rank's communicator `local` (defined in `defs`), registered
    /// in `comms` on first use; `None` when the trace does not define it.
    pub(super) fn global(
        &mut self,
        local: u32,
        defs: &HashMap<u32, CommDef>,
        comms: &mut Comms,
    ) -> Option<u32> {
        if let Some(&g) = self.ids.get(&local) {
            return Some(g);
        }
        let g = comms.global(defs.get(&local)?);
        self.ids.insert(local, g);
        Some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(id: u32, key: u64, kind: CommKind, ranks: &[u32]) -> CommDef {
        CommDef {
            id,
            key,
            kind,
            size: ranks.len() as u32,
            ranks: ranks.to_vec(),
            remote: Vec::new(),
        }
    }

    /// Both sides of an intercommunicator define the same two groups, in one order; a
    /// world rank translates into its rank in its own group.
    #[test]
    fn intercommunicators_have_both_groups() {
        let side = |id, ranks: &[u32], remote: &[u32]| CommDef {
            remote: remote.to_vec(),
            ..def(id, 9, CommKind::Inter, ranks)
        };
        let mut comms = Comms::new();
        let a = comms.global(&side(4, &[1, 3], &[0, 2]));
        let b = comms.global(&side(7, &[0, 2], &[1, 3]));
        assert_eq!(a, b);
        let all = [0, 1, 2, 3];
        assert_eq!(comms.members(a, &all), vec![0, 2]);
        assert_eq!(comms.remote_members(a, &all), Some(vec![1, 3]));
        assert_eq!(comms.local_rank(a, 3), Some(1));
        assert_eq!(comms.local_rank(a, 2), Some(1));
        assert_eq!(comms.local_rank(a, 0), Some(0));
        assert_eq!(comms.name(a), "intercommunicator 1");
    }

    /// Members agree on the global id through the key, whatever their local ids; world is
    /// 0; ranks translate into the communicator's.
    #[test]
    fn keys_unify_local_ids() {
        let mut comms = Comms::new();
        let a = def(5, 77, CommKind::Intra, &[1, 3]);
        let b = def(2, 77, CommKind::Intra, &[1, 3]);
        let c = def(2, 78, CommKind::Intra, &[0, 2]);
        assert_eq!(comms.global(&def(0, 1, CommKind::World, &[])), 0);
        assert_eq!(comms.global(&a), 1);
        assert_eq!(comms.global(&c), 2);
        assert_eq!(comms.global(&b), 1);
        assert_eq!(comms.local_rank(1, 3), Some(1));
        assert_eq!(comms.local_rank(1, 0), None);
        assert_eq!(comms.local_rank(0, 3), Some(3));
        assert_eq!(comms.members(1, &[0, 1, 2, 3]), vec![1, 3]);
        assert_eq!(comms.name(0), "MPI_COMM_WORLD");
    }
}
