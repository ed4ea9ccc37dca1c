//! The operator CLI's commands: what each takes, what it changes (its
//! audit), and what it does. `main.rs` parses and prints.
//! Every command that changes something is audited (`admin::audit`): a
//! record in the table before it acts and one of its outcome before it
//! answers, naming the caller's AWS identity; `admin audit list` reads them.

use anyhow::{Result, bail};
use chrono::{DateTime, Duration, Utc};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::config::Config;
use shared::model::Timestamp;
use shared::model::org::CreateOrg;
use shared::store::Store;
use shared::store::engine::calls::CallCounter;
use shared::store::operators::api_keys::ApiKeyRecord;
use uuid::Uuid;

use crate::audit::{Action, Auditor, Done};
use crate::identity::Operator;
use crate::{files, keys, reseal, seed, tickets, webhooks};
use shared::ApiError;
use shared::store::operators::audit::AuditQuery;

#[derive(Parser)]
#[command(
    name = "admin",
    about = "Operator tool: organizations, entitlement and API keys"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Create a top-level organization.
    CreateOrg {
        #[arg(long)]
        name: String,
        /// Enable public-API features at once.
        #[arg(long)]
        public_api: bool,
        #[arg(long)]
        business_code: Option<String>,
        #[arg(long)]
        street_address: Option<String>,
        #[arg(long)]
        postal_code: Option<String>,
        #[arg(long)]
        city: Option<String>,
        #[arg(long)]
        invoice_email: Option<String>,
    },
    /// Deactivate (soft-delete) an organization for good: its keys stop
    /// working, the grants it issued end, its parent no longer lists it and
    /// its name is free again.
    DeactivateOrg {
        #[arg(long)]
        org: Uuid,
    },
    /// Switch an organization's public-API entitlement (and its keys').
    Entitlement {
        #[arg(long)]
        org: Uuid,
        #[arg(long, action = clap::ArgAction::Set)]
        enabled: bool,
    },
    /// Add an `org_admin` member (copied to sub-organizations created later).
    AddAdmin {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        first_name: String,
        #[arg(long)]
        last_name: String,
        /// E.164, e.g. +358401234567.
        #[arg(long)]
        phone: String,
    },
    /// Create an API key; prints it once.
    CreateKey {
        #[arg(long)]
        org: Uuid,
        /// Repeatable: read:orgs, read:data, write:orgs:self, write:data or *.
        #[arg(long = "scope", required = true, value_parser = parse_scope)]
        scopes: Vec<Scope>,
        /// Expiry as RFC 3339 (2027-01-31T00:00:00Z).
        #[arg(long, conflicts_with = "expires_in_days")]
        expires_at: Option<DateTime<Utc>>,
        /// Expiry in days from now.
        #[arg(long)]
        expires_in_days: Option<u32>,
        /// A note for operators (who uses the key).
        #[arg(long)]
        label: Option<String>,
    },
    /// List an organization's keys (no secrets).
    ListKeys {
        #[arg(long)]
        org: Uuid,
    },
    /// Revoke a key, permanently.
    RevokeKey {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        key_id: Uuid,
    },
    /// Record a truck's last known position (positions come from vehicles,
    /// never through the API; this is how an operator or the local stack
    /// sets one).
    TruckPosition {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        truck: Uuid,
        #[arg(long, allow_hyphen_values = true)]
        lat: f64,
        #[arg(long, allow_hyphen_values = true)]
        lng: f64,
        /// When the position was taken (RFC 3339); default now.
        #[arg(long)]
        at: Option<DateTime<Utc>>,
    },
    /// Take a truck out of service: gone from the API, its plate free again,
    /// its driver let go.
    RetireTruck {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        truck: Uuid,
    },
    /// Archive a surplus load (there is no API route for it): the load
    /// leaves every list and reads as 404 `surplus_not_found`.
    ArchiveSurplus {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        surplus: Uuid,
    },
    /// Write COUNT new loads from an active site in bulk (benchmark and demo
    /// data; BatchWriteItem, not the API path).
    SeedLoads {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        site: Uuid,
        #[arg(long, default_value_t = 1000)]
        count: usize,
        /// Spread their creation over this many days back from now.
        #[arg(long, default_value_t = 1)]
        days: u32,
        /// Store them delivered (with a placeholder waybill) instead of new.
        #[arg(long)]
        delivered: bool,
    },
    /// Write COUNT places (benchmark data; BatchWriteItem, not the API
    /// path) spread evenly over a disc: receiving points (every second one
    /// public), sites and factories in turn, owned by ORGS organizations,
    /// `--org` among them (the rest are owner ids of no organization).
    SeedPlaces {
        #[arg(long)]
        org: Uuid,
        #[arg(long, default_value_t = 100)]
        orgs: usize,
        #[arg(long, default_value_t = 10_000)]
        count: usize,
        #[arg(long, default_value_t = 60.17)]
        lat: f64,
        #[arg(long, default_value_t = 24.94)]
        lng: f64,
        /// Radius of the disc, km.
        #[arg(long, default_value_t = 150.0)]
        spread_km: f64,
        /// The placement's seed: the same seed places the places alike,
        /// so a measurement over them (`make cost`) repeats.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Add a photo (JPEG, PNG or WebP) to a receiving point.
    AddPhoto {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        receiving_point: Uuid,
        #[arg(long)]
        file: std::path::PathBuf,
    },
    /// Create the table, bucket and queues if missing (local stack).
    SetupLocal,
    /// Upgrade step: write the key index (`KEYS#<org>`, what operators
    /// list, revoke and switch) of every key that has none, from the keys'
    /// own items (a table from before the index). Safe to run again.
    IndexKeys,
    /// Upgrade step: rewrite the public receiving points' entries of a
    /// table from before their sort keys held the point's geohash (nearby
    /// search reads crowded cells by parts), and write each into the
    /// copies of its cell (then raise `PublicCellCopies`). Safe to run
    /// again, and beside the API.
    ReindexPlaces,
    /// Create a demo organization with an all-scopes key (local stack).
    Demo,
    /// Manage an organization's webhooks as a superadmin.
    #[command(subcommand)]
    Webhooks(webhooks::Webhooks),
    /// Read the operators' audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// The deployment's rotating keys (seal key, cursor key): show,
    /// rotate, drop a generation.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Seal again, with the seal key's newest generation, every value still
    /// sealed with an old one (`--check`: count them).
    Reseal(reseal::Reseal),
    /// The bucket's files: find (and remove) those no record names.
    #[command(subcommand)]
    Files(files::FilesCommand),
    /// Support tickets: close the issues the tracker holds twice for one
    /// request.
    #[command(subcommand)]
    Tickets(tickets::TicketsCommand),
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Audit records newest first, one JSON object a line: every command
    /// that changed something (or tried to), who ran it, and its outcome.
    List {
        /// One organization's records (all when left out).
        #[arg(long)]
        org: Option<Uuid>,
        /// From this time on (RFC 3339).
        #[arg(long)]
        since: Option<DateTime<Utc>>,
        /// Up to this time (RFC 3339).
        #[arg(long)]
        until: Option<DateTime<Utc>>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

fn parse_scope(text: &str) -> Result<Scope, String> {
    Scope::parse(text).ok_or_else(|| {
        format!(
            "unknown scope {text:?}; use read:orgs, read:data, write:orgs:self, write:data or *"
        )
    })
}

impl Command {
    /// What the command changes, for its audit records; `None` when it
    /// only reads.
    pub fn action(&self) -> Option<Action> {
        use Command::*;
        let (command, org, target) = match self {
            CreateOrg {
                name, public_api, ..
            } => (
                "create-org",
                None,
                json!({"name": name, "public_api": public_api}),
            ),
            DeactivateOrg { org } => ("deactivate-org", Some(*org), json!({})),
            Entitlement { org, enabled } => {
                ("entitlement", Some(*org), json!({"enabled": enabled}))
            }
            // The person's name and number stay in their member record.
            AddAdmin { org, .. } => ("add-admin", Some(*org), json!({})),
            CreateKey {
                org,
                scopes,
                expires_at,
                expires_in_days,
                label,
            } => (
                "create-key",
                Some(*org),
                json!({"scopes": scopes, "expires_at": expires_at,
                       "expires_in_days": expires_in_days, "label": label}),
            ),
            RevokeKey { org, key_id } => ("revoke-key", Some(*org), json!({"key_id": key_id})),
            TruckPosition { org, truck, at, .. } => (
                "truck-position",
                Some(*org),
                json!({"truck_id": truck, "at": at}),
            ),
            RetireTruck { org, truck } => ("retire-truck", Some(*org), json!({"truck_id": truck})),
            ArchiveSurplus { org, surplus } => (
                "archive-surplus",
                Some(*org),
                json!({"surplus_id": surplus}),
            ),
            SeedLoads {
                org,
                site,
                count,
                delivered,
                ..
            } => (
                "seed-loads",
                Some(*org),
                json!({"site_id": site, "count": count, "delivered": delivered}),
            ),
            SeedPlaces {
                org, orgs, count, ..
            } => (
                "seed-places",
                Some(*org),
                json!({"organizations": orgs, "count": count}),
            ),
            AddPhoto {
                org,
                receiving_point,
                ..
            } => (
                "add-photo",
                Some(*org),
                json!({"receiving_point_id": receiving_point}),
            ),
            SetupLocal => ("setup-local", None, json!({})),
            IndexKeys => ("index-keys", None, json!({})),
            ReindexPlaces => ("reindex-places", None, json!({})),
            Demo => ("demo", None, json!({})),
            Webhooks(command) => return command.action(),
            Keys(command) => return command.action(),
            Reseal(command) => return command.action(),
            Files(command) => return command.action(),
            Tickets(command) => return command.action(),
            ListKeys { .. } | Audit(_) => return None,
        };
        Some(Action::new(command, org, target))
    }
}

fn key_json(record: &ApiKeyRecord) -> Value {
    json!({
        "key_id": record.key_id,
        "org_id": record.org_id,
        "scopes": record.scopes,
        "label": record.label,
        "public_api": record.public_api,
        "org_active": record.org_active,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "revoked_at": record.revoked_at,
    })
}

/// Runs `command` on `config`'s table as the caller `sdk` names, audited
/// when it changes something.
pub async fn run(command: Command, config: &Config, sdk: &aws_config::SdkConfig) -> Result<Done> {
    run_as(command, config, &Operator::as_configured(sdk)).await
}

/// Runs `command` as `operator` (`identity`), audited when it changes
/// something.
pub async fn run_as(command: Command, config: &Config, operator: &Operator) -> Result<Done> {
    shared::aws_calls::record::named(config.named_resources());
    match command {
        Command::SetupLocal => {
            CallCounter::for_caller("admin setup-local")
                .scope(Box::pin(run_as_caller(command, config, operator)))
                .await
        }
        _ => as_operators(run_as_caller(command, config, operator)).await,
    }
}

/// Runs `work` as the operators' CLI: its AWS calls are judged by the
/// template's OperatorsPolicy (the role check), but for `setup-local`,
/// the local stack's own making. Boxed: the commands' futures are large
/// for a test thread's stack.
pub(crate) async fn as_operators<T>(work: impl std::future::Future<Output = T>) -> T {
    CallCounter::for_caller("admin").scope(Box::pin(work)).await
}

async fn run_as_caller(command: Command, config: &Config, operator: &Operator) -> Result<Done> {
    let sdk = &operator.sdk;
    let store = Store::new(Store::client(sdk), config.store.table.as_str());
    let done = match command.action() {
        None => execute(command, config, sdk, &store).await?,
        // It makes the table its records go in: recorded once that exists.
        Some(action) if matches!(command, Command::SetupLocal) => {
            let done = execute(command, config, sdk, &store).await?;
            let auditor = Auditor::of(operator, store).await?;
            auditor.run(action, async { Ok(done) }).await?
        }
        Some(action) => {
            let auditor = Auditor::of(operator, store.clone()).await?;
            let work = execute(command, config, sdk, &store);
            auditor.run(action, work).await?
        }
    };
    Ok(done)
}

/// Runs `command`: its output lines, and what it made.
async fn execute(
    command: Command,
    config: &Config,
    sdk: &aws_config::SdkConfig,
    store: &Store,
) -> Result<Done> {
    let prefix = config.http.short_name.key_prefix();
    let (mut lines, mut made, mut made_org) = (Vec::new(), None, None);
    let mut print = |line: Value| lines.push(line);
    match command {
        Command::CreateOrg {
            name,
            public_api,
            business_code,
            street_address,
            postal_code,
            city,
            invoice_email,
        } => {
            let new = CreateOrg {
                name,
                parent_id: None,
                business_code,
                street_address,
                postal_code,
                city,
                invoice_email,
            }
            .validate()?;
            let org = store.orgs().create_top_level(&new, public_api).await?;
            (made, made_org) = (Some(json!({"org_id": org.id})), Some(org.id));
            print(json!({"org": org, "public_api": public_api}));
        }
        Command::DeactivateOrg { org } => {
            let deactivated = store.orgs().deactivate(org).await;
            let mut finished = false;
            if deactivated
                .as_ref()
                .is_err_and(|e| e.code() == "org_not_found")
            {
                // Already deactivated (or none): finish its keys and public
                // points, in case an earlier run stopped before them; a run
                // again after one that was cut is then done, not 404.
                store.orgs().keys_off(org).await?;
                store.orgs().public_places_off(org).await?;
                finished = store.orgs().deactivated(org).await?;
            }
            if !finished {
                deactivated?;
            }
            print(json!({"org_id": org, "status": shared::model::org::STATUS_DELETED}));
        }
        Command::Entitlement { org, enabled } => {
            store.api_keys().set_entitlement(org, enabled).await?;
            print(json!({"org_id": org, "public_api": enabled}));
        }
        Command::AddAdmin {
            org,
            first_name,
            last_name,
            phone,
        } => {
            let phone = shared::model::validate::e164("phone", phone.trim())?;
            store
                .orgs()
                .get(org)
                .await?
                .ok_or_else(ApiError::org_not_found)?;
            let new = shared::model::member::NewMember {
                first_name,
                last_name,
                phone,
                role: shared::store::records::members::ROLE_ORG_ADMIN,
                site_id: None,
                login: None,
            };
            let member = store.members().add(org, &new, None).await?;
            made = Some(json!({"profile_id": member.profile_id}));
            print(json!({"member": member}));
        }
        Command::CreateKey {
            org,
            scopes,
            expires_at,
            expires_in_days,
            label,
        } => {
            let expires_at = expires_at
                .map(Timestamp::from)
                .or(expires_in_days.map(|d| Timestamp::now() + Duration::days(i64::from(d))));
            if expires_at.is_some_and(|at| at <= Timestamp::now()) {
                bail!(ApiError::validation("expires_at", "is in the past"));
            }
            let (plaintext, record) = store
                .api_keys()
                .create(org, scopes, expires_at, label, &prefix)
                .await?;
            made = Some(json!({"key_id": record.key_id}));
            let mut out = key_json(&record);
            out["api_key"] = json!(plaintext);
            print(out);
        }
        Command::ListKeys { org } => {
            for record in store.api_keys().list(org).await? {
                print(key_json(&record));
            }
        }
        Command::RevokeKey { org, key_id } => {
            let record = store.api_keys().revoke(org, key_id).await?;
            print(key_json(&record));
        }
        Command::ReindexPlaces => {
            let done = store.places().reindex_public().await?;
            let done = json!({"rewritten": done.rewritten, "copied": done.copied});
            made = Some(done.clone());
            print(done);
        }
        Command::IndexKeys => {
            let written = store.api_keys().index_every_key().await?;
            made = Some(json!({"indexed": written}));
            print(json!({"indexed": written}));
        }
        Command::TruckPosition {
            org,
            truck,
            lat,
            lng,
            at,
        } => {
            let coordinates = shared::model::geo::Coordinates::new(lat, lng)?;
            let at = at.map_or_else(Timestamp::now, Timestamp::from);
            let truck = store
                .trucks()
                .record_position(org, truck, coordinates, at)
                .await?;
            print(json!({"truck": truck.view()}));
        }
        Command::RetireTruck { org, truck } => {
            let truck = store.trucks().retire(org, truck).await?;
            print(json!({"truck_id": truck.id, "retired_at": truck.retired_at}));
        }
        Command::ArchiveSurplus { org, surplus } => {
            let surplus = store.surpluses().archive(org, surplus).await?;
            print(json!({"surplus_id": surplus.id, "archived_at": surplus.archived_at}));
        }
        Command::SeedLoads {
            org,
            site,
            count,
            days,
            delivered,
        } => return seed::loads(store, org, site, count, days, delivered).await,
        Command::SeedPlaces {
            org,
            orgs,
            count,
            lat,
            lng,
            spread_km,
            seed,
        } => return seed::places(store, org, orgs, count, (lat, lng), spread_km, seed).await,
        Command::AddPhoto {
            org,
            receiving_point,
            file,
        } => return seed::photo(config, sdk, store, org, receiving_point, &file).await,
        Command::SetupLocal => return seed::setup_local(config, sdk).await,
        Command::Webhooks(command) => {
            let state = shared::state::AppState::new(config.clone(), sdk);
            return webhooks::run(&state, command).await;
        }
        Command::Keys(command) => return keys::run(config, sdk, command).await,
        Command::Reseal(command) => return reseal::run(config, sdk, command).await,
        Command::Files(command) => return files::run(config, sdk, command).await,
        Command::Tickets(command) => return tickets::run(config, sdk, command).await,
        Command::Audit(AuditCommand::List {
            org,
            since,
            until,
            limit,
        }) => {
            let query = AuditQuery {
                org,
                since: since.map(Timestamp::from),
                until: until.map(Timestamp::from),
                limit: limit.max(1),
            };
            for record in store.audit().list(&query).await? {
                print(json!(record));
            }
        }
        Command::Demo => return seed::demo(config, store).await,
    }
    Ok(Done {
        lines,
        org: made_org,
        made,
    })
}
