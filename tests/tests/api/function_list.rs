//! The function list. Every directory under `functions/` is one Lambda
//! function and nothing else is: the workspace's members (`functions/*`),
//! the Makefile's `FUNCTIONS` and the bench read the list from there. The
//! lists that cannot be derived from it are checked against it here: the
//! template's functions, the workspace's dependencies, the crates that take
//! every function (the dev server, this test crate), the dev server's
//! router and dispatcher, and cargo-lambda's router table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The one list: the directories under `functions/`.
fn functions() -> BTreeSet<String> {
    std::fs::read_dir(root().join("functions"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The values after `key` on lines of `text` (`Binary: orgs` → `orgs`).
fn values_after<'a>(text: &'a str, key: &'a str) -> impl Iterator<Item = String> + 'a {
    text.lines()
        .filter_map(move |line| line.trim().strip_prefix(key))
        .map(|rest| rest.trim().trim_matches('"').to_string())
}

/// The names a manifest takes from the workspace (`orgs.workspace = true`).
fn workspace_dependencies(manifest: &str) -> BTreeSet<String> {
    read(manifest)
        .lines()
        .filter_map(|line| line.trim().strip_suffix(".workspace = true"))
        .map(str::to_string)
        .collect()
}

/// The lines of one `[section]` of a TOML file.
fn section<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|line| line.trim() != header)
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .collect()
}

fn module(function: &str) -> String {
    function.replace('-', "_")
}

fn has_routes(function: &str) -> bool {
    std::fs::read_to_string(root().join(format!("functions/{function}/src/lib.rs")))
        .is_ok_and(|lib| lib.contains(".route("))
}

fn differences(what: &str, have: &BTreeSet<String>, want: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for name in want.difference(have) {
        found.push(format!("{what} lacks {name}"));
    }
    for name in have.difference(want) {
        found.push(format!(
            "{what} has {name}, which is no directory under functions/"
        ));
    }
    found
}

#[test]
fn every_list_of_the_functions_is_the_directories_under_functions() {
    let functions = functions();
    assert!(functions.len() >= 15, "functions/: {functions:?}");
    let mut found = Vec::new();

    let template = read("infra/template.yaml");
    let binaries = values_after(&template, "Binary:").collect();
    found.extend(differences(
        "infra/template.yaml (Metadata.Binary)",
        &binaries,
        &functions,
    ));

    let cargo = read("Cargo.toml");
    let paths: BTreeSet<String> = section(&cargo, "[workspace.dependencies]")
        .into_iter()
        .filter_map(|line| {
            let (name, rest) = line.split_once('=')?;
            let path = rest
                .split("path = \"functions/")
                .nth(1)?
                .split('"')
                .next()?;
            if name.trim() != path {
                found.push(format!(
                    "Cargo.toml: {} names functions/{path}",
                    name.trim()
                ));
            }
            Some(path.to_string())
        })
        .collect();
    found.extend(differences(
        "Cargo.toml's [workspace.dependencies]",
        &paths,
        &functions,
    ));

    for manifest in ["tools/local/Cargo.toml", "tests/Cargo.toml"] {
        let taken = workspace_dependencies(manifest);
        for name in functions.difference(&taken) {
            found.push(format!("{manifest} does not take {name}"));
        }
    }

    let dev_server: String = std::fs::read_dir(root().join("tools/local/src"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "rs"))
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap())
        .collect();
    for name in &functions {
        let merged = format!(".merge({}::routes())", module(name));
        if has_routes(name) != dev_server.contains(&merged) {
            found.push(format!(
                "tools/local/src: {merged} is there exactly when {name} has routes"
            ));
        }
        if !has_routes(name) && !dev_server.contains(&format!("{}::", module(name))) {
            found.push(format!(
                "the dev server (tools/local/src) does not run {name}, which has no routes"
            ));
        }
    }

    let watched: BTreeSet<String> = section(&cargo, "[workspace.metadata.lambda.watch.router]")
        .into_iter()
        .filter_map(|line| {
            line.split_once('=')
                .map(|(_, f)| f.trim().trim_matches('"').to_string())
        })
        .collect();
    let routed = functions
        .iter()
        .filter(|f| has_routes(f))
        .cloned()
        .collect();
    found.extend(differences(
        "Cargo.toml's cargo-lambda router",
        &watched,
        &routed,
    ));

    assert!(
        found.is_empty(),
        "the function lists disagree:\n{}",
        found.join("\n")
    );
}
