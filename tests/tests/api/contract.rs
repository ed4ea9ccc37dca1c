//! The OpenAPI description, the SAM template, the cargo-lambda router and
//! the routers agree, both ways.

use std::collections::BTreeSet;

use api_tests::{call, org, run};
use http::Method;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Documented (METHOD, path) pairs.
fn documented() -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        for method in METHODS.iter().filter(|m| item.get(**m).is_some()) {
            ops.insert((method.to_uppercase(), path.clone()));
        }
    }
    ops
}

fn template() -> Yaml {
    serde_yaml_ng::from_str(&std::fs::read_to_string(root().join("infra/template.yaml")).unwrap())
        .unwrap()
}

/// HttpApi event paths of every function in the SAM template.
fn deployed_paths() -> BTreeSet<String> {
    let template = template();
    let mut paths = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        for (_, event) in resource["Properties"]["Events"]
            .as_mapping()
            .into_iter()
            .flatten()
        {
            if let Some(path) = event["Properties"]["Path"].as_str() {
                paths.insert(path.to_owned());
            }
        }
    }
    paths
}

#[test]
fn every_documented_path_is_deployed_and_every_deployed_path_documented() {
    let documented: BTreeSet<String> = documented().into_iter().map(|(_, p)| p).collect();
    assert_eq!(deployed_paths(), documented);
}

#[test]
fn cargo_lambda_router_covers_the_documented_paths() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let section = manifest
        .split("[workspace.metadata.lambda.watch.router]")
        .nth(1)
        .expect("router table");
    let routed: BTreeSet<String> = section
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| {
            l.trim()
                .strip_prefix('"')
                .and_then(|l| l.split_once('"'))
                .map(|(p, _)| p.to_owned())
        })
        .collect();
    let documented: BTreeSet<String> = documented().into_iter().map(|(_, p)| p).collect();
    assert_eq!(routed, documented);
}

#[test]
fn description_is_version_1_0_0_and_protected_operations_list_common_errors() {
    assert_eq!(docs::OPENAPI["info"]["version"], "1.0.0");
    for (method, path) in documented() {
        let op = &docs::OPENAPI["paths"][&path][method.to_lowercase()];
        let responses = op["responses"].as_object().unwrap();
        if path.starts_with("/api/v1/") {
            for status in ["401", "403", "429", "500"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path} does not document {status}"
                );
            }
            assert_ne!(
                op["security"],
                Value::Array(vec![]),
                "{method} {path} must need a key"
            );
        }
    }
}

#[test]
fn routers_serve_exactly_the_documented_operations() {
    run(async {
        let t = org().await;
        let documented = documented();
        let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
        for path in paths {
            let concrete: Vec<String> = path
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        t.id().to_string()
                    } else {
                        segment.to_owned()
                    }
                })
                .collect();
            let concrete = concrete.join("/");
            for method in METHODS {
                let method = method.to_uppercase();
                let reply = call(Method::from_bytes(method.as_bytes()).unwrap(), &concrete)
                    .key(&t.key)
                    .send()
                    .await;
                if documented.contains(&(method.clone(), path.clone())) {
                    assert!(
                        !["not_found", "method_not_allowed"].contains(&reply.code()),
                        "{method} {path} is documented but not served: {}",
                        reply.text
                    );
                } else {
                    reply.expect(405, Some("method_not_allowed"));
                }
            }
        }
    });
}

#[test]
fn served_description_and_reference() {
    run(async {
        let yaml = call(Method::GET, "/openapi.yaml").send().await;
        yaml.expect(200, None);
        assert!(yaml.header("content-type").starts_with("application/yaml"));
        assert_eq!(yaml.text, docs::OPENAPI_YAML);
        // The same document as JSON, for clients that ask for JSON only.
        let json = call(Method::GET, "/openapi.yaml")
            .header("accept", "application/json")
            .send()
            .await;
        json.expect(200, None);
        assert_eq!(json.header("content-type"), "application/json");
        assert_eq!(json.body, *docs::OPENAPI);
        let either = call(Method::GET, "/openapi.yaml")
            .header("accept", "application/json, application/yaml")
            .send()
            .await;
        assert_eq!(either.text, docs::OPENAPI_YAML);
        let html = call(Method::GET, "/docs").send().await;
        html.expect(200, None);
        assert!(html.header("content-type").starts_with("text/html"));
        assert!(html.text.contains("/api/v1/orgs/{orgId}"));
        assert!(
            !html.text.contains("<script") && !html.text.contains("<link"),
            "renders with no network access"
        );
    });
}

