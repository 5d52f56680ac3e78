//! Our TOML platform format: a generator section, or explicit hosts, links and routes.
//!
//! Quantities are either strings with SimGrid units (`"10Gbps"`, `"1GBps"`, `"24us"`,
//! `"1Gf"`; see [`super::units`]) or plain numbers in SI units (bytes/s, seconds, flop/s).
//!
//! # A generated platform
//!
//! Exactly one of `[cluster]`, `[fat_tree]`, `[torus]`, `[dragonfly]`. They share the host
//! and cable keys; each topology adds its shape, in SimGrid's notation (`topology = "…"`)
//! or spelled out:
//!
//! ```toml
//! name = "pruned fat tree"          # optional, informative
//!
//! [fat_tree]
//! id = "ft"                         # names links (default "cluster")
//! prefix = "node-"                  # host names: prefix + number + suffix
//! suffix = ""
//! # hosts = 16                      # optional: checked against the topology
//! # radical = "0-15"                # or SimGrid radicals (host numbers)
//! speed = "1Gf"                     # per core (default 1 Gflop/s)
//! cores = 4                         # default 1
//! watts = "95:190"                  # idle:max (or idle:epsilon:max), optional
//! watts_off = 10                    # optional
//! bandwidth = "10Gbps"              # per cable (required)
//! latency = "1us"                   # per cable (required)
//! sharing = "splitduplex"           # splitduplex (default) | shared | fatpipe
//! loopback = { bandwidth = "50GBps", latency = "0s" }   # optional, per host; add
//!                                   # sharing = "shared" for shared memory (default fatpipe)
//! limiter = "12.5GBps"              # optional per-node limiter link
//! topology = "2;4,4;1,2;1,2"        # levels;down…;up…;parallel…
//! # or: down = [4, 4]  up = [1, 2]  parallel = [1, 2]
//! ```
//!
//! * `[cluster]` (flat): `hosts` or `radical` gives the hosts; optional
//!   `backbone = { bandwidth = "100Gbps", latency = "500ns", sharing = "fatpipe" }`
//!   (sharing `shared`, the default, or `fatpipe`) and `router = "name"`.
//! * `[torus]`: `topology = "4,4,4"` or `dims = [4, 4, 4]`.
//! * `[dragonfly]`: `topology = "G,g;C,c;B,b;N"` or `groups`, `group_links`, `chassis`,
//!   `chassis_links`, `routers`, `router_links`, `nodes`.
//!
//! # Simulation options
//!
//! Either kind of file may carry options for the simulation under SimGrid's names, as a
//! SimGrid platform's `<config>` does; `mpiscope replay` applies them (its own flags win):
//!
//! ```toml
//! [config]
//! "network/model" = "SMPI"                 # or "CM02"
//! "smpi/bw-factor" = "65472:0.94;0:0.81"   # piecewise factors by message size
//! "smpi/lat-factor" = "65472:11.6;0:2.0"
//! "smpi/send-is-detached-thresh" = 65536   # eager threshold, bytes
//! "smpi/test" = "1e-4"                     # SMPI's per-call costs (crate::costs)
//! "smpi/or" = "0:1e-6:1e-10;65536:2e-6:0"  # receive overhead by message size
//! ```
//!
//! `docs/PLATFORMS.md` lists every option read and its default under each network model.
//!
//! # An explicit platform
//!
//! ```toml
//! routing = "shortest"   # lowest-latency paths over the routes (default), or "full":
//!                        # each route is the complete route between two hosts
//! loopback = { bandwidth = "10GBps", latency = 0 }   # same-host link (default), or false
//!
//! [[host]]
//! name = "a"
//! speed = "2Gf"
//! cores = 8
//! watts = "100:93:200"
//!
//! [[host]]
//! name = "b"
//!
//! [[router]]
//! name = "r"
//!
//! [[link]]
//! name = "ar"
//! bandwidth = "10Gbps"
//! latency = "2us"
//! sharing = "splitduplex"   # makes ar_UP and ar_DOWN; default "shared"
//!
//! [[link]]
//! name = "rb"
//! bandwidth = 1.25e9
//! latency = 2e-6
//!
//! [[route]]
//! src = "a"
//! dst = "r"
//! links = ["ar:UP"]         # "name:UP" / "name:DOWN" for split-duplex cables
//!
//! [[route]]
//! src = "r"
//! dst = "b"
//! links = ["rb"]
//! symmetric = true          # default: the reverse route uses the links reversed
//! ```
//!
//! With `routing = "shortest"`, routes are edges between hosts and routers and messages
//! follow the lowest-latency path ([`mod@crate::platform::graph`]); with `routing = "full"`, a message
//! between two hosts without a route fails. Errors name the file and the line.

