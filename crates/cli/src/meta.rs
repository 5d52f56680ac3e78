//! What is made from the command tree itself (`Cli::command()`), so that it cannot drift
//! from the options the commands take: `mpiscope completions SHELL` (clap_complete),
//! `mpiscope man [DIR]` (one page per command, clap_mangen), and the tables of every
//! command's options in docs/CLI.md (`table::reference`; a unit test fails when the document is
//! stale, and `MPISCOPE_BLESS=1` rewrites it).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use mpiscope_files::Kind;

use crate::Cli;

/// Options of `mpiscope completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Options of `mpiscope man`.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// Directory of the pages (`mpiscope.1`, `mpiscope-trace.1`, ...); created if missing.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Replace an existing page that mpiscope did not write (never a directory, a symbolic
    /// link or a special file).
    #[arg(long)]
    force: bool,
    /// Do not list the pages written.
    #[arg(short, long)]
    quiet: bool,
    /// Print a JSON summary (the pages written) on stdout.
    #[arg(long)]
    json: bool,
}

/// A man page clap_mangen wrote: roff whose title line names an mpiscope command.
const MAN_PAGE: Kind = Kind::new("a man page", |h| {
    h.starts_with(b".ie \\n(.g .ds Aq") && mpiscope_files::has_marker(h, b".TH mpiscope")
});

/// Runs `mpiscope completions`: the script on stdout.
pub fn completions(a: CompletionsArgs) -> Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "mpiscope", &mut script);
    crate::outputs::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(0)
}

/// The pages of `cmd` and its visible subcommands, by file name (`mpiscope-overlap-bench.1`).
fn pages(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    let name = if prefix.is_empty() {
        cmd.get_name().to_string()
    } else {
        format!("{prefix}-{}", cmd.get_name())
    };
    let page_cmd = cmd
        .clone()
        .name(name.clone())
        .bin_name(name.replace('-', " "));
    let mut roff = Vec::new();
    clap_mangen::Man::new(page_cmd).render(&mut roff)?;
    out.push((format!("{name}.1"), roff));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() != "help" {
            pages(sub, &name, out)?;
        }
    }
    Ok(())
}

/// Runs `mpiscope man`: one page per command into the directory.
pub fn man(a: ManArgs) -> Result<i32> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut all = Vec::new();
    pages(&cmd, "", &mut all)?;
    std::fs::create_dir_all(&a.dir)
        .with_context(|| format!("cannot create {}", a.dir.display()))?;
    // Every page is judged before one is written, so a refused one costs nothing.
    for (file, _) in &all {
        mpiscope_files::check_output(&a.dir.join(file), &MAN_PAGE, a.force)?;
    }
    let mut written = Vec::new();
    for (file, roff) in &all {
        let path = a.dir.join(file);
        crate::outputs::write(&path, &MAN_PAGE, a.force, roff)?;
        written.push(path.display().to_string());
    }
    if !a.quiet {
        eprintln!(
            "mpiscope: wrote {} man pages in {}",
            written.len(),
            a.dir.display()
        );
    }
    if a.json {
        let v = serde_json::json!({
            "schema": crate::outputs::SCHEMA,
            "dir": a.dir.display().to_string(),
            "pages": written,
        });
        crate::outputs::write_stdout(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    }
    Ok(0)
}

/// The tables of docs/CLI.md, rendered from the command tree (checked by a test).
#[cfg(test)]
mod table {
    use super::*;

    /// The help of an argument or command on one line (`|` escaped for a Markdown table).
    fn one_line(help: Option<&clap::builder::StyledStr>) -> String {
        let text = help.map(|h| h.to_string()).unwrap_or_default();
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|")
    }

