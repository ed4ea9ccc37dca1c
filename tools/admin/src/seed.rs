//! The local stack's commands: its table, bucket and queues
//! (`setup-local`), a demo organization, and data seeded for benchmarks and
//! tries (`seed-loads`, `seed-places`, `add-photo`). Each returns its output
//! lines and what it made (`Done`); `cli` runs and audits them.

use anyhow::{Context, Result};
use serde_json::json;
use shared::auth::Scope;
use shared::config::Config;
use shared::model::Timestamp;
use shared::model::archive::ensure_editable;
use shared::model::org::CreateOrg;
use shared::model::surplus::{CreateSurplus, StoredWaybill, SurplusStatus};
use shared::store::Store;
use shared::store::exactly_once::staged::{Owner, StagedFile};
use uuid::Uuid;

use crate::audit::Done;

/// `seed-loads`: `count` loads of `org` from `site` over the last `days`
/// days (delivered with a waybill's record when asked), written as created.
pub async fn loads(
    store: &Store,
    org: Uuid,
    site: Uuid,
    count: usize,
    days: u32,
    delivered: bool,
) -> Result<Done> {
    let mut lines = Vec::new();
    let mut print = |line: serde_json::Value| lines.push(line);
    let origin = store.sites().require(org, site).await?;
    anyhow::ensure!(origin.archived_at.is_none(), "site {site} is archived");
    let now = shared::clock::now();
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
                    source: None,
                });
            }
            Ok(load)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    store.surpluses().import(&loads).await?;
    print(json!({"org_id": org, "site_id": site, "loads": loads.len()}));
    Ok(Done {
        lines,
        org: None,
        made: None,
    })
}

/// `seed-places`: `count` places (a third each receiving points, sites,
/// factories; half the points public) of `org` and `orgs - 1` others, even
/// over a disc of `spread_km` around (`lat`, `lng`), where `seed` puts
/// them (the same seed, the same places).
pub async fn places(
    store: &Store,
    org: Uuid,
    orgs: usize,
    count: usize,
    (lat, lng): (f64, f64),
    spread_km: f64,
    seed: u64,
) -> Result<Done> {
    let mut lines = Vec::new();
    let mut print = |line: serde_json::Value| lines.push(line);
    use rand::{Rng, SeedableRng};
    use shared::model::{factory, receiving_point, site};
    let center = shared::model::geo::Coordinates::new(lat, lng)?;
    let owners: Vec<Uuid> = std::iter::once(org)
        .chain((1..orgs.max(1)).map(|_| Uuid::now_v7()))
        .collect();
    let now = Timestamp::now();
    let (mut points, mut sites, mut factories) = (Vec::new(), Vec::new(), Vec::new());
    {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
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
                1 => sites
                    .push(serde_json::from_value::<site::CreateSite>(body)?.validate(owner, now)?),
                _ => factories.push(
                    serde_json::from_value::<factory::CreateFactory>(body)?.validate(owner, now)?,
                ),
            }
        }
    }
    store.receiving_points().import(&points).await?;
    store.sites().import(&sites).await?;
    store.factories().import(&factories).await?;
    print(
        json!({"org_id": org, "organizations": owners.len(), "receiving_points": points.len(),
                 "sites": sites.len(), "factories": factories.len()}),
    );
    Ok(Done {
        lines,
        org: None,
        made: None,
    })
}

/// `add-photo`: `file` uploaded as a photo of `receiving_point`, named by
/// the point and put in place as an API upload is.
pub async fn photo(
    config: &Config,
    sdk: &aws_config::SdkConfig,
    store: &Store,
    org: Uuid,
    receiving_point: Uuid,
    file: &std::path::Path,
) -> Result<Done> {
    let mut lines = Vec::new();
    let mut print = |line: serde_json::Value| lines.push(line);
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let kind = shared::files::ImageKind::sniff(&bytes)
        .context("the file is not a JPEG, PNG or WebP image")?;
    let points = store.receiving_points();
    // An archived point is changed by no one, an operator included:
    // restored first (checked again in the write, against an archive
    // meanwhile).
    let point = points.require(org, receiving_point).await?;
    ensure_editable(point.archived_at)?;
    // Uploaded first, under the prefix the bucket expires; in its
    // place once the point names it (as waybills are).
    use shared::files::paths::{self, Area};
    let upload = paths::new(Area::Uploads, org, receiving_point, kind);
    let path = paths::new(Area::ReceivingPoints, org, receiving_point, kind);
    let files = shared::files::Files::new(sdk, &config.files.bucket);
    let version = files.put(&upload, bytes.into(), kind).await?;
    let staged = StagedFile {
        path: path.clone(),
        upload,
        version,
        etag: None,
        content_type: kind.content_type().into(),
        owner: Owner::ReceivingPoint {
            org_id: org,
            id: receiving_point,
        },
        created_at: Timestamp::now(),
    };
    let named = path.clone();
    points
        .modify_staging(
            org,
            receiving_point,
            move |p| {
                ensure_editable(p.archived_at)?;
                p.photos.push(named.clone());
                Ok(())
            },
            &staged,
        )
        .await?;
    if let Err(error) = shared::files::promote::promote(&files, store, &staged).await {
        eprintln!("the photo is recorded; the sweeper will copy it in place: {error}");
    }
    let made = Some(json!({"storage_path": path}));
    print(json!({"receiving_point_id": receiving_point, "storage_path": path}));
    Ok(Done {
        lines,
        org: None,
        made,
    })
}

/// `setup-local`: the table, the bucket and the queues of a local stack.
pub async fn setup_local(config: &Config, sdk: &aws_config::SdkConfig) -> Result<Done> {
    let mut lines = Vec::new();
    let mut print = |line: serde_json::Value| lines.push(line);
    let db = Store::client(sdk);
    let created = shared::store::engine::schema::ensure_table(&db, &config.store.table)
        .await
        .map_err(anyhow::Error::msg)?;
    print(json!({"table": config.store.table, "created": created}));
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(true)
            .build(),
    );
    let created = shared::store::engine::schema::ensure_bucket(&s3, &config.files.bucket)
        .await
        .map_err(anyhow::Error::msg)?;
    print(json!({"bucket": config.files.bucket, "created": created}));
    let sqs = aws_sdk_sqs::Client::new(sdk);
    // Queues of this table's own: stacks sharing one moto (a
    // `make run`, the contract gate) never take each other's messages.
    for role in ["webhooks-dlq", "webhooks"] {
        let name = format!("{}-{role}", config.store.table);
        let url = shared::store::engine::schema::ensure_queue(&sqs, &name)
            .await
            .map_err(anyhow::Error::msg)?;
        print(json!({"queue": name, "role": role, "url": url}));
    }
    Ok(Done {
        lines,
        org: None,
        made: None,
    })
}

/// `demo`: a demo organization with an all-scopes key.
pub async fn demo(config: &Config, store: &Store) -> Result<Done> {
    let mut lines = Vec::new();
    let mut print = |line: serde_json::Value| lines.push(line);
    let prefix = config.http.short_name.key_prefix();
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
    let made = Some(json!({"org_id": org.id, "key_id": record.key_id}));
    let made_org = Some(org.id);
    print(
        json!({"org_id": org.id, "org_name": org.name, "key_id": record.key_id, "api_key": plaintext}),
    );
    Ok(Done {
        lines,
        org: made_org,
        made,
    })
}
