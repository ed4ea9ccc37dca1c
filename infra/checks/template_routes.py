"""check_template's second and third checks: every operation of the
description is routed and every route described; each function's routes
are its crate's, as the cargo-lambda router says."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from template_refs import (
    ADMIN_API,
    ADMIN_ROUTES,
    API,
    DEFAULT_ROUTE,
    DOCS_BINARY,
    HTTP_API,
    METHODS,
    functions,
    ref,
)

# ---------------------------------------------------------------------------
# 2. Routes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    function: str
    event: str
    api: str | None
    method: str  # upper case; "ANY"; DEFAULT_ROUTE for $default
    path: str  # DEFAULT_ROUTE for $default


def http_routes(template: dict) -> tuple[list[Route], list[str]]:
    routes, found = [], []
    for fid, resource in functions(template).items():
        events = (resource.get("Properties") or {}).get("Events") or {}
        for name, event in events.items():
            if event.get("Type") != "HttpApi":
                continue
            props = event.get("Properties") or {}
            api = ref(props.get("ApiId"))
            method, path = props.get("Method"), props.get("Path")
            if api is None:
                found.append(
                    f"{fid}: event {name} has no ApiId (SAM would create an implicit "
                    f"API): route it on {API} or {ADMIN_API}"
                )
            if (method is None) != (path is None):
                found.append(f"{fid}: event {name} needs both Method and Path (or neither, for $default)")
                continue
            if path is None:
                method = path = DEFAULT_ROUTE
            routes.append(Route(fid, name, api, str(method).upper(), str(path)))
    return routes, found


def documented(description: dict) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in (description.get("paths") or {}).items()
        for method in item
        if method in METHODS
    }


def route_problems(template: dict, description: dict) -> list[str]:
    routes, found = http_routes(template)
    apis = {
        rid for rid, r in template.get("Resources", {}).items() if r.get("Type") == HTTP_API
    }
    binary = {fid: (r.get("Metadata") or {}).get("Binary") for fid, r in functions(template).items()}
    for name in (API, ADMIN_API):
        if name not in apis:
            found.append(f"infra/template.yaml has no {HTTP_API} named {name}")
    seen = {}
    for route in routes:
        if route.api is not None and route.api not in apis:
            found.append(f"{route.function}: event {route.event} names ApiId {route.api}, which is no {HTTP_API}")
        key = (route.api, route.method, route.path)
        if key in seen:
            found.append(
                f"{route.api}: {route.method} {route.path} is routed twice "
                f"({seen[key]} and {route.function}.{route.event})"
            )
        seen[key] = f"{route.function}.{route.event}"

    ops = documented(description)
    doc_paths = {path for _, path in ops}
    api_routes = [r for r in routes if r.api == API]
    for method, path in sorted(ops):
        if not any(r.path == path and r.method in (method, "ANY") for r in api_routes):
            found.append(
                f"{method} {path} is in the description (functions/docs/openapi.yaml) "
                f"but not routed on {API} in infra/template.yaml"
            )
    for r in api_routes:
        if r.path == DEFAULT_ROUTE:
            continue
        if r.path not in doc_paths:
            found.append(
                f"{API} routes {r.method} {r.path} ({r.function}) but the description "
                "(functions/docs/openapi.yaml) has no such path"
            )
        elif r.method != "ANY" and (r.method, r.path) not in ops:
            found.append(
                f"{API} routes {r.method} {r.path} ({r.function}) but the description "
                f"does not document {r.method} on it"
            )
    for api in (API, ADMIN_API):
        defaults = [r for r in routes if r.api == api and r.path == DEFAULT_ROUTE]
        if len(defaults) != 1 or binary.get(defaults[0].function) != DOCS_BINARY:
            found.append(
                f"{api}: the $default route (unknown paths, JSON 404) must go to the "
                f"function of binary {DOCS_BINARY}"
            )

    admin = {(r.method, r.path) for r in routes if r.api == ADMIN_API and r.path != DEFAULT_ROUTE}
    for method, path in sorted(ADMIN_ROUTES - admin):
        found.append(
            f"{ADMIN_API} (the admin host) does not route {method} {path}: the contract "
            "has /openapi.yaml and /docs answer on the API host and the admin host"
        )
    for method, path in sorted(admin - ADMIN_ROUTES):
        found.append(f"{ADMIN_API} (the admin host) routes {method} {path}: it serves /openapi.yaml and /docs only")
    for r in routes:
        if r.api == ADMIN_API and binary.get(r.function) != DOCS_BINARY:
            found.append(f"{ADMIN_API} routes {r.method} {r.path} to {r.function}, not to the docs function")
    return found


# ---------------------------------------------------------------------------
# 3. Functions, crates, the dev server, the cargo-lambda router
# ---------------------------------------------------------------------------


@dataclass
class Crate:
    name: str
    binaries: set[str]
    routes: set[str]  # paths its router declares (src/lib.rs)


@dataclass
class Workspace:
    crates: dict[str, Crate]
    router: dict[str, str]  # [workspace.metadata.lambda.watch.router]
    notes: list[str] = field(default_factory=list)


ROUTE_DECLARATION = re.compile(r'\.route\(\s*"([^"]+)"')


def read_workspace(root: Path) -> Workspace:
    crates = {}
    for manifest in sorted((root / "functions").glob("*/Cargo.toml")):
        data = tomllib.loads(manifest.read_text())
        name = data["package"]["name"]
        binaries = {b["name"] for b in data.get("bin", [])}
        if (manifest.parent / "src/main.rs").exists():
            binaries.add(name)
        lib = manifest.parent / "src/lib.rs"
        routes = set(ROUTE_DECLARATION.findall(lib.read_text())) if lib.exists() else set()
        crates[name] = Crate(name, binaries, routes)
    cargo = tomllib.loads((root / "Cargo.toml").read_text())
    router = cargo.get("workspace", {}).get("metadata", {}).get("lambda", {}).get("watch", {}).get("router", {})
    return Workspace(
        crates=crates,
        router=dict(router),
    )


def function_problems(template: dict, workspace: Workspace) -> list[str]:
    found = []
    routes, _ = http_routes(template)
    crates = workspace.crates
    owner_of_binary = {b: c for c in crates.values() for b in c.binaries}
    crate_of_function = {}
    for fid, resource in functions(template).items():
        metadata = resource.get("Metadata") or {}
        binary = metadata.get("Binary")
        if metadata.get("BuildMethod") != "rust-cargolambda" or not binary:
            found.append(f"{fid}: Metadata needs BuildMethod rust-cargolambda and the Binary it runs")
            continue
        crate = owner_of_binary.get(binary)
        if crate is None:
            found.append(f"{fid}: Binary {binary} is no binary of a crate under functions/")
            continue
        if crate.name in crate_of_function.values():
            found.append(f"{fid}: crate {crate.name} already has a function in infra/template.yaml")
        crate_of_function[fid] = crate.name

    template_paths: dict[str, str] = {}  # path -> crate, on the API host
    for fid, crate_name in crate_of_function.items():
        crate = crates[crate_name]
        paths = {r.path for r in routes if r.function == fid and r.api == API and r.path != DEFAULT_ROUTE}
        for path in paths:
            template_paths[path] = crate_name
        for path in sorted(crate.routes - paths):
            found.append(f"{fid}: crate {crate_name}'s router declares {path}, which the template does not route to it")
        for path in sorted(paths - crate.routes):
            found.append(f"{fid}: the template routes {path} to it, but crate {crate_name}'s router has no such route")
    for path in sorted(set(template_paths) | set(workspace.router)):
        want, have = template_paths.get(path), workspace.router.get(path)
        if want is None:
            found.append(f"Cargo.toml's cargo-lambda router sends {path} to {have}, but the template does not route it")
        elif have is None:
            found.append(f"Cargo.toml's cargo-lambda router lacks {path} (the template sends it to {want})")
        elif want != have:
            found.append(f"{path}: the template sends it to {want}, Cargo.toml's cargo-lambda router to {have}")
    return found
