//! What IAM authorizes for one call: the action it needs (each action of
//! a transaction or a batch apart: IAM checks a transaction's Put as
//! `PutItem`, its ConditionCheck as `ConditionCheckItem`), the resource
//! each names and, for DynamoDB, the class of the key it leads with (the
//! template's denies turn on `dynamodb:LeadingKeys`). DynamoDB's calls
//! are read by the store (`store::engine::iam`), which knows its keys;
//! the other services' here, from the request as it is sent.

use serde::Serialize;
use serde_json::Value;

/// One action a call needs, on one resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Needed {
    /// `service:Action`, as IAM names it (`dynamodb:PutItem`).
    pub action: String,
    pub resource: Resource,
    /// A DynamoDB key's class (`APIKEY#{id}`): its literal parts kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leading_key: Option<String>,
}

/// What an action is on, by the name the code called it by (a table's
/// or queue's name as configured, a bucket and a key's class).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Resource {
    Table {
        table: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        index: Option<String>,
    },
    Object {
        bucket: String,
        key: String,
    },
    Bucket {
        bucket: String,
    },
    Queue {
        queue: String,
    },
    Secret {
        secret: String,
    },
}

impl Needed {
    pub fn new(action: impl Into<String>, resource: Resource) -> Self {
        Needed {
            action: action.into(),
            resource,
            leading_key: None,
        }
    }
}

/// The request of a call as the interceptor sees it.
pub struct Sent<'a> {
    pub service: &'a str,
    pub operation: &'a str,
    pub uri: &'a str,
    pub copy_source: Option<&'a str>,
    pub body: &'a [u8],
}

/// What a call to S3, SQS or Secrets Manager needs (DynamoDB's: the
/// store's); nothing for a service this does not know, which the role
/// check reports as unjudged.
pub fn needed(sent: &Sent<'_>) -> Vec<Needed> {
    match sent.service {
        "S3" => s3(sent),
        "SQS" => sqs(sent),
        "Secrets Manager" => secrets(sent),
        _ => Vec::new(),
    }
}

