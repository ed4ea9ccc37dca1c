//! `admin files check`: files in place that no record names are found,
//! listed by a dry run, left within the grace period, and removed after
//! it; what records name (archived ones too: a load's waybill, a
//! receiving point's photos, shown again when it is restored) and what no request names
//! are never touched.

use api_tests::cuts::{Cut, Cuts};
use api_tests::{call, harness, multipart, org, run};
use chrono::TimeDelta;
use http::Method;
use serde_json::{Value, json};
use shared::clock::Clock;
use shared::config::Config;
use shared::files::paths::{self, Area};
use shared::files::{Files, ImageKind};
use uuid::Uuid;

use crate::rotation::admin_on;
use crate::waybills::PNG;

const BOUNDARY: &str = "orphans-boundary";

fn waybill_upload(key: &str, load: &str) -> api_tests::Call {
    call(Method::POST, &format!("/api/v1/surpluses/{load}/waybill"))
        .key(key)
        .body(
            &format!("multipart/form-data; boundary={BOUNDARY}"),
            multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG))),
        )
}

/// `admin files check <args>` by `clock`: the orphans' lines and the
/// count.
async fn check(config: &Config, clock: &Clock, args: &[&str]) -> (Vec<Value>, Value) {
    let mut line = vec!["files", "check"];
    line.extend_from_slice(args);
    let mut lines = admin_on(config, clock, &line).await.unwrap().lines;
    let count = lines.pop().unwrap();
    (lines, count)
}

fn counted(count: &Value) -> [u64; 6] {
    [
        "checked",
        "named",
        "young",
        "orphans",
        "removed",
        "unrecognised",
    ]
    .map(|field| {
        count[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field} in {count}"))
    })
}

fn orphans(lines: &[Value], removed: bool) -> Vec<String> {
    let mut paths: Vec<String> = lines
        .iter()
        .map(|line| {
            assert_eq!(line["removed"], removed, "{line}");
            line["orphan"].as_str().unwrap().to_owned()
        })
        .collect();
    paths.sort();
    paths
}

