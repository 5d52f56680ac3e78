//! Hierarchical routing: zones within zones, as SimGrid's `NetZoneImpl`.
//!
//! A zone holds vertices ("netpoints": hosts, routers, child zones) and routes them with
//! its own algorithm: an explicit table (`Full`), shortest paths in number of links over
//! declared routes (`Floyd`, `Dijkstra`), a star (flat clusters and `Cluster` zones), a
//! cluster topology (fat tree, torus, dragonfly), or nothing (`None`).
//!
//! The route between two netpoints (SimGrid's `get_global_route`): find the first common
//! ancestor zone of their zones and the children of it that lead to each. If they are the
//! same, it is the local route of that zone. Otherwise the common ancestor's route between
//! the two child zones gives links and two gateways, and the result is
//! `route(src → gw_src) + links + route(gw_dst → dst)`, recursively. Bypass routes declared
//! in the common ancestor are checked first. A zone without child zones ("base" zone) of
//! kind Full/Floyd/Dijkstra routes a vertex to itself over the platform's `__loopback__`
//! link unless a route says otherwise. An empty final route is an error, as in SimGrid.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use crate::platform::topology::cluster::StarRouting;
use crate::platform::topology::dragonfly::DragonflyRouting;
use crate::platform::topology::fat_tree::FatTreeRouting;
use crate::platform::topology::torus::TorusRouting;
use crate::platform::{check_host_id, HostId, LinkId, PlatformError, Routing};

/// Something routes go from or to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NetPoint {
    /// A host.
    Host(u32),
    /// A router (index in [`ZoneTree::router_names`]).
    Router(u32),
    /// A zone (index in [`ZoneTree::zones`]).
    Zone(u32),
}

/// A declared route: links and, for routes between zones, gateways.
#[derive(Debug, Clone)]
pub(crate) struct RouteEntry {
    pub(crate) links: Vec<LinkId>,
    pub(crate) gw: Option<(NetPoint, NetPoint)>,
}

/// Kind of routing of a routed zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoutedKind {
    Full,
    Floyd,
    Dijkstra,
}

/// Floyd–Warshall is done exactly as SimGrid does it up to this many vertices; above, the
/// shortest paths come from Dijkstra (same lengths, possibly different ties).
const FLOYD_MAX: usize = 600;
/// Bound of the per-zone Dijkstra cache (sources × nodes).
const CACHE_ENTRIES: usize = 1 << 22;

/// A zone of kind Full, Floyd or Dijkstra.
#[derive(Debug)]
pub(crate) struct Routed {
    kind: RoutedKind,
    /// Number of vertices.
    n: usize,
    entries: Vec<RouteEntry>,
    /// `(from, to)` vertices of each entry.
    ends: Vec<(u32, u32)>,
    /// `(from, to)` → entry.
    index: HashMap<(u32, u32), u32>,
    /// Dijkstra graph: vertex → node (`u32::MAX` if in no route).
    node_of: Vec<u32>,
    /// Out-edges of each node: `(target node, entry)`, in declaration order.
    out: Vec<Vec<(u32, u32)>>,
    /// Loopback of a base zone (Full zones use it for vertices without a self route).
    loopback: Option<LinkId>,
    cache: Mutex<HashMap<u32, Arc<Vec<u32>>>>,
    floyd: OnceLock<Option<Vec<u32>>>,
}

impl Routed {
    /// An empty routed zone.
    pub(crate) fn new(kind: RoutedKind) -> Routed {
        Routed {
            kind,
            n: 0,
            entries: Vec::new(),
            ends: Vec::new(),
            index: HashMap::new(),
            node_of: Vec::new(),
            out: Vec::new(),
            loopback: None,
            cache: Mutex::new(HashMap::new()),
            floyd: OnceLock::new(),
        }
    }

    /// The kind of routing.
    pub(crate) fn kind(&self) -> RoutedKind {
        self.kind
    }

