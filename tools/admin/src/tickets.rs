//! `admin tickets reconcile`: finds the support requests the issue
//! tracker holds more than one issue for (a call that landed after the
//! request's answer was given, a paused attempt's) among the issues
//! opened in the last `--hours`, and closes every open one but the issue
//! kept (the one the request's answer named, else the first) as its
//! duplicate, with a comment that names it (`shared::tracker::duplicates::sweep`;
//! `--dry-run`: closes nothing). At most `--max-closes` a run (each close
//! is two writes of the tracker's quota); the rest wait for the next
//! run. The answer is a line for each request found, then one that counts
//! what was found. Safe to run again, and beside the API.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;
use shared::config::Config;
use shared::state::AppState;

use crate::audit::{Action, Done};

#[derive(Subcommand)]
pub enum TicketsCommand {
    /// Close the duplicate issues of support requests.
    Reconcile(Reconcile),
}

#[derive(Args)]
pub struct Reconcile {
    /// Say what would be closed; close nothing.
    #[arg(long)]
    dry_run: bool,
    /// Look at the issues opened in the last this many hours (at most a
    /// day: the requests' answers are kept that long).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=24))]
    hours: u32,
    /// Close at most this many issues a run.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=200))]
    max_closes: u32,
}

impl TicketsCommand {
    /// What the command changes, for its audit; `None` for a dry run.
    pub fn action(&self) -> Option<Action> {
        let TicketsCommand::Reconcile(reconcile) = self;
        (!reconcile.dry_run).then(|| {
            Action::new(
                "tickets-reconcile",
                None,
                json!({"hours": reconcile.hours, "max_closes": reconcile.max_closes}),
            )
        })
    }
}

pub async fn run(
    config: &Config,
    sdk: &aws_config::SdkConfig,
    command: TicketsCommand,
) -> Result<Done> {
    let TicketsCommand::Reconcile(reconcile) = command;
    if !config.support.is_configured() {
        anyhow::bail!(
            "support tickets are not configured (SUPPORT_REPOSITORY and the tracker's token): nothing to reconcile"
        );
    }
    let state = AppState::new(config.clone(), sdk);
    let since = shared::clock::now() - chrono::TimeDelta::hours(reconcile.hours.into());
    let limit = usize::try_from(reconcile.max_closes).unwrap_or(usize::MAX);
    let swept = shared::tracker::duplicates::sweep(&state, since, limit, reconcile.dry_run)
        .await
        .map_err(|error| anyhow::anyhow!("the issue tracker could not be read: {error}"))?;
    let mut lines: Vec<serde_json::Value> = swept.each.iter().map(|found| json!(found)).collect();
    lines.push(json!({
        "issues": swept.issues, "requests": swept.requests, "undecided": swept.undecided,
        "found": swept.found, "closed": swept.closed, "unclosed": swept.unclosed,
        "hours": reconcile.hours, "dry_run": reconcile.dry_run,
    }));
    Ok(Done::lines(lines))
}
