//! Fat trees, as SimGrid's `<cluster topology="FAT_TREE">` (`FatTreeZone`).
//!
//! Parameters (`topo_parameters="h;d1,…,dh;u1,…,uh;p1,…,ph"`): `h` levels of switches;
//! `dℓ` children per level-ℓ switch; `uℓ` parents per level-(ℓ−1) node; `pℓ` parallel
//! cables between a level-ℓ switch and each of its children. There are `Π dℓ` hosts and
//! `Π_{j≤ℓ} uj · Π_{j>ℓ} dj` switches at level ℓ; a "pruned" tree has fewer top switches
//! than a full one (e.g. `2;4,4;1,2;1,1` instead of `2;4,4;1,4;1,1`).
//!
//! Every node gets a label (mixed-radix digits, digit `t` ranging over `d_{t+1}` above the
//! node's level and over `u_{t+1}` at or below it) and a position (its index in its level);
//! a parent and a child are connected iff their labels differ only in the digit of the
//! child's level. Cables get SimGrid's names, `link_from_<child id>_<parent id>_<n>` (with
//! `_UP`/`_DOWN` when split-duplex; host ids are `0..N`, switch ids count down from `2N−1`;
//! `n` numbers the cables of all fat trees of a platform).
//!
//! Routing is SimGrid's D-mod-K: going up from a node at level ℓ (while the destination is
//! not below it), the up port is `(dst_position / (u1·…·uℓ)) mod (u_{ℓ+1}·p_{ℓ+1})`; going
//! down, a switch takes the first child port, scanning from `(src_position mod pℓ)·dℓ`, whose
//! index mod `dℓ` is the destination's label digit — with SimGrid's quirk that after
//! descending, the scan goes on at the next port index in the lower switch. Limiters (if
//! any) are added per node as SimGrid does. A host sending to itself uses its loopback if
//! the cluster has one, else goes up to its first switch and back down.

use super::cluster::ClusterSpec;
use crate::platform::{
    check_host_id, HostId, LinkId, Parts, Platform, PlatformError, Routing, Sharing,
};

/// A fat tree: a cluster description plus the tree shape.
#[derive(Debug, Clone, PartialEq)]
pub struct FatTreeSpec {
    /// Hosts, cables (bandwidth, latency, policy), loopback and limiter.
    pub cluster: ClusterSpec,
    /// Children per switch, per level (bottom first).
    pub down: Vec<u32>,
    /// Parents per node, per level (bottom first).
    pub up: Vec<u32>,
    /// Parallel cables between a switch and each child, per level (bottom first).
    pub parallel: Vec<u32>,
}

impl FatTreeSpec {
    /// A fat tree from SimGrid's notation `"h;d1,…,dh;u1,…,uh;p1,…,ph"`.
    pub fn new(cluster: ClusterSpec, topology: &str) -> Result<FatTreeSpec, PlatformError> {
        let (down, up, parallel) = parse_topology(topology).map_err(PlatformError::Invalid)?;
        Ok(FatTreeSpec {
            cluster,
            down,
            up,
            parallel,
        })
    }

    /// Number of levels of switches.
    pub fn levels(&self) -> usize {
        self.down.len()
    }

    /// Number of hosts (`Π dℓ`).
    pub fn hosts(&self) -> u64 {
        self.down.iter().map(|&d| d as u64).product()
    }

    /// Number of switches at level `level` (1-based).
    pub fn switches_at(&self, level: usize) -> u64 {
        let ups: u64 = self.up[..level].iter().map(|&u| u as u64).product();
        let downs: u64 = self.down[level..].iter().map(|&d| d as u64).product();
        ups * downs
    }
}

/// A fat tree shape: `(down, up, parallel)` vectors.
pub type Shape = (Vec<u32>, Vec<u32>, Vec<u32>);

