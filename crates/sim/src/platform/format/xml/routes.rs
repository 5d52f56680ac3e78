//! Routes of a SimGrid platform: `<route>`, `<zoneRoute>` (`<ASroute>`), the bypass
//! routes, and the `<link_ctn>` lists they cross (a symmetric route crosses them in reverse
//! order, split-duplex directions swapped).

use roxmltree::Node;

use super::{Reader, R};
use crate::platform::routing::zones::{Bypass, Local, NetPoint, RouteEntry, RoutedKind};
use crate::platform::topology::graph::{Direction, LinkRef};
use crate::platform::LinkId;

impl Reader<'_, '_> {
    /// The `<link_ctn>` children of a route element.
    fn link_refs(&self, node: Node) -> R<Vec<LinkRef>> {
        let mut v = Vec::new();
        for c in node.children().filter(Node::is_element) {
            if c.tag_name().name() != "link_ctn" {
                return Err(self.err(
                    c,
                    format!("unexpected <{}> in a route", c.tag_name().name()),
                ));
            }
            let id = self.attr(c, "id")?;
            let direction = match c.attribute("direction") {
                None | Some("NONE") => None,
                Some("UP") => Some(Direction::Up),
                Some("DOWN") => Some(Direction::Down),
                Some(d) => return Err(self.err(c, format!("invalid direction `{d}`"))),
            };
            v.push(LinkRef {
                name: id.to_string(),
                direction,
            });
        }
        if v.is_empty() {
            return Err(self.err(node, "empty routes are forbidden"));
        }
        Ok(v)
    }

    fn resolve(&self, node: Node, refs: &[LinkRef], reverse: bool) -> R<Vec<LinkId>> {
        let mut out = Vec::with_capacity(refs.len());
        let iter: Box<dyn Iterator<Item = &LinkRef>> = if reverse {
            Box::new(refs.iter().rev())
        } else {
            Box::new(refs.iter())
        };
        for r in iter {
            out.push(
                self.links
                    .resolve(r, reverse)
                    .map_err(|e| self.err(node, e))?,
            );
        }
        Ok(out)
    }

    fn symmetrical(&self, node: Node) -> R<bool> {
        match node.attribute("symmetrical") {
            None | Some("YES") | Some("yes") => Ok(true),
            Some("NO") | Some("no") => Ok(false),
            Some(s) => Err(self.err(node, format!("invalid symmetrical=\"{s}\""))),
        }
    }

    /// Index of `np` among the vertices of zone `z`.
    pub(super) fn vertex_in(&self, node: Node, z: u32, np: NetPoint, name: &str) -> R<u32> {
        let zone = &self.tree.zones[z as usize];
        zone.vertices
            .iter()
            .position(|&v| v == np)
            .map(|i| i as u32)
            .ok_or_else(|| self.err(node, format!("`{name}` is not in zone `{}`", zone.name)))
    }

