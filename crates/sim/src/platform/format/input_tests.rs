//! What the platform readers refuse (numbers that are not positive, elements nested too
//! deep) and what they warn about (options mpiscope does not read), in both formats.

use super::toml::from_toml_str;
use super::xml::{from_simgrid_xml_str, MAX_DEPTH};
use crate::platform::Platform;

fn xml(body: &str) -> String {
    format!("<?xml version='1.0'?>\n<platform version=\"4.1\">\n{body}\n</platform>\n")
}

fn xml_err(text: &str) -> String {
    match from_simgrid_xml_str(text, "p.xml") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

fn toml_err(text: &str) -> String {
    match from_toml_str(text, "p.toml") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn xml_speeds_must_be_positive() {
    let zone = |host: &str| {
        xml(&format!(
            "<zone id=\"z\" routing=\"Full\">\n{host}\n</zone>"
        ))
    };
    let e = xml_err(&zone("<host id=\"h\" speed=\"0f\"/>"));
    assert!(
        e.starts_with("p.xml:4: host `h`: speed must be a positive"),
        "{e}"
    );
    let e = xml_err(&zone("<host id=\"h\" speed=\"1Gf,0f\" pstate=\"1\"/>"));
    assert!(e.contains("speed must be a positive"), "{e}");
    let e = xml_err(&zone(
        "<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-1\" speed=\"0Gf\" bw=\"1GBps\" lat=\"1us\"/>",
    ));
    assert!(e.starts_with("p.xml:4: cluster `c`: speed"), "{e}");
    let e = xml_err(&zone(
        "<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-1\" speed=\"1Gf\" bw=\"0Bps\" lat=\"1us\"/>",
    ));
    assert!(
        e.starts_with("p.xml:4:") && e.contains("bandwidth must be a positive"),
        "{e}"
    );
    let e = xml_err(&zone(
        "<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-1\" speed=\"1Gf\" bw=\"1GBps\" lat=\"-1us\"/>",
    ));
    assert!(e.starts_with("p.xml:4:"), "{e}");
    let e = xml_err(&xml(
        "<config><prop id=\"network/loopback-bw\" value=\"0\"/></config>\n\
         <zone id=\"z\" routing=\"Full\"><host id=\"h\" speed=\"1Gf\"/></zone>",
    ));
    assert!(
        e.starts_with("p.xml:3: network/loopback-bw must be positive"),
        "{e}"
    );
}

#[test]
fn xml_nesting_is_limited() {
    let nest = |n: usize| {
        let open: String = (0..n)
            .map(|i| format!("<zone id=\"z{i}\" routing=\"Full\">\n"))
            .collect();
        xml(&format!(
            "{open}<host id=\"h\" speed=\"1Gf\"/>\n{}",
            "</zone>\n".repeat(n)
        ))
    };
    // The platform element and MAX_DEPTH - 2 zones: the host is at the limit.
    let p = from_simgrid_xml_str(&nest(MAX_DEPTH - 2), "p.xml").unwrap();
    assert_eq!(p.hosts.len(), 1);
    // Deep enough to overflow the stack of a recursive reader.
    let e = xml_err(&nest(10_000));
    // Line 2 is <platform>; the zone nested MAX_DEPTH + 1 deep opens on the line after
    // MAX_DEPTH - 1 zones.
    assert!(
        e.starts_with(&format!(
            "p.xml:{}: elements nested {} deep; a platform nests at most {MAX_DEPTH}",
            MAX_DEPTH + 2,
            MAX_DEPTH + 1
        )),
        "{e}"
    );
}

#[test]
fn toml_speeds_and_bandwidths_must_be_positive() {
    let gen = "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n";
    let e = toml_err(&format!("{gen}speed = \"0f\"\n"));
    assert!(e.contains("speed must be a positive number"), "{e}");
    let e = toml_err(&gen.replace("\"1GBps\"", "0"));
    assert!(e.contains("bandwidth must be a positive number"), "{e}");
    let e = toml_err(&gen.replace("\"1GBps\"", "\"inf\""));
    assert!(e.contains("bandwidth must be a positive number"), "{e}");
    let e = toml_err(&format!("{gen}cores = 0\n"));
    assert!(e.contains("at least one core"), "{e}");
    let explicit = "[[host]]\nname = \"a\"\nspeed = 0\n[[host]]\nname = \"b\"\n\
                    [[link]]\nname = \"l\"\nbandwidth = \"1GBps\"\n\
                    [[route]]\nsrc = \"a\"\ndst = \"b\"\nlinks = [\"l\"]\n";
    let e = toml_err(explicit);
    assert!(e.contains("host `a`: speed must be a positive"), "{e}");
    let e = toml_err(&format!("routing = \"full\"\n{explicit}"));
    assert!(
        e.starts_with("p.toml:3:") && e.contains("speed must be a positive"),
        "{e}"
    );
}

fn warnings(p: &Platform) -> Vec<String> {
    p.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn unknown_options_are_warned_about_once_with_their_line() {
    let text = xml("<config>\n\
         <prop id=\"smpi/bw-factor\" value=\"0:0.5\"/>\n\
         <prop id=\"smpi/privatization\" value=\"1\"/>\n\
         <prop id=\"network/wieght-S\" value=\"8775\"/>\n\
         <prop id=\"network/wieght-S\" value=\"8775\"/>\n\
         </config>\n\
         <zone id=\"z\" routing=\"Full\"><host id=\"h\" speed=\"1Gf\"/></zone>");
    let p = from_simgrid_xml_str(&text, "p.xml").unwrap();
    assert_eq!(
        warnings(&p),
        [
            "p.xml:5: option `smpi/privatization` is SimGrid's but mpiscope does not model it: \
             ignored",
            "p.xml:6: unknown option `network/wieght-S` (did you mean `network/weight-S`?): \
             neither mpiscope nor SimGrid reads it; ignored",
        ]
    );
    // The options are still kept (a front end may read more of them).
    assert_eq!(p.config["network/wieght-S"], "8775");
    let text = "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n\n[config]\n\
                \"smpi/send-is-detached-thresh\" = 1024\n\"mpiscope/dgem\" = \"1e-11 0\"\n\
                \"network/loopback-bw\" = 1e9\n";
    let p = from_toml_str(text, "p.toml").unwrap();
    let w = warnings(&p);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with(
            "p.toml:8: unknown option `mpiscope/dgem` (did you mean `mpiscope/dgemm`?)"
        ),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("p.toml:9: option `network/loopback-bw` is read from SimGrid XML"),
        "{w:?}"
    );
    let p = from_toml_str(
        "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n",
        "p.toml",
    )
    .unwrap();
    assert!(p.warnings.is_empty());
}

/// The calibrated values written to a platform's `[config]` read back the same, from a
/// TOML platform and from a SimGrid XML one, without warnings.
#[test]
fn calibration_round_trips_through_both_formats() {
    use crate::calibration::{self, Calibration, Key};
    let c = calibration::sample();
    let text = format!(
        "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n\n[config]\n{}",
        c.to_config()
    );
    let p = from_toml_str(&text, "p.toml").unwrap();
    assert_eq!(warnings(&p), Vec::<String>::new());
    assert_eq!(Calibration::from_config(&p.config).unwrap(), c);
    // In XML the values are attributes: the TOML quoting goes.
    let props: String = Key::ALL
        .iter()
        .filter_map(|&k| c.line(k))
        .map(|l| {
            let (k, v) = l.trim_end().split_once(" = ").unwrap();
            format!("<prop id={k} value=\"{}\"/>\n", v.trim_matches('"'))
        })
        .collect();
    let text = xml(&format!(
        "<config>\n{props}</config>\n<zone id=\"z\" routing=\"Full\"><host id=\"h\" speed=\"1Gf\"/></zone>"
    ));
    let p = from_simgrid_xml_str(&text, "p.xml").unwrap();
    assert_eq!(warnings(&p), Vec::<String>::new());
    assert_eq!(Calibration::from_config(&p.config).unwrap(), c);
}