/// Parses `"h;d1,…,dh;u1,…,uh;p1,…,ph"` into `(down, up, parallel)`.
pub fn parse_topology(s: &str) -> Result<Shape, String> {
    let parts: Vec<&str> = s.split(';').collect();
    if parts.len() != 4 {
        return Err(format!(
            "fat tree parameters `{s}` are not `levels;down,…;up,…;parallel,…`"
        ));
    }
    let levels: usize = parts[0]
        .trim()
        .parse()
        .map_err(|_| format!("fat tree: `{}` is not a number of levels", parts[0]))?;
    if levels == 0 || levels > 16 {
        return Err(format!("fat tree: {levels} levels (must be 1 to 16)"));
    }
    let vector = |what: &str, t: &str| -> Result<Vec<u32>, String> {
        let v: Vec<u32> = t
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("fat tree: invalid {what} count `{x}` in `{s}`"))
            })
            .collect::<Result<_, _>>()?;
        if v.len() != levels {
            return Err(format!(
                "fat tree: {levels} levels but the {what} vector has {} values in `{s}`",
                v.len()
            ));
        }
        Ok(v)
    };
    Ok((
        vector("child", parts[1])?,
        vector("parent", parts[2])?,
        vector("port", parts[3])?,
    ))
}

/// A cable of the tree.
#[derive(Debug, Clone, Copy)]
struct TreeLink {
    /// The upper node (parent).
    upper: u32,
    /// The lower node (child).
    lower: u32,
    /// Link used going up.
    up: LinkId,
    /// Link used going down.
    down: LinkId,
}

/// Routing state of a fat tree. Nodes are numbered as SimGrid orders them: hosts
/// `0..N`, then switches level by level, by position. The ports of the nodes of a level
/// are laid out node after node (parent ports, then child ports), so that a node's ports
/// are found by arithmetic and a hop costs one memory access.
#[derive(Debug)]
pub(crate) struct FatTreeRouting {
    levels: usize,
    down: Vec<u32>,
    up: Vec<u32>,
    parallel: Vec<u32>,
    /// Product of `up[..l]`, for `l` in `0..=levels`.
    up_prefix: Vec<u64>,
    /// Product of `down[..l]`, for `l` in `0..=levels`.
    down_prefix: Vec<u64>,
    /// Index of the first node of each level.
    level_start: Vec<u32>,
    /// Index in `ports` of the first port of each level.
    port_base: Vec<u64>,
    /// Number of parent ports of a node of each level.
    parent_ports: Vec<u64>,
    /// Number of ports (parent + child) of a node of each level.
    port_stride: Vec<u64>,
    /// The cable behind each port.
    ports: Vec<TreeLink>,
    /// Limiter per node (empty when the tree has none).
    limiters: Vec<LinkId>,
    /// Loopback per host (empty when the tree has none).
    loopbacks: Vec<LinkId>,
    hosts: usize,
}

impl FatTreeRouting {
    /// Whether host `dst` is below `node` (at level `level`).
    #[inline]
    fn in_subtree(&self, node: u32, level: usize, dst: u64) -> bool {
        if level == 0 {
            return false;
        }
        let pos = (node - self.level_start[level]) as u64;
        // Equal label digits from `level` up: the high parts of the mixed-radix positions.
        pos / self.up_prefix[level] == dst / self.down_prefix[level]
    }

    /// First port of `node` (at level `level`); child ports follow the parent ports.
    #[inline]
    fn first_port(&self, node: u32, level: usize) -> u64 {
        self.port_base[level] + (node - self.level_start[level]) as u64 * self.port_stride[level]
    }

    /// Appends the route between hosts `src` and `dst` (`< hosts`).
    pub(crate) fn local_route(
        &self,
        src: u32,
        dst: u32,
        out: &mut Vec<LinkId>,
    ) -> Result<(), PlatformError> {
        if src == dst && !self.loopbacks.is_empty() {
            out.push(self.loopbacks[src as usize]);
            return Ok(());
        }
        let has_limiters = !self.limiters.is_empty();
        let dst_pos = dst as u64;
        let mut cur = src;
        let mut level = 0;
        // Up.
        while !self.in_subtree(cur, level, dst_pos) {
            if level >= self.levels {
                return Err(PlatformError::Invalid(
                    "fat tree: no switch above both hosts".into(),
                ));
            }
            let k = self.up[level] as u64 * self.parallel[level] as u64;
            let port = (dst_pos / self.up_prefix[level]) % k;
            if has_limiters {
                out.push(self.limiters[cur as usize]);
            }
            let tl = self.ports[(self.first_port(cur, level) + port) as usize];
            out.push(tl.up);
            cur = tl.upper;
            level += 1;
        }
        // Down. SimGrid scans the child ports of the switch from (src_position mod p)·d and
        // takes each port whose index mod d is the destination's label digit; after going
        // down it keeps scanning, from the next index, in the lower switch (with that
        // switch's d and digit), and starts a new scan when the index runs past its ports.
        while cur != dst {
            let before = cur;
            let mut i =
                (src as u64 % self.parallel[level - 1] as u64) * self.down[level - 1] as u64;
            while level > 0 {
                let d = self.down[level - 1] as u64;
                let n_children = d * self.parallel[level - 1] as u64;
                let digit = (dst_pos / self.down_prefix[level - 1]) % d;
                let j = i + (digit + d - i % d) % d;
                if j >= n_children {
                    break;
                }
                let port = self.first_port(cur, level) + self.parent_ports[level] + j;
                let tl = self.ports[port as usize];
                out.push(tl.down);
                if has_limiters {
                    out.push(self.limiters[cur as usize]);
                }
                cur = tl.lower;
                level -= 1;
                i = j + 1;
            }
            if cur == before || (level == 0 && cur != dst) {
                return Err(PlatformError::Invalid(
                    "fat tree: no down port towards the destination".into(),
                ));
            }
        }
        if has_limiters {
            out.push(self.limiters[dst as usize]);
        }
        Ok(())
    }
}