    pub(super) fn route(&mut self, node: Node, z: u32) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let (s, d) = (self.netpoint(node, src)?, self.netpoint(node, dst)?);
        if matches!(s, NetPoint::Zone(_)) || matches!(d, NetPoint::Zone(_)) {
            return Err(self.err(
                node,
                "a <route> joins hosts or routers: use <zoneRoute> for zones",
            ));
        }
        let (sv, dv) = (
            self.vertex_in(node, z, s, src)?,
            self.vertex_in(node, z, d, dst)?,
        );
        let refs = self.link_refs(node)?;
        let sym = self.symmetrical(node)?;
        let fwd = self.resolve(node, &refs, false)?;
        let back = if sym {
            Some(self.resolve(node, &refs, true)?)
        } else {
            None
        };
        let err = |r: &Self, e: String| r.err(node, format!("route {src} -> {dst}: {e}"));
        match &mut self.tree.zones[z as usize].local {
            Local::Routed(r) => {
                let kind = r.kind();
                r.add(
                    sv,
                    dv,
                    RouteEntry {
                        links: fwd,
                        gw: None,
                    },
                )
                .and_then(|()| match back {
                    Some(b) if sv != dv || kind != RoutedKind::Full => r
                        .add(dv, sv, RouteEntry { links: b, gw: None })
                        .map_err(|e| {
                            format!("{e}; do not declare the reverse of a symmetrical route")
                        }),
                    _ => Ok(()),
                })
                .map_err(|e| err(self, e))
            }
            Local::Star(st) => {
                if sv != dv {
                    return Err(err(
                        self,
                        "a Cluster zone only accepts routes from a host to itself".into(),
                    ));
                }
                st.set_loopback(sv, &fwd);
                Ok(())
            }
            _ => Err(err(self, "this zone does not accept routes".into())),
        }
    }

    /// `gw` must be a host or router inside zone `zone`.
    fn gateway(&self, node: Node, gw: &str, zone: u32) -> R<NetPoint> {
        let np = self.netpoint(node, gw)?;
        if matches!(np, NetPoint::Zone(_)) {
            return Err(self.err(node, format!("gateway `{gw}` must be a host or a router")));
        }
        if !self.tree.is_inside(np, zone) {
            return Err(self.err(
                node,
                format!(
                    "gateway `{gw}` is not inside zone `{}`",
                    self.tree.zones[zone as usize].name
                ),
            ));
        }
        Ok(np)
    }

    fn zone_of(&self, node: Node, name: &str) -> R<u32> {
        match self.netpoint(node, name)? {
            NetPoint::Zone(z) => Ok(z),
            _ => Err(self.err(node, format!("`{name}` is not a zone"))),
        }
    }

    pub(super) fn zone_route(&mut self, node: Node, z: u32) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let (zs, zd) = (self.zone_of(node, src)?, self.zone_of(node, dst)?);
        let (sv, dv) = (
            self.vertex_in(node, z, NetPoint::Zone(zs), src)?,
            self.vertex_in(node, z, NetPoint::Zone(zd), dst)?,
        );
        let gs = self.gateway(node, self.attr(node, "gw_src")?, zs)?;
        let gd = self.gateway(node, self.attr(node, "gw_dst")?, zd)?;
        if gs == gd {
            return Err(self.err(node, "a zone route cannot go from a gateway to itself"));
        }
        let refs = self.link_refs(node)?;
        let sym = self.symmetrical(node)?;
        let fwd = self.resolve(node, &refs, false)?;
        let back = if sym {
            Some(self.resolve(node, &refs, true)?)
        } else {
            None
        };
        let msg = format!("zone route {src} -> {dst}");
        match &mut self.tree.zones[z as usize].local {
            Local::Routed(r) => {
                let res = r
                    .add(
                        sv,
                        dv,
                        RouteEntry {
                            links: fwd,
                            gw: Some((gs, gd)),
                        },
                    )
                    .and_then(|()| match back {
                        Some(b) if sv != dv => r.add(
                            dv,
                            sv,
                            RouteEntry {
                                links: b,
                                gw: Some((gd, gs)),
                            },
                        ),
                        _ => Ok(()),
                    });
                res.map_err(|e| self.err(node, format!("{msg}: {e}")))
            }
            _ => Err(self.err(
                node,
                format!("{msg}: this zone does not accept zone routes"),
            )),
        }
    }

    pub(super) fn bypass(&mut self, node: Node, z: u32, zones: bool) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let refs = self.link_refs(node)?;
        let links = self.resolve(node, &refs, false)?;
        let (key, gw) = if zones {
            let (zs, zd) = (self.zone_of(node, src)?, self.zone_of(node, dst)?);
            let gs = self.gateway(node, self.attr(node, "gw_src")?, zs)?;
            let gd = self.gateway(node, self.attr(node, "gw_dst")?, zd)?;
            ((NetPoint::Zone(zs), NetPoint::Zone(zd)), Some((gs, gd)))
        } else {
            ((self.netpoint(node, src)?, self.netpoint(node, dst)?), None)
        };
        let zone = &mut self.tree.zones[z as usize];
        if zone.bypass.contains_key(&key) {
            return Err(self.err(node, format!("bypass route {src} -> {dst} declared twice")));
        }
        zone.bypass.insert(key, Bypass { links, gw });
        Ok(())
    }
}
