//! Renders the OpenAPI description as one self-contained HTML page: inline
//! CSS, no scripts, no fonts or assets from the network.

use std::fmt::Write;

use serde_json::Value;

pub const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

const STYLE: &str = "
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
main{max-width:980px;margin:0 auto;padding:24px}
nav{background:#1d2330;color:#fff;padding:16px 24px}nav a{color:#cfe3ff;margin-right:14px}
h1{margin:0 0 4px}h2{border-bottom:1px solid #dde;padding-bottom:4px;margin-top:40px}
code{background:#eef1f5;padding:1px 4px;border-radius:3px;font-size:13px}
table{border-collapse:collapse;width:100%;margin:8px 0 16px}th,td{border:1px solid #dde;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f6}.op{background:#fff;border:1px solid #dde;border-radius:6px;padding:4px 18px 12px;margin:18px 0}
.m{display:inline-block;min-width:58px;text-align:center;border-radius:4px;color:#fff;font-weight:600;padding:2px 6px;margin-right:8px}
.get{background:#2b7bd6}.post{background:#2e9d5b}.patch{background:#c98a12}.put{background:#8a5cc9}.delete{background:#c9412e}
.path{font-family:ui-monospace,monospace;font-size:16px}.muted{color:#667}";

/// The HTML id of an operation.
pub fn anchor(method: &str, path: &str) -> String {
    let slug: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("op-{method}{slug}")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn markdown(text: &str) -> String {
    let mut out = String::new();
    let options = pulldown_cmark::Options::ENABLE_TABLES;
    pulldown_cmark::html::push_html(&mut out, pulldown_cmark::Parser::new_ext(text, options));
    out
}

/// Follows a local `$ref` (`#/components/...`).
fn resolve<'a>(spec: &'a Value, value: &'a Value) -> &'a Value {
    match value
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
    {
        Some(pointer) => spec
            .pointer(pointer)
            .map_or(value, |target| resolve(spec, target)),
        None => value,
    }
}

fn type_name(spec: &Value, schema: &Value) -> String {
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        let target = resolve(spec, schema);
        return if target.get("properties").is_some() {
            format!("<a href=\"#schema-{name}\">{name}</a>")
        } else {
            type_name(spec, target)
        };
    }
    // OpenAPI 3.1: `type: [string, "null"]`, or `anyOf: [{$ref}, {type: "null"}]`.
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let nullable = types.contains(&"null");
    if let Some(other) = null_branch(schema) {
        return format!("{}, nullable", type_name(spec, other));
    }
    // `not: {}` matches nothing: a property a request may not carry.
    if schema
        .get("not")
        .is_some_and(|n| n.as_object().is_some_and(|o| o.is_empty()))
    {
        return "not accepted (read-only)".into();
    }
    let mut name = match types.into_iter().find(|t| *t != "null") {
        Some("array") => format!(
            "array of {}",
            schema
                .get("items")
                .map_or("any".into(), |i| type_name(spec, i))
        ),
        Some(t) => t.to_owned(),
        None if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => {
            "one of several".into()
        }
        None => "object".into(),
    };
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        let _ = write!(name, " ({format})");
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values
            .iter()
            .map(|v| {
                format!(
                    "<code>{}</code>",
                    escape(v.as_str().unwrap_or(&v.to_string()))
                )
            })
            .collect();
        let _ = write!(name, ": {}", list.join(", "));
    }
    if nullable {
        name.push_str(", nullable");
    }
    name
}

/// The non-null branch of `anyOf: [X, {type: "null"}]`.
fn null_branch(schema: &Value) -> Option<&Value> {
    let branches = schema.get("anyOf")?.as_array()?;
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    match branches.as_slice() {
        [a, b] if is_null(b) => Some(a),
        [a, b] if is_null(a) => Some(b),
        _ => None,
    }
}

fn properties_table(spec: &Value, schema: &Value) -> String {
    let schema = resolve(spec, schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return format!("<p>{}</p>", type_name(spec, schema));
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from(
        "<table><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr>",
    );
    for (name, property) in properties {
        let description = property
            .get("description")
            .or_else(|| resolve(spec, property).get("description"));
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            type_name(spec, property),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            description
                .and_then(Value::as_str)
                .map(markdown)
                .unwrap_or_default()
        );
    }
    out.push_str("</table>");
    out
}

fn operation(
    spec: &Value,
    method: &str,
    path: &str,
    op: &Value,
    shared_params: &[Value],
) -> String {
    let text = |key: &str| op.get(key).and_then(Value::as_str).unwrap_or("");
    let mut out = format!(
        "<section class=\"op\" id=\"{}\"><h3><span class=\"m {method}\">{}</span><span class=\"path\">{}</span></h3><p><strong>{}</strong></p>{}",
        anchor(method, path),
        method.to_uppercase(),
        escape(path),
        escape(text("summary")),
        markdown(text("description"))
    );
    let security = op.get("security").or_else(|| spec.get("security"));
    if security
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        out.push_str("<p class=\"muted\">No authentication.</p>");
    } else {
        out.push_str(
            "<p class=\"muted\">Needs an API key (<code>Authorization: Bearer</code> or <code>X-Api-Key</code>).</p>",
        );
    }
    let params: Vec<&Value> = shared_params
        .iter()
        .chain(
            op.get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .map(|p| resolve(spec, p))
        .collect();
    if !params.is_empty() {
        out.push_str("<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr>");
        for p in params {
            let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(field("name")),
                escape(field("in")),
                p.get("schema")
                    .map(|s| type_name(spec, s))
                    .unwrap_or_default(),
                markdown(field("description"))
            );
        }
        out.push_str("</table>");
    }
    if let Some(body) = op.get("requestBody").map(|b| resolve(spec, b)) {
        out.push_str("<h4>Request body</h4>");
        out.push_str(&markdown(
            body.get("description")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ));
        if let Some(schema) = body.pointer("/content/application~1json/schema") {
            out.push_str(&properties_table(spec, schema));
        }
    }
    out.push_str("<h4>Responses</h4><table><tr><th>Status</th><th>Description</th></tr>");
    for (status, response) in op
        .get("responses")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let response = resolve(spec, response);
        let mut description = markdown(
            response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        // The codes this response may carry (of the one `ErrorCode` list).
        if let Some(codes) = response.get("x-error-codes").and_then(Value::as_array) {
            let list: Vec<String> = codes
                .iter()
                .filter_map(Value::as_str)
                .map(|c| format!("<code>{}</code>", escape(c)))
                .collect();
            let _ = write!(description, "<p>Codes: {}</p>", list.join(", "));
        }
        let _ = write!(
            out,
            "<tr><td><strong>{}</strong></td><td>{description}</td></tr>",
            escape(status)
        );
    }
    out.push_str("</table></section>");
    out
}

pub fn render(spec: &Value) -> String {
    let info = &spec["info"];
    let title = escape(info["title"].as_str().unwrap_or("API"));
    let version = escape(info["version"].as_str().unwrap_or(""));
    let mut nav = String::new();
    let mut body = String::new();
    for (path, item) in spec["paths"].as_object().into_iter().flatten() {
        let shared_params: Vec<Value> = item
            .get("parameters")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let _ = write!(
                    nav,
                    "<li><a href=\"#{}\"><code>{} {}</code></a></li>",
                    anchor(method, path),
                    method.to_uppercase(),
                    escape(path)
                );
                body.push_str(&operation(spec, method, path, op, &shared_params));
            }
        }
    }
    // Events the service sends (the description's `webhooks`).
    let mut events = String::new();
    for (name, item) in spec["webhooks"].as_object().into_iter().flatten() {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let _ = write!(
                    nav,
                    "<li><a href=\"#{}\"><code>event {}</code></a></li>",
                    anchor(method, name),
                    escape(name)
                );
                events.push_str(&operation(spec, method, name, op, &[]));
            }
        }
    }
    if !events.is_empty() {
        body.push_str("<h2 id=\"events\">Events (outbound webhooks)</h2>");
        body.push_str(&events);
    }
    let mut schemas = String::new();
    for (name, schema) in spec
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if schema.get("properties").is_some() {
            let _ = write!(
                schemas,
                "<h3 id=\"schema-{name}\">{name}</h3>{}{}",
                markdown(
                    schema
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                ),
                properties_table(spec, schema)
            );
        }
    }
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title} {version}</title><style>{STYLE}</style></head><body>\
         <nav><strong>{title}</strong> <span class=\"muted\">v{version}</span> &nbsp; <a href=\"#operations\">Operations</a><a href=\"#schemas\">Schemas</a><a href=\"/openapi.yaml\">openapi.yaml</a></nav>\
         <main><h1>{title}</h1><p class=\"muted\">Version {version}</p>{}\
         <h2 id=\"operations\">Operations</h2><ul>{nav}</ul>{body}<h2 id=\"schemas\">Schemas</h2>{schemas}</main></body></html>",
        markdown(info["description"].as_str().unwrap_or(""))
    )
}