/// What [`build`] made.
pub(crate) struct BuiltFatTree {
    pub(crate) routing: FatTreeRouting,
    pub(crate) hosts: Vec<HostId>,
}

/// Adds a fat tree's hosts and links to `parts`.
pub(crate) fn build(spec: &FatTreeSpec, parts: &mut Parts) -> Result<BuiltFatTree, PlatformError> {
    let c = &spec.cluster;
    c.check_common("fat tree")?;
    let levels = check_shape(spec)?;
    let (per_level, total_cables) = sizes(spec)?;
    let n_hosts = per_level[0] as usize;
    let radicals = c.radicals_for(n_hosts, "fat tree")?;
    let (hosts, loopbacks, mut limiters) = c.add_hosts(&radicals, parts);
    let mut level_start = Vec::with_capacity(levels + 2);
    let mut acc = 0u32;
    for &n in &per_level {
        level_start.push(acc);
        acc += n as u32;
    }
    level_start.push(acc);
    // Switch limiters: SimGrid ids count down from 2N-1.
    let mut switch_id = 2 * n_hosts as i64;
    let mut ids: Vec<i64> = (0..n_hosts as i64).collect();
    for &n in &per_level[1..] {
        for _ in 0..n {
            switch_id -= 1;
            ids.push(switch_id);
            if let Some(bw) = c.limiter {
                limiters.push(parts.add_link(
                    format!("{}_link_{}_limiter", c.id, switch_id),
                    bw,
                    0.0,
                    Sharing::Shared,
                ));
            }
        }
    }
    let wiring = Wiring {
        spec,
        per_level: &per_level,
        level_start: &level_start,
        ids: &ids,
    };
    let ports = wiring.cables(parts, total_cables)?;
    let (port_base, parent_ports, port_stride) = port_layout(spec, &per_level);
    debug_assert_eq!(
        port_base[levels] + per_level[levels] * port_stride[levels],
        ports.len() as u64
    );
    let prefix = |v: &[u32]| {
        let mut p = Vec::with_capacity(levels + 1);
        let mut acc = 1u64;
        p.push(acc);
        for &x in v {
            acc *= x as u64;
            p.push(acc);
        }
        p
    };
    Ok(BuiltFatTree {
        routing: FatTreeRouting {
            levels,
            down: spec.down.clone(),
            up: spec.up.clone(),
            parallel: spec.parallel.clone(),
            up_prefix: prefix(&spec.up),
            down_prefix: prefix(&spec.down),
            level_start,
            port_base,
            parent_ports,
            port_stride,
            ports,
            limiters,
            loopbacks,
            hosts: n_hosts,
        },
        hosts,
    })
}

/// The number of levels, once the down, up and parallel vectors are checked: one
/// positive value per level each.
fn check_shape(spec: &FatTreeSpec) -> Result<usize, PlatformError> {
    let levels = spec.down.len();
    if levels == 0 || spec.up.len() != levels || spec.parallel.len() != levels {
        return Err(PlatformError::Invalid(format!(
            "fat tree `{}`: the down, up and parallel vectors must have one value per level",
            spec.cluster.id
        )));
    }
    if spec
        .down
        .iter()
        .chain(&spec.up)
        .chain(&spec.parallel)
        .any(|&v| v == 0)
    {
        return Err(PlatformError::Invalid(format!(
            "fat tree `{}`: all counts must be positive",
            spec.cluster.id
        )));
    }
    Ok(levels)
}

