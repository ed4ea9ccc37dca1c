//! Issues the tracker holds twice for one support request, and how they
//! are undone: every one but the issue kept is closed as its duplicate,
//! with a comment that names it (`github::close_duplicate`), and a metric
//! line says what was found, closed and left open (the alarm watches the
//! last). A retry that finds more than one keeps the first; the sweep
//! (`sweep`: the dispatcher's schedule, and an operator's `admin tickets
//! reconcile`) finds those that
//! landed after the request's answer was given, and keeps the issue that
//! answer named, which every replay of it names too.

use std::collections::BTreeMap;

use crate::ApiError;
use crate::metrics::Report;
use crate::state::AppState;
use serde::Serialize;
use uuid::Uuid;

use super::github::{self, Issue, Named};

/// What found the duplicates (the metric line's `by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// A retry of the request, which answers with the issue kept.
    Retry,
    /// The sweep, after the answer was given.
    Sweep,
}

impl By {
    fn name(self) -> &'static str {
        match self {
            By::Retry => "retry",
            By::Sweep => "sweep",
        }
    }
}

/// Closes `duplicates`, issues opened for `request` beside `kept`, as
/// duplicates of it: how many were closed. Reports what it found and
/// closed (a metric line; the alarm watches what it could not close).
pub async fn close(
    state: &AppState,
    request: Uuid,
    kept: u64,
    duplicates: &[u64],
    by: By,
) -> usize {
    if duplicates.is_empty() {
        return 0;
    }
    let mut closed = 0;
    for number in duplicates {
        if github::close_duplicate(state, *number, kept, request).await {
            closed += 1;
        }
    }
    crate::metrics::support::Duplicates {
        request,
        first: kept,
        found: duplicates.len(),
        closed,
        unclosed: duplicates.len() - closed,
        by: by.name(),
    }
    .log(&state.config.metrics);
    closed
}

/// Pages of 100 issues a sweep reads at most, newest first.
pub const SWEEP_PAGES: u32 = 10;

/// What a sweep found for one request that the tracker holds more than
/// one open issue for.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    pub request: Uuid,
    pub org: Uuid,
    /// The issue kept: the one the request's answer named, else the first.
    pub kept: u64,
    /// Why that one: `answered` or `first`.
    pub because: &'static str,
    /// The others, open, closed as its duplicates (unless a dry run).
    pub duplicates: Vec<u64>,
    pub closed: usize,
}

/// What a sweep did, over every request it looked at.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Swept {
    /// Issues listed, and of them the requests named by more than one.
    pub issues: usize,
    pub requests: usize,
    /// Requests whose answer is not yet given (an attempt still running,
    /// or a call that may still land): left for a later sweep.
    pub undecided: usize,
    /// Duplicates found, closed, and left open (the tracker refused, or
    /// past `limit`, or a dry run).
    pub found: usize,
    pub closed: usize,
    pub unclosed: usize,
    pub each: Vec<Found>,
}

/// Finds the requests that the tracker holds more than one issue for
/// among the configured labels' issues opened since `since`, and closes
/// every open one but the issue kept (the request's answer's, else the
/// first), at most `limit` a sweep (each close is two writes of the
/// tracker's quota); nothing when `dry_run`. Safe to run again, and beside
/// the API: an issue kept is never closed, and a request whose answer is
/// not yet known is left alone.
pub async fn sweep(
    state: &AppState,
    since: chrono::DateTime<chrono::Utc>,
    limit: usize,
    dry_run: bool,
) -> Result<Swept, ApiError> {
    let listed = github::recent(state, since, SWEEP_PAGES, true)
        .await
        .map_err(|failure| failure.error)?;
    let mut swept = Swept {
        issues: listed.len(),
        ..Swept::default()
    };
    let mut by_request: BTreeMap<Uuid, (Named, Vec<&Issue>)> = BTreeMap::new();
    for issue in listed
        .iter()
        .filter(|i| i.created_at.is_none_or(|at| at >= since))
    {
        let Some(named) = issue.body.as_deref().and_then(github::named) else {
            continue;
        };
        let entry = by_request
            .entry(named.request)
            .or_insert_with(|| (named.clone(), Vec::new()));
        if entry.0.key_hash.is_none() {
            entry.0.key_hash = named.key_hash;
        }
        entry.1.push(issue);
    }
    let mut budget = limit;
    for (request, (named, issues)) in by_request {
        if issues.len() < 2 {
            continue;
        }
        swept.requests += 1;
        let Some((kept, because)) = kept(state, &named, &issues).await? else {
            swept.undecided += 1;
            continue;
        };
        let open: Vec<u64> = issues
            .iter()
            .filter(|i| i.number != kept && i.state.as_deref() != Some("closed"))
            .map(|i| i.number)
            .collect();
        if open.is_empty() {
            continue;
        }
        let now: Vec<u64> = if dry_run {
            Vec::new()
        } else {
            open.iter().take(budget).copied().collect()
        };
        budget -= now.len();
        let closed = close(state, request, kept, &now, By::Sweep).await;
        swept.found += open.len();
        swept.closed += closed;
        swept.unclosed += open.len() - closed;
        swept.each.push(Found {
            request,
            org: named.org,
            kept,
            because,
            duplicates: open,
            closed,
        });
    }
    Ok(swept)
}

/// The issue kept of a request's `issues`: the one its answer named
/// (`answered`), else the first (`first`: no answer names one, or it
/// expired); None while its answer is not yet given.
async fn kept(
    state: &AppState,
    named: &Named,
    issues: &[&Issue],
) -> Result<Option<(u64, &'static str)>, ApiError> {
    let first = issues.iter().map(|i| i.number).min().unwrap_or_default();
    let Some(hash) = &named.key_hash else {
        return Ok(Some((first, "first")));
    };
    let now = crate::clock::unix_ms();
    let standing = state
        .store
        .idempotency()
        .standing(named.key, hash, now)
        .await?;
    let Some(standing) = standing.filter(|s| s.request == Some(named.request)) else {
        return Ok(Some((first, "first")));
    };
    let Some(answer) = standing.answer else {
        return Ok(None);
    };
    let reference = serde_json::from_slice::<serde_json::Value>(&answer.body)
        .ok()
        .filter(|_| answer.status == 201 && !answer.sealed)
        .and_then(|body| body["data"]["reference"].as_str()?.parse::<u64>().ok());
    Ok(Some(match reference {
        Some(answered) => (answered, "answered"),
        None => (first, "first"),
    }))
}
