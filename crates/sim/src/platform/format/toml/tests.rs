//! The TOML reader: generators, explicit platforms, options, and the errors that name
//! their line.

use super::*;
use crate::platform::Sharing;

#[test]
fn platform_toml_config_options() {
    let text = "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n\n[config]\n\"smpi/bw-factor\" = \"0:0.5\"\n\"smpi/send-is-detached-thresh\" = 1024\n\"network/crosstraffic\" = false\n";
    let p = from_toml_str(text, "c.toml").unwrap();
    assert_eq!(p.config["smpi/bw-factor"], "0:0.5");
    assert_eq!(p.config["smpi/send-is-detached-thresh"], "1024");
    assert_eq!(p.config["network/crosstraffic"], "false");
    let bad = text.replace("= 1024", "= [1024]");
    let e = from_toml_str(&bad, "c.toml").err().unwrap().to_string();
    assert!(e.contains("smpi/send-is-detached-thresh"), "{e}");
    // SimGrid XML: <config> props, kept by name.
    let xml = "<?xml version='1.0'?><platform version=\"4.1\"><config><prop id=\"smpi/lat-factor\" value=\"0:2\"/></config><zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"1Gf\"/></zone></platform>";
    let p = crate::platform::xml::from_simgrid_xml_str(xml, "p.xml").unwrap();
    assert_eq!(p.config["smpi/lat-factor"], "0:2");
}

#[test]
fn platform_toml_loopback_sharing() {
    let text = "[cluster]\nhosts = 1\nbandwidth = \"1GBps\"\nlatency = \"1us\"\nloopback = { bandwidth = \"5GBps\", sharing = \"shared\" }\n";
    let lb = |p: &Platform| {
        p.links
            .iter()
            .find(|l| l.name.ends_with("loopback"))
            .unwrap()
            .sharing
    };
    let p = from_toml_str(text, "c.toml").unwrap();
    assert_eq!(lb(&p), Sharing::Shared);
    let p = from_toml_str(&text.replace(", sharing = \"shared\"", ""), "c.toml").unwrap();
    assert_eq!(lb(&p), Sharing::FatPipe);
    // Top-level loopback of an explicit platform, and a policy a loopback cannot have.
    let e = from_toml_str(&text.replace("\"shared\"", "\"splitduplex\""), "c.toml")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("loopback is shared or fatpipe"), "{e}");
}

#[test]
fn platform_toml_generators() {
    let p = from_toml_str(
        r#"
[cluster]
id = "c"
prefix = "n"
hosts = 4
bandwidth = "10Gbps"
latency = "1us"
cores = 4
watts = "100:200"
backbone = { bandwidth = "100Gbps", latency = "500ns", sharing = "fatpipe" }
"#,
        "c.toml",
    )
    .unwrap();
    assert_eq!(p.hosts.len(), 4);
    assert_eq!(p.hosts[0].cores, 4);
    assert_eq!(
        (p.hosts[0].watts_idle, p.hosts[0].watts_max),
        (100.0, 200.0)
    );
    assert_eq!(
        p.route_names(0, 1).unwrap(),
        ["c_link_0_UP", "c_backbone", "c_link_1_DOWN"]
    );
    assert_eq!(p.links[0].bandwidth, 1.25e10);
    let bb = p.link_id("c_backbone").unwrap() as usize;
    assert_eq!(p.links[bb].sharing, Sharing::FatPipe);

    let p = from_toml_str(
        "[fat_tree]\nbandwidth = 1e9\nlatency = 1e-5\ntopology = \"2;4,4;1,2;1,2\"\n",
        "ft.toml",
    )
    .unwrap();
    assert_eq!(p.hosts.len(), 16);
    assert_eq!(p.hosts[3].name, "node-3");
    let p2 = from_toml_str(
        "[fat_tree]\nbandwidth = 1e9\nlatency = 1e-5\ndown = [4, 4]\nup = [1, 2]\nparallel = [1, 2]\n",
        "ft2.toml",
    )
    .unwrap();
    for (a, b) in [(0, 10), (3, 7), (15, 15)] {
        assert_eq!(p.route_names(a, b).unwrap(), p2.route_names(a, b).unwrap());
    }
    let p = from_toml_str(
        "[torus]\nbandwidth = \"1GBps\"\nlatency = \"10us\"\ndims = [4, 4]\nloopback = { bandwidth = \"10GBps\" }\n",
        "t.toml",
    )
    .unwrap();
    assert_eq!(p.hosts.len(), 16);
    assert_eq!(p.route_names(5, 5).unwrap(), ["cluster_link_5_loopback"]);
    let p = from_toml_str(
        "[dragonfly]\nbandwidth = \"1GBps\"\nlatency = \"10us\"\ngroups = 2\nchassis = 2\nrouters = 2\nnodes = 2\n",
        "d.toml",
    )
    .unwrap();
    assert_eq!(p.hosts.len(), 16);
    let mut out = Vec::new();
    p.route(0, 15, &mut out).unwrap();
    assert_eq!(out.len(), 6);
}