#[test]
fn template_table_matches_the_store_schema() {
    let template = template();
    let table = &template["Resources"]["Table"]["Properties"];
    let attrs: BTreeSet<&str> = table["AttributeDefinitions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a["AttributeName"].as_str().unwrap())
        .collect();
    let mut want: BTreeSet<String> = ["pk", "sk"].map(String::from).into();
    let gsis: BTreeSet<&str> = table["GlobalSecondaryIndexes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|g| g["IndexName"].as_str().unwrap())
        .collect();
    for gsi in shared::store::engine::schema::GSIS {
        want.insert(format!("{gsi}pk"));
        want.insert(format!("{gsi}sk"));
    }
    assert_eq!(attrs, want.iter().map(String::as_str).collect());
    assert_eq!(
        gsis,
        shared::store::engine::schema::GSIS.into_iter().collect()
    );
    assert_eq!(
        table["TimeToLiveSpecification"]["AttributeName"].as_str(),
        Some(shared::store::engine::keys::TTL)
    );
    assert_eq!(
        table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"].as_bool(),
        Some(true)
    );
}

/// A deny policy of the template: the writes it refuses, the partition
/// key patterns it refuses them on, and the functions touching the table
/// that it is attached to and not.
struct Deny {
    actions: BTreeSet<String>,
    keys: Vec<String>,
    attached: BTreeSet<String>,
    free: BTreeSet<String>,
}

fn deny(template: &Yaml, policy: &str) -> Deny {
    let statement = &template["Resources"][policy]["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(statement["Effect"].as_str(), Some("Deny"), "{policy}");
    let strings = |value: &Yaml| -> Vec<String> {
        value
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect()
    };
    let mut found = Deny {
        actions: strings(&statement["Action"]).into_iter().collect(),
        keys: strings(&statement["Condition"]["ForAnyValue:StringLike"]["dynamodb:LeadingKeys"]),
        attached: BTreeSet::new(),
        free: BTreeSet::new(),
    };
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let name = name.as_str().unwrap().to_owned();
        let policies = resource["Properties"]["Policies"].as_sequence().unwrap();
        let touches_table = serde_yaml_ng::to_string(policies)
            .unwrap()
            .contains("dynamodb:");
        // `- !Ref <policy>`: a tagged scalar.
        let reference = format!("!Ref {policy}");
        let attached = policies
            .iter()
            .any(|p| serde_yaml_ng::to_string(p).unwrap().trim() == reference);
        assert!(
            touches_table || !attached,
            "{name}: {policy} on a function without the table"
        );
        match (touches_table, attached) {
            (true, true) => found.attached.insert(name),
            (true, false) => found.free.insert(name),
            _ => false,
        };
    }
    found
}

/// Every write, in every form: UpdateItem creates a missing item, so
/// allowing it would let a function mint what it may not write.
const WRITES: [&str; 4] = [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
];

#[test]
fn every_function_with_table_access_may_not_write_api_keys_or_audit_records() {
    let deny = deny(&template(), "ApiKeyIssuanceByOperators");
    assert_eq!(deny.actions, WRITES.map(String::from).into());
    assert!(
        !shared::store::engine::keys::rate_pk(&shared::auth::key::KeyHash::of("k"))
            .starts_with(shared::store::engine::keys::API_KEY_PK_PREFIX),
        "the counters the API writes are outside the denied prefix"
    );
    // API keys, the key indexes and the operators' audit trail.
    let want: Vec<String> = shared::store::engine::keys::OPERATOR_ONLY_PK_PREFIXES
        .iter()
        .map(|prefix| format!("{prefix}*"))
        .collect();
    assert_eq!(deny.keys, want);
    assert_eq!(
        deny.free,
        BTreeSet::new(),
        "every function touching the table"
    );
}

/// Staged files (`FILE#`): the sweeper copies the upload such an item
/// names, so only the function that stages them and the dispatcher whose
/// sweep finishes them may write one; every other function touching the
/// table carries the deny.
#[test]
fn only_the_stagers_of_files_may_write_staged_file_items() {
    let deny = deny(&template(), "StagedFilesByTheirStagers");
    assert_eq!(deny.actions, WRITES.map(String::from).into());
    assert_eq!(
        deny.keys,
        [format!(
            "{}*",
            shared::store::engine::keys::STAGED_FILE_PK_PREFIX
        )]
    );
    assert_eq!(
        deny.free,
        ["SurplusesFunction", "WebhookDispatcherFunction"]
            .map(String::from)
            .into()
    );
    assert!(deny.attached.len() > 2, "{:?}", deny.attached);
}

/// The link signer's key signs links to kept files only: it cannot read
/// an upload (which no record vouches for yet), list, write or delete.
#[test]
fn the_link_signer_reads_kept_files_only() {
    let template = template();
    let policies = template["Resources"]["LinkSignerUser"]["Properties"]["Policies"]
        .as_sequence()
        .unwrap();
    assert_eq!(policies.len(), 1);
    let statements = policies[0]["PolicyDocument"]["Statement"]
        .as_sequence()
        .unwrap();
    assert_eq!(statements.len(), 1);
    assert_eq!(statements[0]["Effect"].as_str(), Some("Allow"));
    assert_eq!(statements[0]["Action"].as_str(), Some("s3:GetObject"));
    let resources: Vec<String> = statements[0]["Resource"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| serde_yaml_ng::to_string(r).unwrap().trim().to_owned())
        .collect();
    assert_eq!(
        resources,
        [
            "!Sub ${FilesBucket.Arn}/waybills/*",
            "!Sub ${FilesBucket.Arn}/receiving-points/*"
        ]
    );
}

/// The `.rs` files of the service (shared and every function), tests left
/// out.
fn service_sources() -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("target") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    walk(&root.join("shared/src"), &mut out);
    walk(&root.join("functions"), &mut out);
    out
}

/// Every code the description says an answer may carry: the codes its
/// responses list (`x-error-codes`, or a `code` enum of a schema).
fn described_codes() -> BTreeSet<String> {
    fn walk(value: &Value, codes: &mut BTreeSet<String>) {
        match value {
            Value::Object(fields) => {
                let narrowed = fields
                    .get("properties")
                    .and_then(|p| p.get("code"))
                    .and_then(|c| c.get("enum"));
                for list in [narrowed, fields.get("x-error-codes")]
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_array)
                {
                    codes.extend(list.iter().filter_map(|c| c.as_str().map(str::to_owned)));
                }
                fields.values().for_each(|v| walk(v, codes));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, codes)),
            _ => {}
        }
    }
    let mut codes = BTreeSet::new();
    walk(&docs::OPENAPI, &mut codes);
    codes
}

