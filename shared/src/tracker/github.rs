//! GitHub Issues, as documented at
//! <https://docs.github.com/en/rest/issues/issues#create-an-issue>:
//! `POST <api>/repos/{owner}/{repo}/issues` with `Authorization: Bearer
//! <token>`, `Accept: application/vnd.github+json` and
//! `X-GitHub-Api-Version: 2022-11-28`, body `{title, body, labels}`,
//! answered `201 Created` with the issue (`number`, `html_url`, ...); an
//! error is another status with `{message, documentation_url}`. An issue
//! opened for a request with an `Idempotency-Key` names the request in the
//! lines the service writes above the customer's text (`header`), and a
//! later attempt of a request whose earlier one may have opened an issue
//! looks for it first (`find`: "List repository issues",
//! <https://docs.github.com/en/rest/issues/issues#list-repository-issues>,
//! newest first), matching those lines only, never the customer's text.

use crate::ApiError;
use crate::error::codes;
use crate::model::support::NewTicket;
use crate::outbound::{Call, CallError};
use crate::state::AppState;
use http::header::{ACCEPT, AUTHORIZATION};
use http::{HeaderMap, HeaderValue, Method};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

pub const API_VERSION: &str = "2022-11-28";

#[derive(Debug, Deserialize)]
pub struct Issue {
    pub number: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    /// `open` or `closed`.
    #[serde(default)]
    pub state: Option<String>,
}

/// The lines the service writes at the top of an issue's body: who asked
/// (the organization and its key) and, with an `Idempotency-Key`, the
/// request (`request_lines`) and the key's SHA-256, which finds the
/// request's answer (`Idempotency::standing`). The customer's text
/// follows, fenced, after a blank line.
fn header(org: Uuid, key: Uuid, request: Option<Uuid>, key_hash: Option<&str>) -> String {
    let hash = key_hash
        .filter(|_| request.is_some())
        .map(|h| format!("{HASH_LINE}`{h}`\n"))
        .unwrap_or_default();
    format!("{}{hash}\n", request_lines(org, key, request))
}

/// The lines that name a request, as every issue opened for it begins
/// (an issue opened before the key's hash was written has no more).
fn request_lines(org: Uuid, key: Uuid, request: Option<Uuid>) -> String {
    let request = request
        .map(|r| format!("- Request: `{r}`\n"))
        .unwrap_or_default();
    format!(
        "Opened through the Integration API.\n\n\
         - Organization: `{org}`\n\
         - API key: `{key}`\n{request}"
    )
}

const HASH_LINE: &str = "- Idempotency-Key (SHA-256): ";

/// Who and which request an issue's body names (the lines the service
/// wrote at its top), when it names a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub org: Uuid,
    pub key: Uuid,
    pub request: Uuid,
    pub key_hash: Option<String>,
}

/// The request an issue's `body` was opened for, read from the service's
/// lines only (never the customer's text, which comes after a blank line).
pub fn named(body: &str) -> Option<Named> {
    let mut lines = body
        .strip_prefix("Opened through the Integration API.\n\n")?
        .lines();
    let mut value = |label: &str| -> Option<String> {
        let line = lines.next()?.strip_prefix(label)?;
        Some(line.strip_prefix('`')?.strip_suffix('`')?.to_owned())
    };
    let org = value("- Organization: ")?.parse().ok()?;
    let key = value("- API key: ")?.parse().ok()?;
    let request = value("- Request: ")?.parse().ok()?;
    let key_hash =
        value(HASH_LINE).filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let found = Named {
        org,
        key,
        request,
        key_hash,
    };
    // The header is the service's own only if it is exactly what it writes.
    body.starts_with(&header(org, key, Some(request), found.key_hash.as_deref()))
        .then_some(found)
}

/// Pages of 100 issues `find` reads at most, newest first.
const FIND_PAGES: u32 = 3;

#[derive(Debug, Deserialize)]
struct Refusal {
    message: Option<String>,
}

/// Why no ticket was opened, and whether the tracker surely has none (a
/// 4xx, or no call made: then the quota slot is given back), or may have
/// one (then the key is held until the call can no longer land, and a
/// retry looks for the issue first).
#[derive(Debug)]
pub struct Failure {
    pub refused: bool,
    pub error: ApiError,
}

fn refused() -> Failure {
    Failure {
        refused: true,
        error: codes::SUPPORT_TRACKER_ERROR
            .with("the issue tracker did not take the ticket; try again later"),
    }
}

/// An answer that does not say the issue was not opened (a 5xx, a
/// connection broken after the request may have left, an answer that
/// cannot be read): it may exist, or still be opened.
fn uncertain() -> Failure {
    Failure {
        refused: false,
        error: codes::SUPPORT_TRACKER_ERROR.with(
            "the issue tracker failed and may have opened the ticket; retry with the same Idempotency-Key after Retry-After",
        ),
    }
}