/// The nodes of each level (hosts first) and the cables, refused when too many (sizes
/// computed with overflow checks).
fn sizes(spec: &FatTreeSpec) -> Result<(Vec<u64>, u64), PlatformError> {
    const MAX_NODES: u64 = 1 << 24;
    const MAX_LINKS: u64 = 1 << 26;
    let levels = spec.down.len();
    let mut per_level = Vec::with_capacity(levels + 1);
    per_level.push(
        spec.down
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
            .unwrap_or(u64::MAX),
    );
    for l in 1..=levels {
        let ups = spec.up[..l]
            .iter()
            .try_fold(1u64, |a, &u| a.checked_mul(u as u64));
        let downs = spec.down[l..]
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        per_level.push(match (ups, downs) {
            (Some(a), Some(b)) => a.saturating_mul(b),
            _ => u64::MAX,
        });
    }
    let total_nodes = per_level
        .iter()
        .try_fold(0u64, |a, &n| a.checked_add(n))
        .unwrap_or(u64::MAX);
    let mut total_cables = 0u64;
    for (l, &n) in per_level[..levels].iter().enumerate() {
        let c = n
            .saturating_mul(spec.up[l] as u64)
            .saturating_mul(spec.parallel[l] as u64);
        total_cables = total_cables.saturating_add(c);
    }
    if total_nodes > MAX_NODES || total_cables > MAX_LINKS {
        return Err(PlatformError::Invalid(format!(
            "fat tree `{}` is too large ({total_nodes} nodes, {total_cables} cables)",
            spec.cluster.id
        )));
    }
    Ok((per_level, total_cables))
}

/// Per level: where its nodes' ports start, how many parent ports a node has, and how
/// many ports in all (parent ports, then child ports, node after node).
fn port_layout(spec: &FatTreeSpec, per_level: &[u64]) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let levels = spec.down.len();
    let mut port_base = Vec::with_capacity(levels + 1);
    let mut parent_ports = Vec::with_capacity(levels + 1);
    let mut port_stride = Vec::with_capacity(levels + 1);
    let mut acc = 0u64;
    for (l, &n) in per_level.iter().enumerate() {
        let (p, c) = node_ports(spec, l);
        let (p, c) = (u64::from(p), u64::from(c));
        port_base.push(acc);
        parent_ports.push(p);
        port_stride.push(p + c);
        acc += n * (p + c);
    }
    (port_base, parent_ports, port_stride)
}

/// The parent and child ports of a node of level `l`.
fn node_ports(spec: &FatTreeSpec, l: usize) -> (u32, u32) {
    let levels = spec.down.len();
    let parents = if l < levels {
        spec.up[l] * spec.parallel[l]
    } else {
        0
    };
    let children = if l > 0 {
        spec.down[l - 1] * spec.parallel[l - 1]
    } else {
        0
    };
    (parents, children)
}

/// What the cables of a fat tree join: its shape and numbering.
struct Wiring<'a> {
    spec: &'a FatTreeSpec,
    /// Nodes per level (hosts first).
    per_level: &'a [u64],
    /// First node of each level.
    level_start: &'a [u32],
    /// SimGrid's id of each node (hosts, then switches), for link names.
    ids: &'a [i64],
}