    /// Adds the route `from → to`; fails if it exists.
    pub(crate) fn add(&mut self, from: u32, to: u32, entry: RouteEntry) -> Result<(), String> {
        if self.index.contains_key(&(from, to)) {
            return Err("the route already exists (routes are symmetrical by default)".into());
        }
        let e = self.entries.len() as u32;
        self.entries.push(entry);
        self.ends.push((from, to));
        self.index.insert((from, to), e);
        let need = from.max(to) as usize + 1;
        if self.node_of.len() < need {
            self.node_of.resize(need, u32::MAX);
        }
        let node = |v: u32, s: &mut Routed| {
            if s.node_of[v as usize] == u32::MAX {
                s.node_of[v as usize] = s.out.len() as u32;
                s.out.push(Vec::new());
            }
            s.node_of[v as usize]
        };
        let a = node(from, self);
        let b = node(to, self);
        self.out[a as usize].push((b, e));
        Ok(())
    }

    /// Finishes the zone: `n` vertices; `loopback` for base zones.
    pub(crate) fn seal(&mut self, n: usize, loopback: Option<LinkId>) {
        self.n = n;
        if self.node_of.len() < n {
            self.node_of.resize(n, u32::MAX);
        }
        self.loopback = loopback;
        let Some(lb) = loopback else { return };
        match self.kind {
            RoutedKind::Full => {}
            RoutedKind::Floyd => {
                for v in 0..n as u32 {
                    if !self.index.contains_key(&(v, v)) {
                        let _ = self.add(
                            v,
                            v,
                            RouteEntry {
                                links: vec![lb],
                                gw: None,
                            },
                        );
                    }
                }
            }
            RoutedKind::Dijkstra => {
                // Only vertices that are in the graph get one (as in SimGrid).
                for v in 0..self.node_of.len() as u32 {
                    if self.node_of[v as usize] != u32::MAX && !self.index.contains_key(&(v, v)) {
                        let _ = self.add(
                            v,
                            v,
                            RouteEntry {
                                links: vec![lb],
                                gw: None,
                            },
                        );
                    }
                }
            }
        }
    }

    /// The entries of the route `src → dst`, in order (`None`: no route).
    fn path(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        match self.kind {
            RoutedKind::Full => self.index.get(&(src, dst)).map(|&e| vec![e]),
            RoutedKind::Floyd if self.n <= FLOYD_MAX => self.floyd_path(src, dst),
            _ => self.dijkstra_path(src, dst),
        }
    }

    fn floyd_path(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        let n = self.n;
        let pred = self
            .floyd
            .get_or_init(|| {
                let mut cost = vec![u64::MAX; n * n];
                let mut pred = vec![u32::MAX; n * n];
                for (e, &(a, b)) in self.ends.iter().enumerate() {
                    let (a, b) = (a as usize, b as usize);
                    if a < n && b < n {
                        cost[a * n + b] = self.entries[e].links.len() as u64;
                        pred[a * n + b] = a as u32;
                    }
                }
                for c in 0..n {
                    for a in 0..n {
                        let ac = cost[a * n + c];
                        if ac == u64::MAX {
                            continue;
                        }
                        for b in 0..n {
                            let cb = cost[c * n + b];
                            if cb == u64::MAX {
                                continue;
                            }
                            let ab = &mut cost[a * n + b];
                            if *ab == u64::MAX || ac + cb < *ab {
                                *ab = ac + cb;
                                pred[a * n + b] = pred[c * n + b];
                            }
                        }
                    }
                }
                Some(pred)
            })
            .as_ref()?;
        let (s, mut cur) = (src as usize, dst as usize);
        let mut stack = Vec::new();
        loop {
            let p = *pred.get(s * n + cur)?;
            if p == u32::MAX || stack.len() > n {
                return None;
            }
            stack.push(*self.index.get(&(p, cur as u32))?);
            cur = p as usize;
            if cur == s {
                break;
            }
        }
        stack.reverse();
        Some(stack)
    }

