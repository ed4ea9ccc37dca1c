//! `admin reseal`: after the seal key rotated (`admin keys rotate --key
//! seal`, and its new generation seals), seals again with the new
//! generation every value still sealed with an old one, a page of the
//! table at a time, each only if it is still as read. Progress goes to
//! stderr, one line a page, with the position to `--resume` from; it is
//! safe to run again. `--check` counts the values by the version that
//! sealed them, and how many still need an old one: at 0, the old
//! generation can be dropped (`admin keys drop`).

use std::collections::BTreeMap;

use anyhow::Result;
use clap::Args;
use serde_json::json;
use shared::config::Config;
use shared::sealed::version_of;
use shared::state::AppState;
use shared::store::exactly_once::sealed_values::Resume;

use crate::audit::{Action, Done};

/// The fewest items a page may read (`--page-items`).
const MIN_PAGE_ITEMS: i64 = 10;

#[derive(Args)]
pub struct Reseal {
    /// Count only: the values by version, and how many need an old one.
    #[arg(long)]
    check: bool,
    /// Go on from where an interrupted run stopped (its last `resume`).
    #[arg(long)]
    resume: Option<String>,
    /// Items read a page, at least 10 (DynamoDB's 1 MB a page when left
    /// out). Each run writes two audit records, which a resumed walk may
    /// meet again: a page must read more than that, or a walk resumed a
    /// page at a time would never end.
    #[arg(long, value_parser = clap::value_parser!(u16).range(MIN_PAGE_ITEMS..))]
    page_items: Option<u16>,
    /// Stop after this many pages (a bounded run; go on with `--resume`).
    #[arg(long)]
    pages: Option<u64>,
}

impl Reseal {
    /// What the command changes, for its audit; `None` for `--check`.
    pub fn action(&self) -> Option<Action> {
        (!self.check)
            .then(|| Action::new("reseal", None, json!({"resumed": self.resume.is_some()})))
    }
}

/// Counts of what a walk of the table found and did.
#[derive(Default)]
struct Tally {
    /// Values by the version that sealed them (before any resealing).
    by_version: BTreeMap<u32, u64>,
    resealed: u64,
    /// Changed or gone between the read and the write: left to the next run.
    changed: u64,
    /// Not a sealed value of any version (counted as needing an old one).
    unversioned: u64,
    /// Of a version found, but not opened (a generation no longer held,
    /// or altered): already counted under its version.
    unopenable: u64,
}

/// Runs `reseal` against `config`'s table and seal key.
pub async fn run(config: &Config, sdk: &aws_config::SdkConfig, reseal: Reseal) -> Result<Done> {
    let state = AppState::new(config.clone(), sdk);
    let mut start = reseal
        .resume
        .as_deref()
        .map(str::parse::<Resume>)
        .transpose()?;
    let mut tally = Tally::default();
    let mut pages_read = 0u64;
    let items = reseal.page_items.map(i32::from);
    loop {
        let (values, next) = state.store.sealed_values().page(start, items).await?;
        for value in &values {
            let Some((version, _)) = version_of(&value.sealed) else {
                tally.unversioned += 1;
                continue;
            };
            *tally.by_version.entry(version).or_default() += 1;
            if reseal.check {
                continue;
            }
            match state.sealer.reseal(&value.owner, &value.sealed).await {
                Ok(None) => {}
                Ok(Some(resealed)) => match state
                    .store
                    .sealed_values()
                    .replace(value, &resealed)
                    .await?
                {
                    true => tally.resealed += 1,
                    false => tally.changed += 1,
                },
                Err(_) => tally.unopenable += 1,
            }
        }
        pages_read += 1;
        let resume = next.clone().map(String::from);
        if !reseal.check {
            eprintln!(
                "{}",
                json!({"page": pages_read, "resealed": tally.resealed, "changed": tally.changed, "resume": resume})
            );
        }
        start = next;
        if start.is_none() || reseal.pages.is_some_and(|pages| pages_read >= pages) {
            break;
        }
    }
    // What is left is known only after a walk of the whole table.
    let whole = reseal.resume.is_none() && start.is_none();
    let current = state.sealer.current_version().await?;
    let old: u64 = tally
        .by_version
        .iter()
        .filter(|(version, _)| **version != current)
        .map(|(_, count)| count)
        .sum();
    let by_version: BTreeMap<String, u64> = tally
        .by_version
        .iter()
        .map(|(v, c)| (v.to_string(), *c))
        .collect();
    let line = if reseal.check {
        json!({"seals_with": current, "sealed": by_version, "need_an_old_version": old + tally.unversioned})
    } else {
        json!({"seals_with": current, "found": by_version, "resealed": tally.resealed,
               "changed_meanwhile": tally.changed, "unopenable": tally.unopenable,
               "need_an_old_version": whole.then(|| old.saturating_sub(tally.resealed) + tally.unversioned),
               "resume": start.map(String::from)})
    };
    Ok(Done::line(line))
}

/// How many values are sealed with `version` (`admin keys drop`).
pub async fn count(config: &Config, sdk: &aws_config::SdkConfig, version: u32) -> Result<u64> {
    let state = AppState::new(config.clone(), sdk);
    let (mut start, mut count) = (None, 0);
    loop {
        let (values, next) = state.store.sealed_values().page(start, None).await?;
        count += values
            .iter()
            .filter(|value| version_of(&value.sealed).is_some_and(|(v, _)| v == version))
            .count() as u64;
        start = next;
        if start.is_none() {
            return Ok(count);
        }
    }
}