impl Wiring<'_> {
    /// Labels: per node, one digit per level, its position in mixed radix (the down
    /// counts below the node's level, the up counts from it).
    fn labels(&self) -> Vec<u32> {
        let spec = self.spec;
        let levels = spec.down.len();
        let nodes = self.level_start[levels + 1] as usize;
        let mut labels = vec![0u32; nodes * levels];
        for (l, &n) in self.per_level.iter().enumerate() {
            let radix: Vec<u32> = (0..levels)
                .map(|t| if t + 1 > l { spec.down[t] } else { spec.up[t] })
                .collect();
            for pos in 0..n {
                let node = self.level_start[l] as usize + pos as usize;
                let mut x = pos;
                for (t, &r) in radix.iter().enumerate() {
                    labels[node * levels + t] = (x % r as u64) as u32;
                    x /= r as u64;
                }
            }
        }
        labels
    }

    /// Stride of each label digit for the nodes of level `l` (position = sum of digit x
    /// stride).
    fn strides(&self, l: usize) -> Vec<u64> {
        let spec = self.spec;
        let levels = spec.down.len();
        let mut s = Vec::with_capacity(levels);
        let mut acc = 1u64;
        for t in 0..levels {
            s.push(acc);
            acc *= if t + 1 > l { spec.down[t] } else { spec.up[t] } as u64;
        }
        s
    }

    /// Adds the cables, in SimGrid's order (for each node, level by level and by
    /// position, for each parent by position, for each parallel cable), and returns the
    /// cable of every port.
    fn cables(&self, parts: &mut Parts, total_cables: u64) -> Result<Vec<TreeLink>, PlatformError> {
        let spec = self.spec;
        let c = &spec.cluster;
        let levels = spec.down.len();
        let labels = self.labels();
        let mut parent_start = Vec::new();
        let mut child_start = Vec::new();
        let mut n_ports = 0u32;
        for (l, &n) in self.per_level.iter().enumerate() {
            let (parents, children) = node_ports(spec, l);
            for _ in 0..n {
                parent_start.push(n_ports);
                n_ports += parents;
                child_start.push(n_ports);
                n_ports += children;
            }
        }
        parent_start.push(n_ports);
        child_start.push(n_ports);
        let mut ports = vec![u32::MAX; n_ports as usize];
        let mut tree_links = Vec::with_capacity(total_cables as usize);
        for l in 0..levels {
            let parent_strides = self.strides(l + 1);
            for pos in 0..self.per_level[l] {
                let child = self.level_start[l] + pos as u32;
                let clabel = &labels[child as usize * levels..(child as usize + 1) * levels];
                // Parent position with digit l set to 0.
                let base: u64 = (0..levels)
                    .filter(|&t| t != l)
                    .map(|t| clabel[t] as u64 * parent_strides[t])
                    .sum();
                for v in 0..spec.up[l] {
                    let parent =
                        self.level_start[l + 1] + (base + v as u64 * parent_strides[l]) as u32;
                    for j in 0..spec.parallel[l] {
                        let uid = parts.fat_tree_links;
                        parts.fat_tree_links += 1;
                        let name = format!(
                            "link_from_{}_{}_{}",
                            self.ids[child as usize], self.ids[parent as usize], uid
                        );
                        let (up, down) = parts.add_cable(&name, c.bandwidth, c.latency, c.sharing);
                        let idx = tree_links.len() as u32;
                        tree_links.push(TreeLink {
                            upper: parent,
                            lower: child,
                            up,
                            down,
                        });
                        let parent_port = clabel[l] + j * spec.down[l];
                        let child_port = v + j * spec.up[l];
                        ports[(child_start[parent as usize] + parent_port) as usize] = idx;
                        ports[(parent_start[child as usize] + child_port) as usize] = idx;
                    }
                }
            }
        }
        if ports.contains(&u32::MAX) {
            return Err(PlatformError::Invalid(format!(
                "fat tree `{}`: some switch ports are not connected",
                c.id
            )));
        }
        Ok(ports.into_iter().map(|i| tree_links[i as usize]).collect())
    }
}

impl Routing for FatTreeRouting {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        let s = check_host_id(src, self.hosts)?;
        let d = check_host_id(dst, self.hosts)?;
        self.local_route(s as u32, d as u32, out)
    }
}