    fn dijkstra_tree(&self, src_node: u32) -> Arc<Vec<u32>> {
        if let Ok(cache) = self.cache.lock() {
            if let Some(t) = cache.get(&src_node) {
                return Arc::clone(t);
            }
        }
        let nn = self.out.len();
        let mut cost = vec![u64::MAX; nn];
        let mut pred = vec![u32::MAX; nn];
        let mut done = vec![false; nn];
        let mut heap = BinaryHeap::new();
        cost[src_node as usize] = 0;
        heap.push(Reverse((0u64, src_node)));
        while let Some(Reverse((c, v))) = heap.pop() {
            if done[v as usize] {
                continue;
            }
            done[v as usize] = true;
            for &(u, e) in &self.out[v as usize] {
                let nc = c + self.entries[e as usize].links.len() as u64;
                if nc < cost[u as usize] {
                    cost[u as usize] = nc;
                    pred[u as usize] = e;
                    heap.push(Reverse((nc, u)));
                }
            }
        }
        let tree = Arc::new(pred);
        if let Ok(mut cache) = self.cache.lock() {
            if (cache.len() + 1) * nn.max(1) > CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(src_node, Arc::clone(&tree));
        }
        tree
    }

    fn dijkstra_path(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        let sn = *self.node_of.get(src as usize)?;
        let dn = *self.node_of.get(dst as usize)?;
        if sn == u32::MAX || dn == u32::MAX {
            return None;
        }
        if sn == dn {
            return self.out[sn as usize]
                .iter()
                .find(|&&(u, _)| u == sn)
                .map(|&(_, e)| vec![e]);
        }
        let tree = self.dijkstra_tree(sn);
        let mut stack = Vec::new();
        let mut v = dn;
        while v != sn {
            let e = tree[v as usize];
            if e == u32::MAX || stack.len() > self.out.len() {
                return None;
            }
            stack.push(e);
            v = self.node_of[self.ends[e as usize].0 as usize];
        }
        stack.reverse();
        Some(stack)
    }
}

/// How a zone routes between its vertices.
#[derive(Debug)]
pub(crate) enum Local {
    Routed(Routed),
    Star(StarRouting),
    FatTree(FatTreeRouting),
    Torus(TorusRouting),
    Dragonfly(DragonflyRouting),
    Empty,
}

/// A bypass route.
#[derive(Debug, Clone)]
pub(crate) struct Bypass {
    pub(crate) links: Vec<LinkId>,
    pub(crate) gw: Option<(NetPoint, NetPoint)>,
}

/// A zone.
#[derive(Debug)]
pub(crate) struct Zone {
    pub(crate) name: String,
    pub(crate) parent: Option<u32>,
    /// Index of this zone among its parent's vertices.
    pub(crate) local_in_parent: u32,
    pub(crate) vertices: Vec<NetPoint>,
    pub(crate) local: Local,
    pub(crate) bypass: HashMap<(NetPoint, NetPoint), Bypass>,
}

/// All zones of a platform, and where each host and router is.
#[derive(Debug, Default)]
pub(crate) struct ZoneTree {
    pub(crate) zones: Vec<Zone>,
    /// Zone and vertex index of each host.
    pub(crate) host_loc: Vec<(u32, u32)>,
    /// Zone and vertex index of each router.
    pub(crate) router_loc: Vec<(u32, u32)>,
    pub(crate) host_names: Vec<String>,
    pub(crate) router_names: Vec<String>,
}

impl ZoneTree {
    /// Adds a zone under `parent` (a vertex of it).
    pub(crate) fn add_zone(&mut self, name: String, parent: Option<u32>, local: Local) -> u32 {
        let id = self.zones.len() as u32;
        let local_in_parent = match parent {
            Some(p) => self.add_vertex(p, NetPoint::Zone(id)),
            None => 0,
        };
        self.zones.push(Zone {
            name,
            parent,
            local_in_parent,
            vertices: Vec::new(),
            local,
            bypass: HashMap::new(),
        });
        id
    }

