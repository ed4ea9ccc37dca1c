//! `admin files check`: finds the files in place that no record names
//! (`shared::files::orphans`) under `waybills/` and `receiving-points/`,
//! and removes those older than the grace period (`--dry-run`: removes
//! nothing). Progress goes to stderr, a line a page; the answer is a line
//! for each orphan, then one that counts what was found. Safe to
//! run again, and beside the API: a record that no longer names a file
//! never names it again.

use anyhow::Result;
use chrono::TimeDelta;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;
use shared::config::Config;
use shared::files::orphans::{self, Looked};
use shared::files::paths::Area;
use shared::state::AppState;

use crate::audit::{Action, Done};

#[derive(Subcommand)]
pub enum FilesCommand {
    /// Find the files no record names and remove those older than the
    /// grace period.
    Check(Check),
}

/// Which files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Loads' waybills (`waybills/`).
    Waybills,
    /// Receiving points' photos (`receiving-points/`).
    ReceivingPoints,
}

impl From<Which> for Area {
    fn from(which: Which) -> Area {
        match which {
            Which::Waybills => Area::Waybills,
            Which::ReceivingPoints => Area::ReceivingPoints,
        }
    }
}

#[derive(Args)]
pub struct Check {
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Leave files written less than this many hours ago.
    #[arg(long, default_value_t = 24)]
    grace_hours: u32,
    /// Only these files (both when left out).
    #[arg(long, value_enum)]
    only: Option<Which>,
    /// Objects listed a page (S3's most, 1000, when left out).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1000))]
    page_objects: Option<u16>,
}

impl FilesCommand {
    /// What the command changes, for its audit; `None` for a dry run.
    pub fn action(&self) -> Option<Action> {
        let FilesCommand::Check(check) = self;
        (!check.dry_run).then(|| {
            Action::new(
                "files-check",
                None,
                json!({"grace_hours": check.grace_hours, "only": check.only.map(|w| Area::from(w).prefix())}),
            )
        })
    }
}

/// What a check found, over every page.
#[derive(Default)]
struct Tally {
    checked: u64,
    named: u64,
    young: u64,
    orphans: u64,
    removed: u64,
    unrecognised: u64,
}

pub async fn run(
    config: &Config,
    sdk: &aws_config::SdkConfig,
    command: FilesCommand,
) -> Result<Done> {
    let FilesCommand::Check(check) = command;
    let state = AppState::new(config.clone(), sdk);
    let grace = TimeDelta::hours(check.grace_hours.into());
    let now = shared::clock::now();
    let areas: Vec<Area> = match check.only {
        Some(which) => vec![which.into()],
        None => orphans::AREAS.to_vec(),
    };
    let (mut tally, mut lines) = (Tally::default(), Vec::new());
    for area in areas {
        let prefix = format!("{}/", area.prefix());
        let (mut from, mut page) = (None, 0u64);
        loop {
            let (listed, next) = state
                .files
                .list(&prefix, from, check.page_objects.map(i32::from))
                .await?;
            for object in &listed {
                tally.checked += 1;
                match orphans::look(&state.store, object, now, grace).await? {
                    Looked::Named => tally.named += 1,
                    Looked::Young => tally.young += 1,
                    Looked::Unrecognised => tally.unrecognised += 1,
                    Looked::Orphan => {
                        tally.orphans += 1;
                        if !check.dry_run {
                            state.files.delete(&object.path).await?;
                            tally.removed += 1;
                        }
                        lines.push(json!({"orphan": object.path, "modified": object.modified,
                                          "removed": !check.dry_run}));
                    }
                }
            }
            page += 1;
            eprintln!(
                "{}",
                json!({"files": area.prefix(), "page": page, "checked": tally.checked,
                       "orphans": tally.orphans, "removed": tally.removed})
            );
            from = next;
            if from.is_none() {
                break;
            }
        }
    }
    lines.push(json!({
        "checked": tally.checked, "named": tally.named, "young": tally.young,
        "orphans": tally.orphans, "removed": tally.removed,
        "unrecognised": tally.unrecognised, "grace_hours": check.grace_hours,
        "dry_run": check.dry_run,
    }));
    Ok(Done::lines(lines))
}
