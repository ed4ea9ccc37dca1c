//! Which function serves a route: the workspace's routing table
//! (`[workspace.metadata.lambda.watch.router]` in `Cargo.toml`, the
//! one place that says it; `contract::` checks it against the template),
//! read in at build time. A request's metrics name the function that
//! serves its route in Lambda, in the dev server (every route in one
//! process) and in tests alike.

use std::collections::HashMap;
use std::sync::LazyLock;

const WORKSPACE: &str = include_str!("../../../Cargo.toml");

static FUNCTIONS: LazyLock<HashMap<&'static str, &'static str>> =
    LazyLock::new(|| routes(WORKSPACE));

/// The function that serves `path` (a route template, as matched), or
/// None for a path no function routes.
pub fn function_of(path: &str) -> Option<&'static str> {
    FUNCTIONS.get(path).copied()
}

/// The `"path" = "function"` lines of `manifest`'s routing table.
fn routes(manifest: &'static str) -> HashMap<&'static str, &'static str> {
    let mut inside = false;
    let mut routes = HashMap::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[workspace.metadata.lambda.watch.router]";
            continue;
        }
        if !inside {
            continue;
        }
        let Some((path, function)) = line.split_once('=') else {
            continue;
        };
        let unquote = |s: &'static str| s.trim().strip_prefix('"')?.strip_suffix('"');
        if let (Some(path), Some(function)) = (unquote(path), unquote(function)) {
            routes.insert(path, function);
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_read_from_the_workspace_table() {
        assert_eq!(function_of("/api/v1/sites/{siteId}"), Some("sites"));
        assert_eq!(
            function_of("/api/v1/receiving-points"),
            Some("receiving-points")
        );
        assert_eq!(function_of("/openapi.yaml"), Some("docs"));
        assert_eq!(function_of("/nowhere"), None);
        // Only that table: a quoted line elsewhere is not a route.
        let manifest =
            "[a]\n\"/x\" = \"y\"\n[workspace.metadata.lambda.watch.router]\n\"/z\" = \"w\"\n";
        assert_eq!(
            routes(manifest).into_iter().collect::<Vec<_>>(),
            [("/z", "w")]
        );
    }
}
