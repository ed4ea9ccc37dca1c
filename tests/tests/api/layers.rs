//! The platform crate's structure, checked: modules in layers, each using
//! only its own layer and those below (the HTTP layer uses auth, store and
//! model, never the reverse), and no circle of files importing each other.
//! Read from the sources' `crate::` and `super::` paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `shared/src`'s top-level modules, bottom layer first.
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "net",
        "aws",
        "aws_calls",
        "endpoints",
        "telemetry",
        "gate",
        "clock",
    ],
    &["model", "secrets"],
    &["auth", "links", "deployment_key", "keyring"],
    &[
        "store", "files", "sealed", "cursor", "config", "outbound", "queue",
    ],
    &["ratelimit", "state", "metrics"],
    &["http", "webhooks", "tracker"],
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src")
}

fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), &root(), &mut out);
    out
}

/// The code of `text` without its tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifier path after each `prefix` in `code` (`crate::store::engine::keys`
/// gives `["store", "keys"]`), braces of a `use` list included.
fn paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let head: Vec<String> = rest
            .split("::")
            .map(|part| {
                part.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|part| !part.is_empty())
            .collect();
        // `use super::{a, b::c}`: each name in the braces.
        if let Some(list) = rest.strip_prefix('{') {
            let inner: String = list.chars().take_while(|c| *c != '}').collect();
            for item in inner.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push(vec![name]);
                }
            }
        }
        if !head.is_empty() {
            found.push(head);
        }
    }
    found
}

#[test]
fn modules_use_only_their_layer_and_those_below() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, layer)| layer.iter().map(move |m| (*m, i)))
        .collect();
    let mut up = Vec::new();
    for (file, text) in sources() {
        if file == "lib.rs" {
            continue;
        }
        let module = file.split(['/', '.']).next().unwrap();
        let own = *layer_of
            .get(module)
            .unwrap_or_else(|| panic!("{module} is in no layer: add it to LAYERS"));
        for path in paths(&code(&text), "crate::") {
            let Some(&target) = layer_of.get(path[0].as_str()) else {
                continue;
            };
            if target > own {
                up.push(format!("{file} uses crate::{}", path.join("::")));
            }
        }
    }
    assert!(up.is_empty(), "arrows back up:\n{}", up.join("\n"));
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let files: BTreeSet<String> = sources().into_iter().map(|(f, _)| f).collect();
    // A module path's file, if it is a file of its own (not a folder's
    // `mod.rs`, whose children it declares).
    let file_of = |parts: &[String]| -> Option<String> {
        for n in (1..=parts.len()).rev() {
            let candidate = format!("{}.rs", parts[..n].join("/"));
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
        None
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in sources() {
        if file.ends_with("mod.rs") || file == "lib.rs" {
            continue;
        }
        let code = code(&text);
        let folder: Vec<String> = file
            .rsplit_once('/')
            .map(|(dir, _)| dir.split('/').map(str::to_owned).collect())
            .unwrap_or_default();
        let mut targets = BTreeSet::new();
        for path in paths(&code, "crate::") {
            targets.extend(file_of(&path));
        }
        for path in paths(&code, "super::") {
            let mut full = folder.clone();
            // In `error.rs`, `codes` is its child module `error/codes.rs`.
            if folder.is_empty() {
                full.push(file.trim_end_matches(".rs").to_owned());
            }
            full.extend(path);
            targets.extend(file_of(&full));
        }
        targets.remove(&file);
        edges.insert(file, targets);
    }
    // Depth-first search for a path back to where it started.
    fn circle(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        trail: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = trail.iter().position(|f| f == at) {
            return Some(trail[start..].to_vec());
        }
        if done.contains(at) {
            return None;
        }
        trail.push(at.to_owned());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(found) = circle(next, edges, trail, done) {
                return Some(found);
            }
        }
        trail.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for file in edges.keys() {
        if let Some(found) = circle(file, &edges, &mut Vec::new(), &mut done) {
            panic!(
                "files import each other in a circle: {}",
                found.join(" -> ")
            );
        }
    }
}