/// A fat tree (see the module documentation).
pub fn fat_tree(spec: FatTreeSpec) -> Result<Platform, PlatformError> {
    let mut parts = Parts::default();
    let built = build(&spec, &mut parts)?;
    parts.finish(Box::new(built.routing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::test_support::cluster_spec;
    use crate::platform::LinkPolicy;

    fn spec(topo: &str) -> FatTreeSpec {
        FatTreeSpec::new(cluster_spec("ft"), topo).unwrap()
    }

    fn route(p: &Platform, a: u32, b: u32) -> Vec<String> {
        p.route_names(a, b)
            .unwrap()
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn platform_fat_tree_counts() {
        let s = spec("2;4,4;1,2;1,2");
        assert_eq!(s.hosts(), 16);
        assert_eq!(s.switches_at(1), 4);
        assert_eq!(s.switches_at(2), 2);
        let p = fat_tree(s).unwrap();
        assert_eq!(p.hosts.len(), 16);
        // 16 host cables + 4 leaves × 2 parents × 2 parallel cables, split-duplex.
        assert_eq!(p.links.len(), (16 + 16) * 2);
        let s = spec("2;4,4;1,4;1,1");
        let p = fat_tree(s).unwrap();
        assert_eq!(p.links.len(), (16 + 16) * 2);
    }

    #[test]
    fn platform_fat_tree_routes_by_hand() {
        // SimGrid's example tree: 4 leaves of 4 hosts, 2 top switches, 2 cables each.
        let p = fat_tree(spec("2;4,4;1,2;1,2")).unwrap();
        // Same leaf: up, down (2 hops).
        assert_eq!(
            route(&p, 0, 1),
            ["link_from_0_31_0_UP", "link_from_1_31_1_DOWN"]
        );
        // Same host, no loopback: up to the leaf and back.
        assert_eq!(
            route(&p, 0, 0),
            ["link_from_0_31_0_UP", "link_from_0_31_0_DOWN"]
        );
        // n0 -> n10: D-mod-K up port at the leaf = 10 mod (2 parents × 2 cables) = 2, the
        // second cable (j=1) to top switch 0 (id 27); down: src position 0 mod 2 = 0, so the
        // scan starts at port 0 of the top switch: port 2 (leaf 2, id 29, first cable).
        assert_eq!(
            route(&p, 0, 10),
            [
                "link_from_0_31_0_UP",
                "link_from_31_27_17_UP",
                "link_from_29_27_24_DOWN",
                "link_from_10_29_10_DOWN"
            ]
        );
        // n1 -> n10: same up port; down scan starts at port (1 mod 2)·4 = 4: cable j=1.
        assert_eq!(
            route(&p, 1, 10),
            [
                "link_from_1_31_1_UP",
                "link_from_31_27_17_UP",
                "link_from_29_27_25_DOWN",
                "link_from_10_29_10_DOWN"
            ]
        );
        // Up ports from leaf 0 for destinations 4, 8, 12 are all 0 (d mod 4 = 0): the same
        // link; 5 gives port 1 (the first cable of the second top switch, id 26).
        let up_port = |d: u32| route(&p, 0, d)[1].clone();
        assert_eq!(up_port(4), "link_from_31_27_16_UP");
        assert_eq!(up_port(8), "link_from_31_27_16_UP");
        assert_eq!(up_port(12), "link_from_31_27_16_UP");
        assert_eq!(up_port(5), "link_from_31_26_18_UP");
        assert_eq!(up_port(6), "link_from_31_27_17_UP");
        assert_eq!(up_port(7), "link_from_31_26_19_UP");
        let mut out = Vec::new();
        for (a, b, hops) in [(0, 1, 2), (0, 4, 4), (3, 15, 4), (0, 0, 2), (15, 0, 4)] {
            let lat = p.route(a, b, &mut out).unwrap();
            assert_eq!(out.len(), hops);
            assert!((lat - hops as f64 * 10e-6).abs() < 1e-15);
        }
    }

    #[test]
    fn platform_fat_tree_up_down_structure() {
        // 2;4,4;1,2;1,1: every route climbs then descends, using UP links then DOWN links.
        let p = fat_tree(spec("2;4,4;1,2;1,1")).unwrap();
        for a in 0..16 {
            for b in 0..16 {
                let r = route(&p, a, b);
                let same_leaf = a / 4 == b / 4;
                assert_eq!(r.len(), if same_leaf { 2 } else { 4 }, "{a}->{b}");
                let half = r.len() / 2;
                assert!(r[..half].iter().all(|l| l.ends_with("_UP")));
                assert!(r[half..].iter().all(|l| l.ends_with("_DOWN")));
            }
        }
        // Three levels: 3;2,2,2;1,2,2;1,1,1 has 8 hosts; far pairs take 6 hops.
        let p = fat_tree(spec("3;2,2,2;1,2,2;1,1,1")).unwrap();
        let mut out = Vec::new();
        p.route(0, 7, &mut out).unwrap();
        assert_eq!(out.len(), 6);
        p.route(0, 3, &mut out).unwrap();
        assert_eq!(out.len(), 4);
        p.route(0, 1, &mut out).unwrap();
        assert_eq!(out.len(), 2);
    }

    /// Distinct top-level links used by the half-to-half shift permutation `i → i + N/2`.
    fn top_links_used(topo: &str) -> (usize, usize) {
        let p = fat_tree(spec(topo)).unwrap();
        let n = p.hosts.len() as u32;
        let mut used = std::collections::BTreeMap::new();
        let mut out = Vec::new();
        for i in 0..n / 2 {
            p.route(i, i + n / 2, &mut out).unwrap();
            // links 1 and 2 of a 4-hop route cross the top level
            *used.entry(out[1]).or_insert(0) += 1;
        }
        let max_load = used.values().copied().max().unwrap_or(0);
        (used.len(), max_load)
    }

    #[test]
    fn platform_fat_tree_pruned_bisection() {
        // Full tree (4 top switches): 8 flows on 8 distinct uplinks, one flow per link.
        assert_eq!(top_links_used("2;4,4;1,4;1,1"), (8, 1));
        // Pruned to 2 top switches: half the uplinks, two flows per link.
        assert_eq!(top_links_used("2;4,4;1,2;1,1"), (4, 2));
        // Pruned to 1 top switch: a quarter, four flows per link.
        assert_eq!(top_links_used("2;4,4;1,1;1,1"), (2, 4));
        // Bisection capacity (sum of the bandwidths of the distinct up links the
        // permutation crosses) scales with the number of top switches.
        let bw = 1e9;
        let caps: Vec<f64> = ["2;4,4;1,1;1,1", "2;4,4;1,2;1,1", "2;4,4;1,4;1,1"]
            .iter()
            .map(|t| top_links_used(t).0 as f64 * bw)
            .collect();
        assert_eq!(caps, vec![2e9, 4e9, 8e9]);
        // Parallel cables restore it: 2 top switches with 2 cables each.
        assert_eq!(top_links_used("2;4,4;1,2;1,2"), (8, 1));
    }

    #[test]
    fn platform_fat_tree_options() {
        let mut s = spec("2;4,4;1,2;1,2");
        s.cluster.sharing = LinkPolicy::Shared;
        s.cluster.loopback = Some(crate::platform::LoopbackSpec {
            bandwidth: 1e8,
            latency: 0.0,
            shared: false,
        });
        s.cluster.limiter = Some(1.5e8);
        let p = fat_tree(s).unwrap();
        assert_eq!(route(&p, 3, 3), ["ft_link_3_loopback"]);
        assert_eq!(
            route(&p, 0, 1),
            [
                "ft_link_0_limiter",
                "link_from_0_31_0",
                "link_from_1_31_1",
                "ft_link_31_limiter",
                "ft_link_1_limiter"
            ]
        );
        let r = route(&p, 0, 10);
        assert_eq!(
            r,
            [
                "ft_link_0_limiter",
                "link_from_0_31_0",
                "ft_link_31_limiter",
                "link_from_31_27_17",
                "link_from_29_27_24",
                "ft_link_27_limiter",
                "link_from_10_29_10",
                "ft_link_29_limiter",
                "ft_link_10_limiter"
            ]
        );
        assert!(FatTreeSpec::new(ClusterSpec::new(0, 1e9, 1e-6), "2;4,4;1,2;1").is_err());
        assert!(parse_topology("2;4,4;1,0;1,1").is_err());
        assert!(parse_topology("x;4,4;1,1;1,1").is_err());
        assert!(parse_topology("2;4,4;1,1").is_err());
        assert!(parse_topology("1;100000;100000;100000").is_ok());
        assert!(
            fat_tree(spec("1;100000;100000;100000")).is_err(),
            "too large"
        );
    }

    #[test]
    fn platform_fat_tree_large_is_lazy() {
        // 65536 hosts: 3 levels, 32×32×64; building and routing must be quick and small.
        let mut s = spec("3;32,32,64;1,32,32;1,1,1");
        s.cluster.radicals.clear();
        let p = fat_tree(s).unwrap();
        assert_eq!(p.hosts.len(), 65536);
        let mut out = Vec::new();
        p.route(0, 65535, &mut out).unwrap();
        assert_eq!(out.len(), 6);
        p.route(12345, 12346, &mut out).unwrap();
        assert_eq!(out.len(), 2);
    }
}
