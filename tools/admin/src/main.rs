//! Operator CLI. Talks to DynamoDB directly through the standard AWS
//! configuration chain (`AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_DYNAMODB`, ...).
//! Output: one JSON object per line on stdout; errors on stderr, exit 1.

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Duration, Utc};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::config::Config;
use shared::model::Timestamp;
use shared::model::org::CreateOrg;
use shared::model::surplus::{CreateSurplus, StoredWaybill, SurplusStatus};
use shared::store::Store;
use shared::store::api_keys::ApiKeyRecord;
use uuid::Uuid;

use admin::webhooks;

#[derive(Parser)]
#[command(
    name = "admin",
    about = "Operator tool: organizations, entitlement and API keys"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// Create a demo organization with an all-scopes key (local stack).
    Demo,
    /// Manage an organization's webhooks as a superadmin (audited).
    #[command(subcommand)]
    Webhooks(webhooks::Webhooks),
}

fn parse_scope(text: &str) -> Result<Scope, String> {
    Scope::parse(text).ok_or_else(|| {
        format!(
            "unknown scope {text:?}; use read:orgs, read:data, write:orgs:self, write:data or *"
        )
    })
}

fn print(value: Value) {
    println!("{value}");
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

#[tokio::main]
async fn main() {
    if let Err(error) = run(Cli::parse()).await {
        eprintln!("{}", json!({"error": format!("{error:#}")}));
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> Result<()> {
    let config = Config::from_env()?;
    let sdk = shared::aws::sdk_config(config.sdk_limits).await;
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let endpoints =
        shared::endpoints::configured(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if !endpoints.is_empty() {
        let shown: Vec<String> = endpoints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        eprintln!(
            "admin: using endpoints {}, table {}",
            shown.join(" "),
            config.table_name
        );
    }
    let store = Store::new(Store::client(&sdk), config.table_name.as_str());
    let prefix = config.short_name.key_prefix();
    match cli.command {
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
            print(json!({"org": org, "public_api": public_api}));
        }
        Command::DeactivateOrg { org } => {
            let deactivated = store.orgs().deactivate(org).await;
            if deactivated
                .as_ref()
                .is_err_and(|e| e.code() == "org_not_found")
            {
                // Already deactivated (or none): finish its keys and public
                // points, in case an earlier run stopped before them.
                store.orgs().keys_off(org).await?;
                store.orgs().public_places_off(org).await?;
            }
            deactivated?;
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
                .context("organization not found")?;
            let new = shared::model::member::NewMember {
                first_name,
                last_name,
                phone,
                role: shared::store::members::ROLE_ORG_ADMIN,
                site_id: None,
                login: None,
            };
            let member = store.members().add(org, &new, None).await?;
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
                bail!("the expiry is in the past");
            }
            let (plaintext, record) = store
                .api_keys()
                .create(org, scopes, expires_at, label, &prefix)
                .await?;
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
        } => {
            let origin = store.sites().require(org, site).await?;
            anyhow::ensure!(origin.archived_at.is_none(), "site {site} is archived");
            let now = Utc::now();
            let loads = (0..count)
                .map(|i| {
                    let body: CreateSurplus = serde_json::from_value(
                        json!({"site_id": site, "volume_m3": 1 + i % 9, "description": "seeded"}),
                    )?;
                    let back = chrono::TimeDelta::days((i % days.max(1) as usize) as i64)
                        + chrono::TimeDelta::milliseconds(i as i64);
                    let mut load = body.validate(org, Timestamp::from(now - back))?;
                    if delivered {
                        load.status = SurplusStatus::Delivered;
                        load.delivered_at = Some(load.created_at);
                        load.waybill = Some(StoredWaybill {
                            storage_path: format!("waybills/{org}/{}/seeded.png", load.id),
                            content_type: "image/png".into(),
                            size: 0,
                            uploaded_at: load.created_at,
                        });
                    }
                    Ok(load)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            store.surpluses().import(&loads).await?;
            print(json!({"org_id": org, "site_id": site, "loads": loads.len()}));
        }
        Command::SeedPlaces {
            org,
            orgs,
            count,
            lat,
            lng,
            spread_km,
        } => {
            use rand::Rng;
            use shared::model::{factory, receiving_point, site};
            let center = shared::model::geo::Coordinates::new(lat, lng)?;
            let owners: Vec<Uuid> = std::iter::once(org)
                .chain((1..orgs.max(1)).map(|_| Uuid::now_v7()))
                .collect();
            let mut rng = rand::rng();
            let now = Timestamp::now();
            let (mut points, mut sites, mut factories) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..count {
                // Even over the disc: the distance grows with the square root.
                let at = center.moved(
                    rng.random_range(0.0..360.0),
                    spread_km * rng.random::<f64>().sqrt(),
                );
                let owner = owners[i % owners.len()];
                let body = json!({"name": format!("Seeded place {i}"), "lat": at.lat, "lng": at.lng,
                                  "site_id": Uuid::nil(), "is_public": i % 2 == 0});
                match i % 3 {
                    0 => points.push(
                        serde_json::from_value::<receiving_point::CreateReceivingPoint>(body)?
                            .validate(owner, now)?,
                    ),
                    1 => sites.push(
                        serde_json::from_value::<site::CreateSite>(body)?.validate(owner, now)?,
                    ),
                    _ => factories.push(
                        serde_json::from_value::<factory::CreateFactory>(body)?
                            .validate(owner, now)?,
                    ),
                }
            }
            store.receiving_points().import(&points).await?;
            store.sites().import(&sites).await?;
            store.factories().import(&factories).await?;
            print(
                json!({"org_id": org, "organizations": owners.len(), "receiving_points": points.len(),
                         "sites": sites.len(), "factories": factories.len()}),
            );
        }
        Command::AddPhoto {
            org,
            receiving_point,
            file,
        } => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let kind = shared::files::ImageKind::sniff(&bytes)
                .context("the file is not a JPEG, PNG or WebP image")?;
            let (extension, content_type) = (kind.extension(), kind.content_type());
            let points = store.receiving_points();
            points.require(org, receiving_point).await?;
            let path = format!(
                "receiving-points/{org}/{receiving_point}/{}.{extension}",
                Uuid::now_v7()
            );
            shared::links::s3_client(&sdk)
                .put_object()
                .bucket(&config.bucket_name)
                .key(&path)
                .content_type(content_type)
                .body(bytes.into())
                .send()
                .await
                .map_err(|e| {
                    anyhow::anyhow!(aws_sdk_s3::error::DisplayErrorContext(e).to_string())
                })?;
            let stored = path.clone();
            points
                .modify(org, receiving_point, move |p| {
                    p.photos.push(stored.clone());
                    Ok(())
                })
                .await?;
            print(json!({"receiving_point_id": receiving_point, "storage_path": path}));
        }
        Command::SetupLocal => {
            let db = Store::client(&sdk);
            let created = shared::store::schema::ensure_table(&db, &config.table_name)
                .await
                .map_err(anyhow::Error::msg)?;
            print(json!({"table": config.table_name, "created": created}));
            let s3 = aws_sdk_s3::Client::from_conf(
                aws_sdk_s3::config::Builder::from(&sdk)
                    .force_path_style(true)
                    .build(),
            );
            let created = shared::store::schema::ensure_bucket(&s3, &config.bucket_name)
                .await
                .map_err(anyhow::Error::msg)?;
            print(json!({"bucket": config.bucket_name, "created": created}));
            let sqs = aws_sdk_sqs::Client::new(&sdk);
            // Queues of this table's own: stacks sharing one moto (a
            // `make run`, the contract gate) never take each other's messages.
            for role in ["webhooks-dlq", "webhooks"] {
                let name = format!("{}-{role}", config.table_name);
                let url = shared::store::schema::ensure_queue(&sqs, &name)
                    .await
                    .map_err(anyhow::Error::msg)?;
                print(json!({"queue": name, "role": role, "url": url}));
            }
        }
        Command::Webhooks(command) => {
            let state = shared::AppState::new(config.clone(), &sdk);
            for line in webhooks::run(&state, command).await? {
                print(line);
            }
        }
        Command::Demo => {
            let name = format!("Demo Concrete {}", &Uuid::new_v4().to_string()[..8]);
            let new = CreateOrg {
                name,
                parent_id: None,
                business_code: None,
                street_address: Some("Demo street 1".into()),
                postal_code: Some("00100".into()),
                city: Some("Helsinki".into()),
                invoice_email: None,
            }
            .validate()?;
            let org = store.orgs().create_top_level(&new, true).await?;
            let (plaintext, record) = store
                .api_keys()
                .create(
                    org.id,
                    vec![Scope::All],
                    None,
                    Some("make run demo".into()),
                    &prefix,
                )
                .await?;
            print(
                json!({"org_id": org.id, "org_name": org.name, "key_id": record.key_id, "api_key": plaintext}),
            );
        }
    }
    Ok(())
}