#[test]
fn files_no_record_names_are_listed_by_a_dry_run_and_removed_once_past_the_grace_period() {
    run(async {
        let h = harness().await;
        // A bucket of its own: the check lists a whole bucket.
        let bucket = format!("orphans-{}", Uuid::new_v4());
        let s3 = shared::links::s3_client(&h.sdk);
        shared::store::engine::schema::ensure_bucket(&s3, &bucket)
            .await
            .unwrap();
        let mut config = (*h.state.config).clone();
        config.files.bucket = bucket.clone();
        let router = h.router_with(|c| c.files.bucket = bucket.clone());
        let files = Files::new(&h.sdk, &bucket);
        let t = org().await;
        let on = |method: Method, path: String, body: Value| {
            call(method, &path).key(&t.key).json(&body).send_to(&router)
        };
        let site = on(
            Method::POST,
            "/api/v1/sites".into(),
            json!({"name": "Yard"}),
        )
        .await;
        let site = site.body["data"]["id"].as_str().unwrap().to_owned();
        let new_load = async || {
            let body = json!({"site_id": site, "volume_m3": 3});
            let load = on(Method::POST, "/api/v1/surpluses".into(), body).await;
            load.body["data"]["id"].as_str().unwrap().to_owned()
        };
        let waybill_of = async |load: &str| {
            let read = on(
                Method::GET,
                format!("/api/v1/surpluses/{load}"),
                Value::Null,
            )
            .await;
            read.body["data"]["waybill"]["storage_path"]
                .as_str()
                .map(str::to_owned)
        };

        // 1. An attempt paused after it read that its load names its file
        //    and before its copy, thawed after another replaced the
        //    waybill: its copy lands where no record points.
        let load = new_load().await;
        let cuts = Cuts::default();
        let faulty = shared::state::AppState::new(config.clone(), &cuts.sdk(&h.sdk));
        let faulty = shared::http::app(local::routes(), faulty);
        cuts.arm_first(Cut::Stall, "CopyObject");
        let attempt = waybill_upload(&t.key, &load);
        let paused = tokio::spawn(async move { attempt.send_to(&faulty).await });
        cuts.stalled().await;
        let late = waybill_of(&load)
            .await
            .expect("the paused attempt committed");
        waybill_upload(&t.key, &load)
            .send_to(&router)
            .await
            .expect(200, None);
        let kept = waybill_of(&load).await.unwrap();
        assert_ne!(kept, late);
        cuts.go();
        paused.await.unwrap().expect(200, None);
        assert!(files.exists(&late).await.unwrap(), "the late copy landed");

        // 2. A waybill of a load no record holds, and a photo its point
        //    does not name (a request that died before deleting them).
        let gone = paths::new(Area::Waybills, t.id(), Uuid::new_v4(), ImageKind::Png);
        let point = on(
            Method::POST,
            "/api/v1/receiving-points".into(),
            json!({"site_id": site, "name": "Gate"}),
        )
        .await;
        let point = point.body["data"]["id"].as_str().unwrap().to_owned();
        let stray = paths::new(
            Area::ReceivingPoints,
            t.id(),
            point.parse().unwrap(),
            ImageKind::Jpeg,
        );
        for path in [&gone, &stray] {
            files.put(path, PNG.into(), ImageKind::Png).await.unwrap();
        }
        // 3. Named: the point's own photo, an archived load's waybill.
        let clock = Clock::default();
        let photo = std::env::temp_dir().join(format!("{}.png", Uuid::now_v7()));
        std::fs::write(&photo, PNG).unwrap();
        let org_id = t.id().to_string();
        let added = admin_on(
            &config,
            &clock,
            &[
                "add-photo",
                "--org",
                &org_id,
                "--receiving-point",
                &point,
                "--file",
                photo.to_str().unwrap(),
            ],
        )
        .await
        .unwrap();
        let _ = std::fs::remove_file(&photo);
        let named_photo = added.lines[0]["storage_path"].as_str().unwrap().to_owned();
        let archived = new_load().await;
        waybill_upload(&t.key, &archived)
            .send_to(&router)
            .await
            .expect(200, None);
        let archived_waybill = waybill_of(&archived).await.unwrap();
        admin_on(
            &config,
            &clock,
            &["archive-surplus", "--org", &org_id, "--surplus", &archived],
        )
        .await
        .unwrap();
        //    And the point archived: its photo is still named (a restore
        //    shows it again).
        on(
            Method::DELETE,
            format!("/api/v1/receiving-points/{point}"),
            Value::Null,
        )
        .await
        .expect(200, None);
        // 4. Not a name any request makes.
        let foreign = "waybills/README.png".to_owned();
        files
            .put(&foreign, PNG.into(), ImageKind::Png)
            .await
            .unwrap();

        let mut found = vec![late.clone(), gone.clone(), stray.clone()];
        found.sort();
        let named = [&kept, &named_photo, &archived_waybill];
        let began = clock.now();

        // Within the grace period (a day unless told): nothing judged.
        let (lines, count) = check(&config, &clock, &[]).await;
        assert_eq!(
            (lines.len(), counted(&count)),
            (0, [7, 0, 7, 0, 0, 0]),
            "{count}"
        );
        let day_less_an_hour = Clock::frozen_at(began + TimeDelta::hours(23));
        let (_, count) = check(&config, &day_less_an_hour, &["--dry-run"]).await;
        assert_eq!(counted(&count), [7, 0, 7, 0, 0, 0], "{count}");

        // Past it, a dry run lists the orphans and removes nothing.
        let past = Clock::frozen_at(began + TimeDelta::hours(25));
        let (lines, count) = check(&config, &past, &["--dry-run"]).await;
        assert_eq!(counted(&count), [7, 3, 0, 3, 0, 1], "{count}");
        assert_eq!(orphans(&lines, false), found);
        for path in found.iter().chain(named).chain([&foreign]) {
            assert!(
                files.exists(path).await.unwrap(),
                "{path} removed by a dry run"
            );
        }
        let (lines, count) =
            check(&config, &past, &["--dry-run", "--only", "receiving-points"]).await;
        assert_eq!(counted(&count), [2, 1, 0, 1, 0, 0], "{count}");
        assert_eq!(orphans(&lines, false), vec![stray.clone()]);

        // Removed, a page of two objects at a time; then none left.
        let (lines, count) = check(&config, &past, &["--page-objects", "2"]).await;
        assert_eq!(counted(&count), [7, 3, 0, 3, 3, 1], "{count}");
        assert_eq!(orphans(&lines, true), found);
        for path in &found {
            assert!(!files.exists(path).await.unwrap(), "{path} left");
        }
        for path in named.into_iter().chain([&foreign]) {
            assert!(files.exists(path).await.unwrap(), "{path} removed");
        }
        let read = on(
            Method::GET,
            format!("/api/v1/surpluses/{load}"),
            Value::Null,
        )
        .await;
        let link = read.body["data"]["waybill"]["url"].as_str().unwrap();
        assert_eq!(
            api_tests::http("GET", link, &[], b"").await,
            (200, PNG.to_vec())
        );
        let (lines, count) = check(&config, &past, &["--grace-hours", "0"]).await;
        assert_eq!(
            (lines.len(), counted(&count)),
            (0, [4, 3, 0, 0, 0, 1]),
            "{count}"
        );
        // The archived point restored shows its photo, whole.
        on(
            Method::POST,
            format!("/api/v1/receiving-points/{point}/restore"),
            Value::Null,
        )
        .await
        .expect(200, None);
        let restored = on(
            Method::GET,
            format!("/api/v1/receiving-points/{point}"),
            Value::Null,
        )
        .await;
        let photo = &restored.body["data"]["photos"][0];
        assert_eq!(photo["storage_path"], named_photo.as_str());
        let link = photo["url"].as_str().unwrap();
        assert_eq!(
            api_tests::http("GET", link, &[], b"").await,
            (200, PNG.to_vec())
        );

        // Only what removed something, or could have, is audited: the
        // three runs (a day's grace twice, none once), no dry run.
        let trail = admin_on(
            &config,
            &clock,
            &["audit", "list", "--since", &began.to_rfc3339()],
        )
        .await
        .unwrap()
        .lines;
        let mut graces: Vec<u64> = trail
            .iter()
            .filter(|r| r["command"] == "files-check" && r["outcome"] != "started")
            .map(|r| r["target"]["grace_hours"].as_u64().unwrap())
            .collect();
        graces.sort_unstable();
        assert_eq!(graces, [0, 24, 24], "{trail:?}");
    });
}

/// A file is judged once exactly the grace period has passed since it was
/// written, and not a millisecond before.
#[test]
fn the_grace_period_ends_exactly_at_its_length() {
    use shared::files::Listed;
    use shared::files::orphans::{Looked, look};
    run(async {
        let store = harness().await.store();
        let now = shared::clock::now();
        let grace = TimeDelta::hours(24);
        let at = |modified| Listed {
            path: "waybills/README.png".into(),
            modified,
        };
        let looked = look(store, &at(now - grace), now, grace).await.unwrap();
        assert_eq!(looked, Looked::Unrecognised, "judged at the boundary");
        let just_before = now - grace + TimeDelta::milliseconds(1);
        let looked = look(store, &at(just_before), now, grace).await.unwrap();
        assert_eq!(looked, Looked::Young);
    });
}

#[test]
fn bad_flags_of_a_files_check_are_refused_before_it_lists_anything() {
    use clap::Parser;
    for args in [
        &["--page-objects", "0"][..],
        &["--page-objects", "1001"],
        &["--grace-hours", "-1"],
        &["--only", "uploads"],
    ] {
        let line = ["admin", "files", "check"].iter().chain(args);
        assert!(admin::cli::Cli::try_parse_from(line).is_err(), "{args:?}");
    }
}