    /// Adds a vertex to `zone`; returns its index there.
    pub(crate) fn add_vertex(&mut self, zone: u32, np: NetPoint) -> u32 {
        let z = &mut self.zones[zone as usize];
        z.vertices.push(np);
        (z.vertices.len() - 1) as u32
    }

    /// Registers host `h` (the next host id) as a vertex of `zone`.
    pub(crate) fn add_host(&mut self, zone: u32, h: HostId, name: String) -> u32 {
        let v = self.add_vertex(zone, NetPoint::Host(h));
        debug_assert_eq!(self.host_loc.len(), h as usize);
        self.host_loc.push((zone, v));
        self.host_names.push(name);
        v
    }

    /// Registers a router as a vertex of `zone`.
    pub(crate) fn add_router(&mut self, zone: u32, name: String) -> (u32, u32) {
        let r = self.router_names.len() as u32;
        let v = self.add_vertex(zone, NetPoint::Router(r));
        self.router_loc.push((zone, v));
        self.router_names.push(name);
        (r, v)
    }

    /// Zone that contains `np`.
    pub(crate) fn englobing(&self, np: NetPoint) -> Option<u32> {
        match np {
            NetPoint::Host(h) => self.host_loc.get(h as usize).map(|l| l.0),
            NetPoint::Router(r) => self.router_loc.get(r as usize).map(|l| l.0),
            NetPoint::Zone(z) => self.zones.get(z as usize).and_then(|z| z.parent),
        }
    }

    /// Vertex index of `np` in `zone`, if it is one of its vertices.
    fn vertex_in(&self, zone: u32, np: NetPoint) -> Option<u32> {
        let (z, v) = match np {
            NetPoint::Host(h) => *self.host_loc.get(h as usize)?,
            NetPoint::Router(r) => *self.router_loc.get(r as usize)?,
            NetPoint::Zone(c) => {
                let c = self.zones.get(c as usize)?;
                (c.parent?, c.local_in_parent)
            }
        };
        (z == zone).then_some(v)
    }

    /// Whether `np` is inside `zone` (at any depth).
    pub(crate) fn is_inside(&self, np: NetPoint, zone: u32) -> bool {
        let mut z = self.englobing(np);
        let mut guard = 0;
        while let Some(cur) = z {
            if cur == zone {
                return true;
            }
            guard += 1;
            if guard > self.zones.len() {
                return false;
            }
            z = self.zones[cur as usize].parent;
        }
        false
    }

    /// Name of a netpoint, for errors.
    pub(crate) fn name(&self, np: NetPoint) -> String {
        match np {
            NetPoint::Host(h) => self.host_names.get(h as usize).cloned(),
            NetPoint::Router(r) => self.router_names.get(r as usize).cloned(),
            NetPoint::Zone(z) => self.zones.get(z as usize).map(|z| z.name.clone()),
        }
        .unwrap_or_else(|| format!("{np:?}"))
    }

    fn no_route(&self, src: NetPoint, dst: NetPoint) -> PlatformError {
        PlatformError::NoRoute {
            src: self.name(src),
            dst: self.name(dst),
        }
    }

    /// Zones from `z` up to the root.
    fn path_to_root(&self, z: u32) -> Vec<u32> {
        let mut p = vec![z];
        let mut cur = z;
        while let Some(parent) = self.zones[cur as usize].parent {
            if p.len() > self.zones.len() {
                break;
            }
            p.push(parent);
            cur = parent;
        }
        p
    }

    /// `(common ancestor, src ancestor, dst ancestor)` as SimGrid computes them.
    fn common_ancestors(&self, zs: u32, zd: u32) -> Option<(u32, u32, u32)> {
        if zs == zd {
            return Some((zs, zs, zs));
        }
        let mut ps = self.path_to_root(zs);
        let mut pd = self.path_to_root(zd);
        let mut parent = None;
        while ps.len() > 1 && pd.len() > 1 && ps.last() == pd.last() {
            parent = ps.pop();
            pd.pop();
        }
        let (sa, da) = (*ps.last()?, *pd.last()?);
        if sa == da {
            Some((sa, sa, da))
        } else {
            Some((parent?, sa, da))
        }
    }