/// An object key's class: each segment that is a plain word
/// (`waybills`, `receiving-points`) kept, any other (an id, a file's
/// name) `{x}`: what a policy's `waybills/*` matches, without a value.
pub fn object_class(key: &str) -> String {
    key.split('/')
        .map(|segment| {
            match segment
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_')
            {
                true if !segment.is_empty() => segment,
                _ => "{x}",
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn s3(sent: &Sent<'_>) -> Vec<Needed> {
    let (bucket, key) = bucket_and_key(sent.uri);
    let object = |bucket: &str, key: &str| Resource::Object {
        bucket: bucket.to_owned(),
        key: object_class(key),
    };
    let on_object = |action: &str| vec![Needed::new(action, object(&bucket, &key))];
    match sent.operation {
        // A version named is read by its own action.
        "GetObject" | "HeadObject" if names_a_version(sent.uri) => on_object("s3:GetObjectVersion"),
        "GetObject" | "HeadObject" => on_object("s3:GetObject"),
        "PutObject" | "CreateMultipartUpload" | "UploadPart" | "CompleteMultipartUpload" => {
            on_object("s3:PutObject")
        }
        "DeleteObject" => on_object("s3:DeleteObject"),
        "CopyObject" => {
            let mut needed = on_object("s3:PutObject");
            if let Some(source) = sent.copy_source {
                let (path, query) = source.split_once('?').unwrap_or((source, ""));
                let source = decoded(path);
                let (from, key) = source
                    .trim_start_matches('/')
                    .split_once('/')
                    .unwrap_or((&source, ""));
                let read = if has_version(query) {
                    "s3:GetObjectVersion"
                } else {
                    "s3:GetObject"
                };
                needed.push(Needed::new(read, object(from, key)));
            }
            needed
        }
        "ListObjectsV2" | "ListObjects" | "HeadBucket" => {
            vec![Needed::new("s3:ListBucket", Resource::Bucket { bucket })]
        }
        other => on_object(&format!("s3:{other}")),
    }
}

/// Whether a query string names an object's version (`versionId=`).
fn has_version(query: &str) -> bool {
    query.split('&').any(|pair| pair.starts_with("versionId="))
}

/// Whether a request's URI names an object's version.
fn names_a_version(uri: &str) -> bool {
    uri.parse::<http::Uri>()
        .ok()
        .and_then(|uri| uri.query().map(has_version))
        .unwrap_or(false)
}

/// The bucket and key a request names: path-style (`/bucket/key`, the
/// local stack's) or virtual-hosted (`bucket.s3.<region>.amazonaws.com`).
fn bucket_and_key(uri: &str) -> (String, String) {
    let Ok(uri) = uri.parse::<http::Uri>() else {
        return (String::new(), String::new());
    };
    let path = decoded(uri.path().trim_start_matches('/'));
    let host = uri.host().unwrap_or_default();
    match host.split_once(".s3.").or_else(|| host.split_once(".s3-")) {
        Some((bucket, _)) => (bucket.to_owned(), path),
        None => {
            let (bucket, key) = path.split_once('/').unwrap_or((&path, ""));
            (bucket.to_owned(), key.to_owned())
        }
    }
}

fn decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A JSON body's field, or a form body's (the query protocol's).
fn field(body: &[u8], name: &str) -> String {
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        return json[name].as_str().unwrap_or_default().to_owned();
    }
    form_urlencoded(body, name)
}

fn form_urlencoded(body: &[u8], name: &str) -> String {
    let body = String::from_utf8_lossy(body);
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| decoded(&value.replace('+', " ")))
        .unwrap_or_default()
}

fn sqs(sent: &Sent<'_>) -> Vec<Needed> {
    let action = match sent.operation {
        "SendMessageBatch" => "SendMessage",
        "DeleteMessageBatch" => "DeleteMessage",
        "ChangeMessageVisibilityBatch" => "ChangeMessageVisibility",
        other => other,
    };
    let queue = field(sent.body, "QueueUrl");
    vec![Needed::new(
        format!("sqs:{action}"),
        Resource::Queue { queue },
    )]
}

fn secrets(sent: &Sent<'_>) -> Vec<Needed> {
    let secret = field(sent.body, "SecretId");
    vec![Needed::new(
        format!("secretsmanager:{}", sent.operation),
        Resource::Secret { secret },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent<'a>(service: &'a str, operation: &'a str, uri: &'a str, body: &'a [u8]) -> Sent<'a> {
        Sent {
            service,
            operation,
            uri,
            copy_source: None,
            body,
        }
    }

    #[test]
    fn an_object_is_named_by_its_bucket_and_key_either_style() {
        let path = sent(
            "S3",
            "GetObject",
            "http://127.0.0.1:5005/files/waybills/a/b.pdf?x-id=GetObject",
            b"",
        );
        let host = sent(
            "S3",
            "GetObject",
            "https://files.s3.eu-west-1.amazonaws.com/waybills/a/b.pdf",
            b"",
        );
        for call in [path, host] {
            assert_eq!(
                needed(&call),
                [Needed::new(
                    "s3:GetObject",
                    Resource::Object {
                        bucket: "files".into(),
                        key: "waybills/a/{x}".into()
                    }
                )]
            );
        }
    }

    #[test]
    fn a_version_named_needs_get_object_version() {
        let mut call = sent(
            "S3",
            "CopyObject",
            "http://127.0.0.1:5005/files/waybills/x.pdf",
            b"",
        );
        call.copy_source =
            Some("files/uploads%2Fy.pdf?versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY");
        let read = needed(&call).pop().unwrap();
        assert_eq!(read.action, "s3:GetObjectVersion");
        assert_eq!(
            read.resource,
            Resource::Object {
                bucket: "files".into(),
                key: "uploads/{x}".into()
            }
        );
        for (uri, action) in [
            (
                "http://127.0.0.1:5005/files/uploads/y.pdf?versionId=3HL4k",
                "s3:GetObjectVersion",
            ),
            (
                "http://127.0.0.1:5005/files/uploads/y.pdf?x-id=GetObject",
                "s3:GetObject",
            ),
        ] {
            let call = sent("S3", "HeadObject", uri, b"");
            assert_eq!(needed(&call)[0].action, action, "{uri}");
        }
    }

    #[test]
    fn a_copy_needs_a_read_of_its_source_and_a_write_of_its_place() {
        let mut call = sent(
            "S3",
            "CopyObject",
            "http://127.0.0.1:5005/files/waybills/x.pdf",
            b"",
        );
        call.copy_source = Some("files/uploads%2Fy.pdf");
        let actions: Vec<_> = needed(&call)
            .into_iter()
            .map(|n| (n.action, n.resource))
            .collect();
        assert_eq!(
            actions,
            [
                (
                    "s3:PutObject".into(),
                    Resource::Object {
                        bucket: "files".into(),
                        key: "waybills/{x}".into()
                    }
                ),
                (
                    "s3:GetObject".into(),
                    Resource::Object {
                        bucket: "files".into(),
                        key: "uploads/{x}".into()
                    }
                ),
            ]
        );
    }

    #[test]
    fn an_object_key_keeps_its_words_and_hides_its_values() {
        let id = "0b9e3b0e-8f0e-4a57-9d55-3c1f4a6f1a10";
        assert_eq!(
            object_class(&format!("waybills/{id}/{id}/note 1.pdf")),
            "waybills/{x}/{x}/{x}"
        );
        assert_eq!(
            object_class("receiving-points/a1/photo"),
            "receiving-points/{x}/photo"
        );
    }

    #[test]
    fn a_batch_needs_the_action_of_its_single_form() {
        let call = sent(
            "SQS",
            "SendMessageBatch",
            "http://q",
            br#"{"QueueUrl":"http://q/1/hooks"}"#,
        );
        assert_eq!(
            needed(&call),
            [Needed::new(
                "sqs:SendMessage",
                Resource::Queue {
                    queue: "http://q/1/hooks".into()
                }
            )]
        );
        let form = sent(
            "SQS",
            "ReceiveMessage",
            "http://q",
            b"Action=ReceiveMessage&QueueUrl=http%3A%2F%2Fq%2F1%2Fhooks",
        );
        assert_eq!(
            needed(&form)[0].resource,
            Resource::Queue {
                queue: "http://q/1/hooks".into()
            }
        );
    }

    #[test]
    fn a_secret_is_named_by_its_id() {
        let call = sent(
            "Secrets Manager",
            "GetSecretValue",
            "http://s",
            br#"{"SecretId":"arn:seal"}"#,
        );
        assert_eq!(
            needed(&call),
            [Needed::new(
                "secretsmanager:GetSecretValue",
                Resource::Secret {
                    secret: "arn:seal".into()
                }
            )]
        );
    }
}
