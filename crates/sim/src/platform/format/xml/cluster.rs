//! `<cluster>` elements, built by the generators of [`crate::platform::topology`] inside a
//! zone of their own, and the content of `Cluster` zones written by hand (`<backbone>`,
//! `<host_link>`, `<cabinet>`), applied at the zone's end as SimGrid does.

use roxmltree::Node;

use super::super::units::parse_speeds;
use super::{Reader, StarPending, R};
use crate::platform::routing::zones::{Local, NetPoint};
use crate::platform::topology::cluster::{
    self, parse_radicals, BackboneSpec, ClusterSpec, LoopbackSpec,
};
use crate::platform::topology::dragonfly::{self, DragonflySpec};
use crate::platform::topology::fat_tree::{self, FatTreeSpec};
use crate::platform::topology::graph::LinkRef;
use crate::platform::topology::torus::{self, TorusSpec};
use crate::platform::{HostPower, HostSpec, LinkId, LinkPolicy, PlatformError, Sharing};

impl<'a, 'i> Reader<'a, 'i> {
    /// A `<cluster>` (in zone `parent`, or the root): a zone of its own holding the hosts,
    /// links and routing its topology generator builds.
    pub(super) fn cluster(&mut self, node: Node<'a, 'i>, parent: Option<u32>) -> R<()> {
        let spec = self.cluster_spec(node)?;
        let id = spec.id.clone();
        let topology = node
            .attribute("topology")
            .filter(|v| !v.is_empty())
            .unwrap_or("FLAT");
        let params = node.attribute("topo_parameters").unwrap_or("");
        let first_link = self.parts.links.len();
        let wrap = |r: &Self, e: PlatformError| r.err(node, e.to_string());
        let (local, hosts, router) = match topology {
            "FLAT" => {
                let b = cluster::build(&spec, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Star(b.star), b.hosts, Some(b.router))
            }
            "FAT_TREE" => {
                let s = FatTreeSpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = fat_tree::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::FatTree(b.routing), b.hosts, None)
            }
            "TORUS" => {
                let s = TorusSpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = torus::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Torus(b.routing), b.hosts, None)
            }
            "DRAGONFLY" => {
                let s = DragonflySpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = dragonfly::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Dragonfly(b.routing), b.hosts, None)
            }
            other => return Err(self.err(node, format!("unknown cluster topology `{other}`"))),
        };
        let z = self.tree.add_zone(id.clone(), parent, local);
        self.name(node, &id, NetPoint::Zone(z))?;
        for h in hosts {
            let name = self.parts.hosts[h as usize].name.clone();
            self.name(node, &name, NetPoint::Host(h))?;
            self.tree.add_host(z, h, name);
        }
        if let Some(router) = router {
            let (r, _) = self.tree.add_router(z, router.clone());
            self.name(node, &router, NetPoint::Router(r))?;
        }
        self.register_links(node, first_link)
    }

    /// The cluster a `<cluster>`'s attributes and `<prop>` children describe.
    fn cluster_spec(&self, node: Node) -> R<ClusterSpec> {
        let id = self.attr(node, "id")?.to_string();
        let opt = |name: &str| node.attribute(name).filter(|v| !v.is_empty());
        let radicals =
            parse_radicals(self.attr(node, "radical")?).map_err(|e| self.err(node, e))?;
        let speeds = parse_speeds(self.attr(node, "speed")?).map_err(|e| self.err(node, e))?;
        let speed = speeds.first().copied().unwrap_or(f64::NAN);
        if !(speed.is_finite() && speed > 0.0) {
            return Err(self.err(
                node,
                format!("cluster `{id}`: speed must be a positive number of flop/s"),
            ));
        }
        let cores = match opt("core") {
            Some(c) => self.int(node, c)?,
            None => 1,
        };
        let bw = self.bandwidth(node, self.attr(node, "bw")?)?;
        let lat = self.time(node, self.attr(node, "lat")?)?;
        let sharing = match opt("sharing_policy") {
            None => LinkPolicy::SplitDuplex,
            Some(p) => match LinkPolicy::parse(p) {
                // SimGrid 3.32 makes plain (SHARED) links for every non-split policy.
                Some(LinkPolicy::FatPipe) => LinkPolicy::Shared,
                Some(p) => p,
                None => return Err(self.err(node, format!("invalid sharing_policy `{p}`"))),
            },
        };
        let bandwidth = |name: &str| opt(name).map_or(Ok(0.0), |v| self.bandwidth(node, v));
        let time = |name: &str| opt(name).map_or(Ok(0.0), |v| self.time(node, v));
        let (bb_bw, bb_lat) = (bandwidth("bb_bw")?, time("bb_lat")?);
        let bb_sharing = match opt("bb_sharing_policy") {
            None => Sharing::Shared,
            Some(p) => match p.to_ascii_uppercase().as_str() {
                "SHARED" => Sharing::Shared,
                "FATPIPE" => Sharing::FatPipe,
                _ => return Err(self.err(node, format!("invalid bb_sharing_policy `{p}`"))),
            },
        };
        let limiter = match opt("limiter_link") {
            Some(v) => Some(self.bandwidth(node, v)?).filter(|&b| b > 0.0),
            None => None,
        };
        let (lb_bw, lb_lat) = (bandwidth("loopback_bw")?, time("loopback_lat")?);
        for c in node.children().filter(Node::is_element) {
            if c.tag_name().name() != "prop" {
                return Err(self.err(
                    c,
                    format!("unexpected <{}> in <cluster>", c.tag_name().name()),
                ));
            }
        }
        let props = self.props(node)?;
        let power = self.power(node, &props, 0)?;
        Ok(ClusterSpec {
            id,
            prefix: node.attribute("prefix").unwrap_or("").to_string(),
            suffix: node.attribute("suffix").unwrap_or("").to_string(),
            radicals,
            host: HostSpec {
                speed,
                cores,
                power,
            },
            bandwidth: bw,
            latency: lat,
            sharing,
            backbone: (bb_bw > 0.0 || bb_lat > 0.0).then_some(BackboneSpec {
                bandwidth: bb_bw,
                latency: bb_lat,
                sharing: bb_sharing,
            }),
            loopback: (lb_bw > 0.0 || lb_lat > 0.0).then_some(LoopbackSpec {
                bandwidth: lb_bw,
                latency: lb_lat,
                shared: false,
            }),
            limiter,
            router_id: opt("router_id").map(str::to_string),
        })
    }

    /// Registers the links made since link `from` (by a cluster) for `<link_ctn>`s.
    fn register_links(&mut self, node: Node, from: usize) -> R<()> {
        let mut i = from;
        while i < self.parts.links.len() {
            let name = self.parts.links[i].name.clone();
            let pair = name.strip_suffix("_UP").and_then(|base| {
                let next = self.parts.links.get(i + 1)?;
                (next.name.strip_suffix("_DOWN") == Some(base)).then(|| base.to_string())
            });
            let res = match pair {
                Some(base) => {
                    let r = self.links.add(
                        &base,
                        LinkPolicy::SplitDuplex,
                        i as LinkId,
                        (i + 1) as LinkId,
                        &self.parts,
                    );
                    i += 2;
                    r
                }
                None => {
                    let r = self.links.add(
                        &name,
                        LinkPolicy::Shared,
                        i as LinkId,
                        i as LinkId,
                        &self.parts,
                    );
                    i += 1;
                    r
                }
            };
            res.map_err(|e| self.err(node, e))?;
        }
        Ok(())
    }

    /// Applies the backbone, host links and cabinets of `Cluster` zone `z`.
    pub(super) fn populate_star(&mut self, z: u32, pending: StarPending<'a, 'i>) -> R<()> {
        let backbone = match pending.backbone {
            Some(b) => {
                let id = self.attr(b, "id")?;
                let bw = self.bandwidth(b, self.attr(b, "bandwidth")?)?;
                let lat = self.time(b, self.attr(b, "latency")?)?;
                if bw <= 0.0 {
                    return Err(self.err(b, "the backbone has no bandwidth"));
                }
                let l = self
                    .parts
                    .add_link(id.to_string(), bw, lat, Sharing::Shared);
                self.links
                    .add(id, LinkPolicy::Shared, l, l, &self.parts)
                    .map_err(|e| self.err(b, e))?;
                Some(l)
            }
            None => None,
        };
        for hl in pending.host_links {
            let id = self.attr(hl, "id")?;
            let np = self.netpoint(hl, id)?;
            if !matches!(np, NetPoint::Host(_)) {
                return Err(self.err(hl, format!("`{id}` is not a host")));
            }
            let v = self.vertex_in(hl, z, np, id)?;
            let up = self
                .links
                .resolve(&LinkRef::new(self.attr(hl, "up")?), false)
                .map_err(|e| self.err(hl, e))?;
            let down = self
                .links
                .resolve(&LinkRef::new(self.attr(hl, "down")?), false)
                .map_err(|e| self.err(hl, e))?;
            self.attach(z, v, up, down, backbone);
        }
        for cab in pending.cabinets {
            self.cabinet(z, cab, backbone)?;
        }
        Ok(())
    }

    /// Routes vertex `v` of `Cluster` zone `z` up through link `up`, then the backbone, and
    /// down through the backbone, then `down`.
    fn attach(&mut self, z: u32, v: u32, up: LinkId, down: LinkId, backbone: Option<LinkId>) {
        let mut ups = vec![up];
        ups.extend(backbone);
        let mut downs: Vec<LinkId> = backbone.into_iter().collect();
        downs.push(down);
        if let Local::Star(s) = &mut self.tree.zones[z as usize].local {
            s.set_up(v, &ups);
            s.set_down(v, &downs);
        }
    }

    /// A `<cabinet>` of `Cluster` zone `z`: its hosts, each with its own up and down links.
    fn cabinet(&mut self, z: u32, cab: Node, backbone: Option<LinkId>) -> R<()> {
        let prefix = cab.attribute("prefix").unwrap_or("");
        let suffix = cab.attribute("suffix").unwrap_or("");
        let radicals = parse_radicals(self.attr(cab, "radical")?).map_err(|e| self.err(cab, e))?;
        let speeds = parse_speeds(self.attr(cab, "speed")?).map_err(|e| self.err(cab, e))?;
        let bw = self.bandwidth(cab, self.attr(cab, "bw")?)?;
        let lat = self.time(cab, self.attr(cab, "lat")?)?;
        if bw <= 0.0 {
            return Err(self.err(cab, "a cabinet needs a bandwidth"));
        }
        let speed = speeds.first().copied().unwrap_or(f64::NAN);
        if !(speed.is_finite() && speed > 0.0) {
            return Err(self.err(cab, "cabinet speed must be a positive number of flop/s"));
        }
        let spec = HostSpec {
            speed,
            cores: 1,
            power: HostPower::default(),
        };
        for r in radicals {
            let name = format!("{prefix}{r}{suffix}");
            let h = self.parts.add_host(name.clone(), &spec);
            self.name(cab, &name, NetPoint::Host(h))?;
            let v = self.tree.add_host(z, h, name.clone());
            self.star_vertex(z);
            let from = self.parts.links.len();
            let up = self
                .parts
                .add_link(format!("link_{name}_UP"), bw, lat, Sharing::Shared);
            let down = self
                .parts
                .add_link(format!("link_{name}_DOWN"), bw, lat, Sharing::Shared);
            for (i, l) in [(from, up), (from + 1, down)] {
                let n = self.parts.links[i].name.clone();
                self.links
                    .add(&n, LinkPolicy::Shared, l, l, &self.parts)
                    .map_err(|e| self.err(cab, e))?;
            }
            self.attach(z, v, up, down, backbone);
        }
        Ok(())
    }
}