    /// Appends the local route of `zone` between two of its vertices; returns the
    /// gateways of a zone-to-zone route.
    ///
    /// `out[base..]` is the route being built (SimGrid's link list): a Dijkstra zone
    /// inserts its links at its beginning, each edge's links reversed, as SimGrid does.
    fn local(
        &self,
        zone: u32,
        src: NetPoint,
        dst: NetPoint,
        out: &mut Vec<LinkId>,
        base: usize,
        depth: u32,
    ) -> Result<Option<(NetPoint, NetPoint)>, PlatformError> {
        let (Some(sv), Some(dv)) = (self.vertex_in(zone, src), self.vertex_in(zone, dst)) else {
            return Err(self.no_route(src, dst));
        };
        let z = &self.zones[zone as usize];
        let is_host = |np: NetPoint| matches!(np, NetPoint::Host(_));
        match &z.local {
            Local::Routed(r) if r.kind == RoutedKind::Full => {
                // One table entry (no path to compose): no allocation.
                match r.index.get(&(sv, dv)) {
                    Some(&e) => {
                        let entry = &r.entries[e as usize];
                        out.extend_from_slice(&entry.links);
                        Ok(entry.gw)
                    }
                    None => {
                        if sv == dv {
                            out.extend(r.loopback);
                        }
                        Ok(None)
                    }
                }
            }
            Local::Routed(r) => {
                let Some(path) = r.path(sv, dv) else {
                    if sv == dv && r.kind == RoutedKind::Full {
                        if let Some(lb) = r.loopback {
                            out.push(lb);
                        }
                    }
                    return Ok(None);
                };
                let mut gw_first = None;
                let mut gw_last = None;
                let mut prev_gw_dst: Option<NetPoint> = None;
                let mut front = Vec::new();
                for (i, &e) in path.iter().enumerate() {
                    let entry = &r.entries[e as usize];
                    if let Some((gs, gd)) = entry.gw {
                        if i == 0 {
                            gw_first = Some(gs);
                        }
                        if let Some(p) = prev_gw_dst {
                            if p != gs {
                                self.global(p, gs, out, base, depth + 1)?;
                            }
                        }
                        prev_gw_dst = Some(gd);
                        gw_last = Some(gd);
                    }
                    if r.kind == RoutedKind::Dijkstra {
                        front.extend(entry.links.iter().rev());
                    } else {
                        out.extend_from_slice(&entry.links);
                    }
                }
                if !front.is_empty() {
                    out.splice(base..base, front);
                }
                Ok(gw_first.zip(gw_last))
            }
            Local::Star(s) => {
                s.local_route(sv, dv, out);
                Ok(None)
            }
            Local::FatTree(t) => {
                if is_host(src) && is_host(dst) {
                    t.local_route(sv, dv, out)?;
                }
                Ok(None)
            }
            Local::Torus(t) => {
                if is_host(src) && is_host(dst) {
                    t.local_route(sv, dv, out)?;
                }
                Ok(None)
            }
            Local::Dragonfly(t) => {
                if is_host(src) && is_host(dst) {
                    t.local_route(sv, dv, out)?;
                }
                Ok(None)
            }
            Local::Empty => Ok(None),
        }
    }