#[test]
fn platform_toml_explicit() {
    let text = r#"
routing = "shortest"

[[host]]
name = "a"
speed = "2Gf"
cores = 8
watts = "100:93:200"
watts_off = 5

[[host]]
name = "b"

[[router]]
name = "r"

[[link]]
name = "ar"
bandwidth = "10Gbps"
latency = "2us"
sharing = "splitduplex"

[[link]]
name = "rb"
bandwidth = 1.25e9
latency = 2e-6

[[route]]
src = "a"
dst = "r"
links = ["ar:UP"]

[[route]]
src = "r"
dst = "b"
links = ["rb"]
"#;
    let p = from_toml_str(text, "e.toml").unwrap();
    assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP", "rb"]);
    assert_eq!(p.route_names(1, 0).unwrap(), ["rb", "ar_DOWN"]);
    assert_eq!(p.route_names(0, 0).unwrap(), ["__loopback__"]);
    let pw = p.host_power(0);
    assert_eq!(
        (pw.idle, pw.epsilon, pw.max, pw.off),
        (100.0, 93.0, 200.0, 5.0)
    );
    assert_eq!(p.hosts[0].speed, 2e9);
    // Full routing: only the declared routes exist.
    let full = text.replace("routing = \"shortest\"", "routing = \"full\"");
    let p = from_toml_str(&full, "f.toml").unwrap();
    assert!(matches!(
        p.route(0, 1, &mut Vec::new()),
        Err(PlatformError::NoRoute { .. })
    ));
    let full = full.replace("dst = \"r\"", "dst = \"b\"");
    let p = from_toml_str(&full, "f.toml").unwrap();
    assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP"]);
    assert_eq!(p.route_names(0, 0).unwrap(), ["__loopback__"]);
}

#[test]
fn platform_toml_documented_examples_parse() {
    // The examples of the module documentation are valid platforms.
    let src = include_str!("mod.rs");
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in src.lines().filter_map(|l| l.strip_prefix("//!")) {
        let line = line.strip_prefix(' ').unwrap_or(line);
        match (&mut cur, line.trim()) {
            (None, "```toml") => cur = Some(String::new()),
            (Some(_), "```") => blocks.extend(cur.take()),
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    assert_eq!(blocks.len(), 3);
    let p = from_toml_str(&blocks[0], "doc1.toml").unwrap();
    assert_eq!(p.hosts.len(), 16);
    assert_eq!(p.hosts[0].cores, 4);
    // The options block, added to the first platform.
    let p = from_toml_str(&(blocks[0].clone() + &blocks[1]), "doc1.toml").unwrap();
    assert_eq!(p.config["network/model"], "SMPI");
    let p = from_toml_str(&blocks[2], "doc2.toml").unwrap();
    assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP", "rb"]);
}

#[test]
fn platform_toml_errors_name_lines() {
    let e = from_toml_str(
        "[cluster]\nhosts = 4\nbandwidth = \"10Gbits\"\nlatency = 1\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("x.toml:3:") && e.contains("Gbits"), "{e}");
    let e = from_toml_str(
        "[cluster]\nhosts = 4\nbandwidth = 1\nlatency = 1\ncolor = 2\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("x.toml:") && e.contains("color"), "{e}");
    let e = from_toml_str(
        "[torus]\nbandwidth = 1\nlatency = 1\ndims = [2, 2]\nhosts = 5\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("4 hosts"), "{e}");
    let e = from_toml_str(
        "[[host]]\nname = \"a\"\n[[link]]\nname = \"l\"\nbandwidth = 1\n[[route]]\nsrc = \"a\"\ndst = \"zz\"\nlinks = [\"l\"]\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("x.toml:7:") && e.contains("zz"), "{e}");
    assert!(from_toml_str("", "x.toml").is_err());
    assert!(from_toml_str("[cluster]\n[torus]\n", "x.toml").is_err());
    assert!(from_toml_str("[cluster\n", "x.toml")
        .unwrap_err()
        .to_string()
        .starts_with("x.toml:1:"));
}