    /// How an argument is written: `-o, --output <OUTPUT>` (aliases listed apart).
    fn spelling(arg: &clap::Arg) -> String {
        let mut names = Vec::new();
        if let Some(s) = arg.get_short() {
            names.push(format!("-{s}"));
        }
        if let Some(l) = arg.get_long() {
            names.push(format!("--{l}"));
        }
        let takes_value = arg.get_action().takes_values();
        let value = arg
            .get_value_names()
            .map(|v| {
                v.iter()
                    .map(|n| format!("<{n}>"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
        if names.is_empty() {
            // A positional argument.
            let dots = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
                "..."
            } else {
                ""
            };
            return format!("{value}{dots}");
        }
        let mut s = names.join(", ");
        if takes_value {
            s.push(' ');
            s.push_str(&value);
        }
        s
    }

    /// Aliases, closed value lists and defaults of an argument, for the table's last column.
    fn details(arg: &clap::Arg) -> String {
        let mut parts = Vec::new();
        let aliases: Vec<String> = arg
            .get_visible_aliases()
            .unwrap_or_default()
            .iter()
            .map(|a| format!("--{a}"))
            .chain(
                arg.get_visible_short_aliases()
                    .unwrap_or_default()
                    .iter()
                    .map(|c| format!("-{c}")),
            )
            .collect();
        if !aliases.is_empty() {
            parts.push(format!("alias {}", aliases.join(", ")));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            parts.push(format!("one of {}", values.join(", ")));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            parts.push(format!("default {}", defaults.join(" ")));
        }
        parts.join("; ").replace('|', "\\|")
    }

    /// The section of one command and, after it, those of its subcommands.
    fn command_section(cmd: &clap::Command, path: &str, out: &mut String) {
        out.push_str(&format!(
            "### `{path}`\n\n{}\n\n",
            one_line(cmd.get_about())
        ));
        let args: Vec<&clap::Arg> = cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
            .collect();
        if !args.is_empty() {
            out.push_str("| option | meaning | values |\n|---|---|---|\n");
            for a in args {
                out.push_str(&format!(
                    "| `{}` | {} | {} |\n",
                    spelling(a),
                    one_line(a.get_help()),
                    details(a)
                ));
            }
            out.push('\n');
        }
        for sub in cmd.get_subcommands() {
            if !sub.is_hide_set() && sub.get_name() != "help" {
                command_section(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
    }

    /// The generated part of docs/CLI.md: every visible command with its options.
    pub fn reference() -> String {
        let mut cmd = Cli::command();
        cmd.build();
        let mut out = String::new();
        for sub in cmd.get_subcommands() {
            if !sub.is_hide_set() && sub.get_name() != "help" {
                command_section(sub, &format!("mpiscope {}", sub.get_name()), &mut out);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::table::reference;
    use super::*;

    /// docs/CLI.md's generated section is the command tree's (`MPISCOPE_BLESS=1` rewrites it).
    #[test]
    fn the_cli_reference_is_current() {
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/CLI.md");
        let text = std::fs::read_to_string(&doc).unwrap_or_default();
        let (begin, end) = ("<!-- commands:begin -->\n", "<!-- commands:end -->");
        let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
            panic!("docs/CLI.md has no `{begin}` ... `{end}` section");
        };
        let body = reference();
        if text[b + begin.len()..e] == body {
            return;
        }
        if std::env::var_os("MPISCOPE_BLESS").is_some() {
            let new = format!("{}{body}{}", &text[..b + begin.len()], &text[e..]);
            std::fs::write(&doc, new).unwrap();
        } else {
            panic!(
                "docs/CLI.md's command tables are stale: run `MPISCOPE_BLESS=1 cargo test -p \
                 mpiscope --bins the_cli_reference_is_current`"
            );
        }
    }

    #[test]
    fn the_reference_lists_every_command_and_option() {
        let r = reference();
        for c in [
            "mpiscope trace",
            "mpiscope overlap bench",
            "mpiscope man",
            "mpiscope plan",
        ] {
            assert!(r.contains(&format!("### `{c}`")), "{c}");
        }
        assert!(!r.contains("dgemm-worker"));
        assert!(
            r.contains("| `-o, --output <OUTPUT>` |"),
            "plan's and trace's -o"
        );
    }

    #[test]
    fn a_page_per_visible_command() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut all = Vec::new();
        pages(&cmd, "", &mut all).unwrap();
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        for n in [
            "mpiscope.1",
            "mpiscope-trace.1",
            "mpiscope-overlap-predict.1",
        ] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("dgemm")));
        for (n, roff) in &all {
            assert!((MAN_PAGE.ours)(roff), "{n} is not recognised as a man page");
        }
    }
}