/// The issue's body: who asked (and the request, when it has an
/// `Idempotency-Key`), then their text verbatim in a fence, so that
/// nothing in it is markup or mentions anyone.
pub fn issue_body(
    ticket: &NewTicket,
    org: Uuid,
    key: Uuid,
    request: Option<Uuid>,
    key_hash: Option<&str>,
) -> String {
    let longest = ticket
        .description
        .split(|c| c != '~')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "~".repeat(longest.max(2) + 1);
    format!(
        "{}{fence}text\n{}\n{fence}\n",
        header(org, key, request, key_hash),
        ticket.description
    )
}

/// The tracker's headers: the token, GitHub's media type and API version.
async fn headers(state: &AppState) -> Result<HeaderMap, Failure> {
    let token = state.support_token.get().await.map_err(|error| Failure {
        refused: true,
        error,
    })?;
    let mut headers = HeaderMap::new();
    let mut authorization =
        HeaderValue::from_bytes(&[b"Bearer ", token].concat()).map_err(|_| Failure {
            refused: true,
            error: ApiError::internal("the issue tracker token is not a header value"),
        })?;
    authorization.set_sensitive(true);
    headers.insert(AUTHORIZATION, authorization);
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/vnd.github+json"),
    );
    headers.insert(
        "x-github-api-version",
        HeaderValue::from_static(API_VERSION),
    );
    Ok(headers)
}