/// The description's one list of codes, `ErrorCode`, with the lines of
/// its description (`code` (status: meaning; ...)).
fn error_code_list() -> (Vec<String>, String) {
    let schema = &docs::OPENAPI["components"]["schemas"]["ErrorCode"];
    let list = schema["enum"].as_array().expect("an ErrorCode enum");
    (
        list.iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect(),
        schema["description"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn the_catalogue_the_description_and_the_code_name_one_set_of_codes() {
    use shared::error::codes;
    let catalogue: BTreeSet<String> = codes::ALL.iter().map(|c| c.code.to_owned()).collect();
    // The description: every code it lists is catalogued, and back.
    let described = described_codes();
    assert_eq!(
        catalogue.difference(&described).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "catalogued but not described"
    );
    assert_eq!(
        described.difference(&catalogue).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "described but not catalogued"
    );
    // The one list of codes is the catalogue, in its order, each with its
    // statuses and meanings as the catalogue says them; every error
    // answer's code is that list.
    let (list, text) = error_code_list();
    let mut in_order: Vec<String> = Vec::new();
    for code in codes::ALL {
        if !in_order.contains(&code.code.to_owned()) {
            in_order.push(code.code.to_owned());
        }
        let meaning = format!("{}: {}", code.status, code.meaning);
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("* `{}` (", code.code)))
            .unwrap_or_else(|| panic!("ErrorCode does not describe {}", code.code));
        assert!(
            line.contains(&meaning),
            "ErrorCode's {line:?} lacks {meaning:?}"
        );
    }
    assert_eq!(list, in_order, "ErrorCode and the catalogue");
    assert_eq!(
        docs::OPENAPI["components"]["schemas"]["Error"]["properties"]["code"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
    // The code: errors are built from the catalogue only (no code of their
    // own), and every entry of it is built somewhere.
    let catalogue_file = std::path::Path::new("shared/src/error/codes.rs");
    let mut built = BTreeSet::new();
    for (path, text) in service_sources() {
        if path.ends_with(catalogue_file) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with("//") {
                continue;
            }
            let own_code = line.match_indices("code: \"").any(|(at, _)| {
                !line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            assert!(
                !own_code || path.ends_with("shared/src/store/exactly_once/tx.rs"),
                "{}:{}: a code of its own: {line}",
                path.display(),
                i + 1
            );
            for (at, _) in line.match_indices("codes::") {
                let name: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    built.insert(name);
                }
            }
        }
    }
    // `id_kinds!` and `archivable!` name their codes bare.
    for (path, text) in service_sources() {
        if path.ends_with("shared/src/http/path.rs")
            || path.ends_with("shared/src/store/records/archivable.rs")
        {
            for word in text.split(|c: char| !(c.is_ascii_uppercase() || c == '_')) {
                if word.len() > 3 {
                    built.insert(word.to_owned());
                }
            }
        }
    }
    let declared = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src/error/codes.rs"),
    )
    .unwrap();
    let names: Vec<&str> = declared
        .lines()
        .filter_map(|line| line.trim().split_once(" = ").map(|(name, _)| name))
        .filter(|name| name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    assert_eq!(
        names.len(),
        codes::ALL.len(),
        "every entry read from the catalogue"
    );
    let unbuilt: Vec<&&str> = names.iter().filter(|n| !built.contains(**n)).collect();
    assert!(
        unbuilt.is_empty(),
        "catalogued but built nowhere: {unbuilt:?}"
    );
}