    /// SimGrid's bypass lookup in the common ancestor `zone`; `true` if one was used.
    fn bypass(
        &self,
        zone: u32,
        src: NetPoint,
        dst: NetPoint,
        out: &mut Vec<LinkId>,
        base: usize,
        depth: u32,
    ) -> Result<bool, PlatformError> {
        let z = &self.zones[zone as usize];
        if z.bypass.is_empty() {
            return Ok(false);
        }
        let (Some(zs), Some(zd)) = (self.englobing(src), self.englobing(dst)) else {
            return Ok(false);
        };
        if zs == zone && zd == zone {
            if let Some(b) = z.bypass.get(&(src, dst)) {
                out.extend_from_slice(&b.links);
                return Ok(true);
            }
            return Ok(false);
        }
        let mut ps = self.path_to_root(zs);
        let mut pd = self.path_to_root(zd);
        while ps.len() > 1 && pd.len() > 1 && ps.last() == pd.last() {
            ps.pop();
            pd.pop();
        }
        let lookup = |i: usize, j: usize| -> Option<((NetPoint, NetPoint), &Bypass)> {
            if i < ps.len() && j < pd.len() {
                let key = (NetPoint::Zone(ps[i]), NetPoint::Zone(pd[j]));
                z.bypass.get(&key).map(|b| (key, b))
            } else {
                None
            }
        };
        let mut found = None;
        'search: for max in 0..ps.len().max(pd.len()) {
            for i in 0..max {
                if let Some(f) = lookup(i, max).or_else(|| lookup(max, i)) {
                    found = Some(f);
                    break 'search;
                }
            }
            if let Some(f) = lookup(max, max) {
                found = Some(f);
                break;
            }
        }
        let Some((key, b)) = found else {
            return Ok(false);
        };
        let Some((gs, gd)) = b.gw else {
            return Ok(false);
        };
        if src != key.0 {
            self.global(src, gs, out, base, depth + 1)?;
        }
        out.extend_from_slice(&b.links);
        if dst != key.1 {
            self.global(gd, dst, out, base, depth + 1)?;
        }
        Ok(true)
    }

    /// Appends the route between two netpoints (hosts or routers); `out[base..]` is the
    /// route being built.
    pub(crate) fn global(
        &self,
        src: NetPoint,
        dst: NetPoint,
        out: &mut Vec<LinkId>,
        base: usize,
        depth: u32,
    ) -> Result<(), PlatformError> {
        if depth > 64 {
            return Err(PlatformError::Invalid(format!(
                "routing loop between {} and {}",
                self.name(src),
                self.name(dst)
            )));
        }
        let (Some(zs), Some(zd)) = (self.englobing(src), self.englobing(dst)) else {
            return Err(self.no_route(src, dst));
        };
        let (common, sa, da) = self
            .common_ancestors(zs, zd)
            .ok_or_else(|| self.no_route(src, dst))?;
        if self.bypass(common, src, dst, out, base, depth)? {
            return Ok(());
        }
        if sa == da {
            self.local(common, src, dst, out, base, depth)?;
            return Ok(());
        }
        let mut mid = Vec::new();
        let gw = self.local(
            common,
            NetPoint::Zone(sa),
            NetPoint::Zone(da),
            &mut mid,
            0,
            depth,
        )?;
        let Some((gs, gd)) = gw else {
            return Err(self.no_route(src, dst));
        };
        if src != gs {
            self.global(src, gs, out, base, depth + 1)?;
        }
        out.extend_from_slice(&mid);
        if gd != dst {
            self.global(gd, dst, out, base, depth + 1)?;
        }
        Ok(())
    }
}

impl Routing for ZoneTree {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        let n = self.host_loc.len();
        check_host_id(src, n)?;
        check_host_id(dst, n)?;
        let start = out.len();
        let (zs, sv) = self.host_loc[src as usize];
        let (zd, dv) = self.host_loc[dst as usize];
        let z = &self.zones[zs as usize];
        // Fast paths: both hosts in the same zone of a kind that needs no recursion.
        if zs == zd && z.bypass.is_empty() {
            match &z.local {
                Local::Star(s) => s.local_route(sv, dv, out),
                Local::FatTree(t) => t.local_route(sv, dv, out)?,
                Local::Torus(t) => t.local_route(sv, dv, out)?,
                Local::Dragonfly(t) => t.local_route(sv, dv, out)?,
                _ => self.global(NetPoint::Host(src), NetPoint::Host(dst), out, start, 0)?,
            }
        } else {
            self.global(NetPoint::Host(src), NetPoint::Host(dst), out, start, 0)?;
        }
        if out.len() == start {
            return Err(self.no_route(NetPoint::Host(src), NetPoint::Host(dst)));
        }
        Ok(())
    }
}