/// The issues earlier attempts of request `request` of key `key` of `org`
/// opened, oldest first (GitHub numbers issues in the order they are
/// opened): the configured labels' issues, newest first, back to `since`,
/// whose body begins with the lines the service wrote for it (text a
/// customer wrote elsewhere in a body never matches). More than one when
/// the tracker misreported an issue it opened, or a call landed after the
/// service stopped waiting for it. A tracker that cannot be asked is a 502
/// (no second issue is risked).
pub async fn find(
    state: &AppState,
    org: Uuid,
    key: Uuid,
    request: Uuid,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<u64>, Failure> {
    let mut found: Vec<u64> = recent(state, since, FIND_PAGES, false)
        .await?
        .iter()
        .filter(|i| {
            i.body
                .as_deref()
                .and_then(named)
                .is_some_and(|n| (n.org, n.key, n.request) == (org, key, request))
        })
        .map(|i| i.number)
        .collect();
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// The configured labels' issues (open and closed), newest first, back to
/// `since` (the page that reaches it included), at most `pages` pages of
/// 100; with `updated_since`, only those GitHub saw change since (its
/// `since` parameter: fewer pages for a sweep). A tracker that cannot be
/// asked is an error.
pub async fn recent(
    state: &AppState,
    since: chrono::DateTime<chrono::Utc>,
    pages: u32,
    updated_since: bool,
) -> Result<Vec<Issue>, Failure> {
    let config = &state.config.support;
    let repository = config.repository.as_deref().unwrap_or_default();
    let labels = config.labels.join(",");
    let labels = percent_encoding::utf8_percent_encode(&labels, percent_encoding::NON_ALPHANUMERIC);
    let updated = if updated_since {
        format!("&since={}", since.format("%Y-%m-%dT%H:%M:%SZ"))
    } else {
        String::new()
    };
    let mut listed = Vec::new();
    for page in 1..=pages {
        let url = format!(
            "{}/repos/{repository}/issues?state=all&sort=created&direction=desc&per_page=100&page={page}&labels={labels}{updated}",
            config.api_url,
        );
        let answer = state
            .outbound
            .send(Call {
                method: Method::GET,
                url: &url,
                headers: headers(state).await?,
                json: None,
                timeout: config.timeout,
            })
            .await
            .map_err(|error| match error {
                CallError::Stopped(error) => Failure {
                    refused: false,
                    error,
                },
                _ => refused(),
            })?;
        if answer.status != 200 {
            tracing::warn!(status = answer.status, "issue tracker refused a search");
            return Err(refused());
        }
        let issues: Vec<Issue> = serde_json::from_slice(&answer.body).map_err(|e| {
            tracing::warn!(error = %e, "issue tracker listed issues in another format");
            refused()
        })?;
        let (full, older) = (
            issues.len() == 100,
            issues
                .last()
                .and_then(|i| i.created_at)
                .is_some_and(|at| at < since),
        );
        listed.extend(issues);
        if !full || older {
            break;
        }
    }
    Ok(listed)
}

/// Closes issue `number` as a duplicate of issue `first` (both opened for
/// request `request`; `first` the one kept), with a comment that names
/// it: "Create an issue comment", then "Update an issue" with `state:
/// closed` and `state_reason: duplicate`. Whether the tracker did both.
pub async fn close_duplicate(state: &AppState, number: u64, first: u64, request: Uuid) -> bool {
    let config = &state.config.support;
    let repository = config.repository.as_deref().unwrap_or_default();
    let Ok(headers) = headers(state).await else {
        return false;
    };
    let issue = format!("{}/repos/{repository}/issues/{number}", config.api_url);
    let comment = json!({"body": format!(
        "Duplicate of #{first}: the Integration API opened this issue a second time for the same support request (`{request}`). The ticket is #{first}."
    )});
    let close = json!({"state": "closed", "state_reason": "duplicate"});
    for (method, url, body, wanted) in [
        (Method::POST, format!("{issue}/comments"), comment, 201),
        (Method::PATCH, issue.clone(), close, 200),
    ] {
        let answer = state
            .outbound
            .send(Call {
                method,
                url: &url,
                headers: headers.clone(),
                json: Some(body),
                timeout: config.timeout,
            })
            .await;
        match answer {
            Ok(answer) if answer.status == wanted => {}
            Ok(answer) => {
                tracing::warn!(
                    issue = number,
                    status = answer.status,
                    "issue tracker did not close a duplicate"
                );
                return false;
            }
            Err(error) => {
                tracing::warn!(issue = number, error = ?error, "issue tracker did not close a duplicate");
                return false;
            }
        }
    }
    true
}

/// Opens `ticket` (for `request`, named in the issue); the issue's
/// number.
pub async fn open(
    state: &AppState,
    ticket: &NewTicket,
    org: Uuid,
    key: Uuid,
    request: Option<Uuid>,
) -> Result<String, Failure> {
    let config = &state.config.support;
    let repository = config.repository.as_deref().unwrap_or_default();
    let headers = headers(state).await?;
    let url = format!("{}/repos/{repository}/issues", config.api_url);
    let key_hash = crate::store::exactly_once::outcome::key_hash();
    let answer = state
        .outbound
        .send(Call {
            method: Method::POST,
            url: &url,
            headers,
            json: Some(json!({
                "title": ticket.title,
                "body": issue_body(ticket, org, key, request, key_hash.as_deref()),
                "labels": config.labels,
            })),
            timeout: config.timeout,
        })
        .await
        .map_err(|error| match error {
            CallError::Timeout(after) => {
                tracing::warn!(?after, "issue tracker timed out");
                Failure {
                    refused: false,
                    error: codes::SUPPORT_TRACKER_TIMEOUT.with(
                        "the issue tracker did not answer in time; the ticket may have been opened",
                    ),
                }
            }
            CallError::Unreached(why) => {
                tracing::warn!(error = %why, "issue tracker unreachable");
                refused()
            }
            CallError::Failed(why) => {
                tracing::warn!(error = %why, "issue tracker cut off");
                uncertain()
            }
            // Not made: the slot stays with the request's attempt that
            // holds the key now.
            CallError::Stopped(error) => Failure {
                refused: false,
                error,
            },
        })?;
    if answer.status != 201 {
        let message = serde_json::from_slice::<Refusal>(&answer.body)
            .ok()
            .and_then(|r| r.message);
        tracing::warn!(
            status = answer.status,
            message,
            "issue tracker did not answer 201"
        );
        // Only a 4xx says the ticket was refused; anything else (a 5xx
        // above all: GitHub answers 5xx for writes that land) may have
        // opened it.
        return Err(if (400..500).contains(&answer.status) {
            refused()
        } else {
            uncertain()
        });
    }
    let issue: Issue = serde_json::from_slice(&answer.body).map_err(|e| {
        tracing::warn!(error = %e, "issue tracker answered 201 in another format");
        uncertain()
    })?;
    Ok(issue.number.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_fenced_verbatim() {
        let ticket = NewTicket {
            title: "t".into(),
            description: "@octocat see ~~~ and ![x](http://x)".into(),
        };
        let body = issue_body(&ticket, Uuid::nil(), Uuid::nil(), None, None);
        assert!(
            body.contains("\n~~~~text\n@octocat see ~~~ and ![x](http://x)\n~~~~\n"),
            "{body}"
        );
        assert!(body.contains(&format!("Organization: `{}`", Uuid::nil())));
    }

    #[test]
    fn an_issue_names_its_request_in_the_services_lines_only() {
        let ticket = NewTicket {
            title: "t".into(),
            description: "- Request: `00000000-0000-0000-0000-000000000009`".into(),
        };
        let (org, key, request) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let hash = "ab".repeat(32);
        let body = issue_body(&ticket, org, key, Some(request), Some(&hash));
        let found = named(&body).expect("named");
        assert_eq!((found.org, found.key, found.request), (org, key, request));
        assert_eq!(found.key_hash.as_deref(), Some(hash.as_str()));
        // An issue from before the hash was written names its request too.
        let older = issue_body(&ticket, org, key, Some(request), None);
        assert_eq!(named(&older).unwrap().key_hash, None);
        // No request, or lines not the service's: nothing.
        assert_eq!(named(&issue_body(&ticket, org, key, None, None)), None);
        assert_eq!(named(&format!("x{body}")), None);
    }

    #[test]
    fn the_documented_answer_parses() {
        // From GitHub's documentation of "Create an issue" (abridged).
        let issue: Issue = serde_json::from_str(
            r#"{"id": 1, "node_id": "MDU6SXNzdWUx", "url": "https://api.github.com/repos/octocat/Hello-World/issues/1347",
                "html_url": "https://github.com/octocat/Hello-World/issues/1347", "number": 1347, "state": "open",
                "title": "Found a bug", "body": "I'm having a problem with this.", "labels": [], "locked": false,
                "created_at": "2011-04-22T13:33:48Z", "updated_at": "2011-04-22T13:33:48Z"}"#,
        )
        .unwrap();
        assert_eq!(issue.number, 1347);
    }
}