//!
//! The file's schema is `file` (what serde reads); `generated` builds a generator
//! section's platform, `explicit` a platform of explicit hosts, links and routes.

mod explicit;
mod file;
mod generated;
#[cfg(test)]
mod tests;

use std::path::Path;

use self::file::{Ctx, File};
use super::config::{check_key, Format, OptionWarning};
use crate::platform::{Platform, PlatformError};

/// Reads a TOML platform file.
pub fn from_toml_path(path: &Path) -> Result<Platform, PlatformError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PlatformError::Io {
        path: name.clone(),
        source,
    })?;
    from_toml_str(&text, &name)
}

/// Reads our TOML platform format from a string; `name` names it in errors.
pub fn from_toml_str(text: &str, name: &str) -> Result<Platform, PlatformError> {
    let ctx = Ctx { text, path: name };
    let mut file: File = ::toml::from_str(text).map_err(|e| PlatformError::Syntax {
        path: name.to_string(),
        line: e.span().map(|s| ctx.line(s.start)).unwrap_or(0),
        message: e.message().trim().to_string(),
    })?;
    let mut warnings = Vec::new();
    let config = std::mem::take(&mut file.config)
        .into_iter()
        .map(|(key, v)| {
            let span = key.span();
            let k = key.into_inner();
            if let Some(message) = check_key(&k, Format::Toml) {
                warnings.push(OptionWarning {
                    path: name.to_string(),
                    line: ctx.line(span.start),
                    key: k.clone(),
                    message,
                });
            }
            match v {
                ::toml::Value::String(s) => Ok((k, s)),
                ::toml::Value::Integer(i) => Ok((k, i.to_string())),
                ::toml::Value::Float(f) => Ok((k, f.to_string())),
                ::toml::Value::Boolean(b) => Ok((k, b.to_string())),
                _ => Err(ctx.err(
                    span,
                    format!("[config] `{k}`: expected a string, a number or a boolean"),
                )),
            }
        })
        .collect::<Result<_, _>>()?;
    let mut platform = platform_of(&ctx, file)?;
    platform.config = config;
    platform.warnings = warnings;
    Ok(platform)
}

/// The platform of a file: one generator section, or explicit lists.
fn platform_of(ctx: &Ctx, file: File) -> Result<Platform, PlatformError> {
    let sections = [
        ("cluster", &file.cluster),
        ("fat_tree", &file.fat_tree),
        ("torus", &file.torus),
        ("dragonfly", &file.dragonfly),
    ];
    let given: Vec<_> = sections.iter().filter(|(_, s)| s.is_some()).collect();
    let explicit = !file.host.is_empty()
        || !file.router.is_empty()
        || !file.link.is_empty()
        || !file.route.is_empty();
    match given.as_slice() {
        [] if explicit => explicit::explicit_platform(ctx, file),
        [] => Err(ctx.err(
            0..0,
            "no platform: give a [cluster], [fat_tree], [torus] or [dragonfly] section, or [[host]] lists",
        )),
        [(kind, Some(sec))] => {
            if explicit || file.routing.is_some() || file.loopback.is_some() {
                return Err(ctx.err(
                    sec.span(),
                    format!("[{kind}] cannot be combined with explicit hosts, links, routes or routing"),
                ));
            }
            generated::generated(ctx, kind, sec)
        }
        _ => Err(ctx.err(0..0, "give only one generator section")),
    }
}
