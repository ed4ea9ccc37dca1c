//! The invariants checked after every step, against the reference: what is
//! stored is what the model says was committed, once; every waybill a load
//! names is in the bucket with the bytes its request uploaded (or, until
//! the schedule's sweep, staged for it after a request broke); the
//! tracker and the geocoder were called once per request that should call
//! them.

use std::sync::atomic::{AtomicUsize, Ordering};

use api_tests::{block, harness};
use shared::model::archive::StatusFilter;
use shared::model::receiving_point::ReceivingPointRecord;
use shared::model::site::SiteRecord;
use shared::model::surplus::{SurplusRecord, SurplusStatus};
use std::collections::{BTreeMap, BTreeSet};

use super::reference::Model;
use super::steps::KeyName;
use super::system::{System, image};

/// Invariants checked, over the whole run.
pub static CHECKS: AtomicUsize = AtomicUsize::new(0);

fn checked(n: usize) {
    CHECKS.fetch_add(n, Ordering::Relaxed);
}

pub fn invariants(system: &System, model: &Model) {
    block(check(system, model));
}

async fn check(system: &System, model: &Model) {
    let store = &system.state.store;
    let mut geocodes = 0;
    for (n, (org, ids)) in model.orgs.iter().zip(&system.orgs).enumerate() {
        // Sites: one per create that was let in, each as last changed.
        let sites = store
            .records::<SiteRecord>()
            .list(ids.id, StatusFilter::All)
            .await
            .unwrap();
        assert_eq!(sites.len(), org.sites.len(), "org{n}'s sites: {sites:?}");
        assert_eq!(ids.sites.len(), org.sites.len(), "org{n}'s site ids");
        for (i, (site, id)) in org.sites.iter().zip(&ids.sites).enumerate() {
            let stored = sites.iter().find(|s| s.id == *id).expect("a stored site");
            let what = format!("org{n}'s site {i}");
            assert_eq!(stored.name, format!("Site {}", site.name), "{what}");
            assert_eq!(
                stored.archived_at.is_some(),
                site.archived,
                "{what}: archived?"
            );
        }
        // Loads: one per create; delivered and waybills as committed.
        let loads = store
            .records::<SurplusRecord>()
            .list(ids.id, StatusFilter::All)
            .await
            .unwrap();
        assert_eq!(loads.len(), org.loads.len(), "org{n}'s loads");
        assert_eq!(ids.loads.len(), org.loads.len(), "org{n}'s load ids");
        for (i, (load, id)) in org.loads.iter().zip(&ids.loads).enumerate() {
            let stored = loads.iter().find(|l| l.id == *id).expect("a stored load");
            let what = format!("org{n}'s load {i}");
            assert_eq!(stored.site_id, ids.sites[load.site], "{what}: its site");
            assert_eq!(
                status_name(stored.status),
                load.status.as_str(),
                "{what}: its status"
            );
            assert_eq!(
                stored.waybill.is_some(),
                load.waybill.is_some(),
                "{what}: a waybill?"
            );
            if let (Some(waybill), Some(tag)) = (&stored.waybill, load.waybill) {
                in_place(system, model, &waybill.storage_path, tag, &what).await;
            }
        }
        // Receiving points: one per create; their photos in place.
        let points = store
            .records::<ReceivingPointRecord>()
            .list(ids.id, StatusFilter::All)
            .await
            .unwrap();
        assert_eq!(points.len(), org.points.len(), "org{n}'s receiving points");
        assert_eq!(ids.points.len(), org.points.len(), "org{n}'s point ids");
        for (i, (photos, id)) in org.points.iter().zip(&ids.points).enumerate() {
            let stored = points.iter().find(|p| p.id == *id).expect("a stored point");
            let what = format!("org{n}'s point {i}");
            assert_eq!(stored.photos.len(), photos.len(), "{what}: its photos");
            for (path, tag) in stored.photos.iter().zip(photos) {
                in_place(system, model, path, *tag, &what).await;
            }
        }
        // The tracker: one open issue per ticket that was let in (a
        // duplicate that landed after the answer closed by the sweep).
        let issues = system.issues.lock().unwrap();
        let opened = issues
            .iter()
            .filter(|i| {
                i["state"] != "closed"
                    && i["body"]
                        .as_str()
                        .unwrap_or("")
                        .contains(&ids.id.to_string())
            })
            .count();
        assert_eq!(opened, org.tickets, "org{n}'s open issues in the tracker");
        geocodes += org.geocodes;
        deliveries(system, n, org, ids, &loads);
        checked(5 + org.sites.len() + org.loads.len());
    }
    assert_eq!(
        system.geocoder.count(),
        geocodes + system.lost_geocodes,
        "calls to the geocoder"
    );
    keys(system).await;
}

/// Whatever operators ran: every sealed value in the table opens with the
/// seal key's ring as its secret holds it now, and each key's ring has a
/// generation that signs now and one that signs for good.
async fn keys(system: &System) {
    let h = harness().await;
    for key in [KeyName::Seal, KeyName::Cursor] {
        let generations = system.generations(key).await;
        assert!(
            generations.iter().any(|g| g["signs"] == true),
            "the {} key: nothing signs now: {generations:?}",
            key.as_str()
        );
        assert!(
            generations[0]["until"].is_null(),
            "the {} key: nothing signs for good: {generations:?}",
            key.as_str()
        );
    }
    let ring =
        shared::keyring::Keyring::new("seal key", &h.sdk, Some(system.source(KeyName::Seal)));
    let sealer = shared::sealed::Sealer::new(ring);
    let store = &system.state.store;
    let (mut start, mut values) = (None, 0);
    loop {
        let (page, next) = store.sealed_values().page(start, None).await.unwrap();
        for value in &page {
            let opened = system
                .clock
                .scope(sealer.open(&value.owner, &value.sealed))
                .await;
            assert!(
                opened.is_ok(),
                "a sealed value no longer opens ({}): {:?}",
                value.sealed.split('.').next().unwrap_or_default(),
                opened.err()
            );
        }
        values += page.len();
        start = next;
        if start.is_none() {
            break;
        }
    }
    checked(2 + values);
}

/// The object a record names holds the bytes its request uploaded; or, when
/// a request broke since the last sweep, its copy is staged for the
/// sweep.
async fn in_place(system: &System, model: &Model, path: &str, tag: u32, what: &str) {
    let h = harness().await;
    let s3 = shared::links::s3_client(&h.sdk);
    let got = s3
        .get_object()
        .bucket(&system.state.config.files.bucket)
        .key(path)
        .send()
        .await;
    match got {
        Ok(object) => {
            let bytes = object
                .body
                .collect()
                .await
                .expect("the object's bytes")
                .into_bytes();
            assert!(
                bytes.as_ref() == image(tag).as_slice(),
                "{what}: {path} holds another image than {tag}"
            );
        }
        Err(error) => {
            let staged = system.state.store.staged().get(path).await.unwrap();
            assert!(
                !model.swept && staged.is_some(),
                "{what}: {path} is missing ({error:?}), staged: {}",
                staged.is_some()
            );
        }
    }
}

fn status_name(status: SurplusStatus) -> &'static str {
    match status {
        SurplusStatus::New => "new",
        SurplusStatus::InProgress => "in_progress",
        SurplusStatus::Delivered => "delivered",
        SurplusStatus::Rejected => "rejected",
    }
}

/// The receiver got, at each of the organization's URLs, for each load,
/// the attempts the model says were sent, all under one delivery id per
/// webhook, each naming the load's committed waybill.
fn deliveries(
    system: &System,
    n: usize,
    org: &super::reference::Org,
    ids: &super::system::Ids,
    loads: &[SurplusRecord],
) {
    // (url, load) -> (attempts, delivery ids)
    let mut expected: BTreeMap<(usize, usize), (usize, usize)> = BTreeMap::new();
    for hook in &org.hooks {
        for delivery in hook.deliveries.iter().filter(|d| d.sent > 0) {
            let entry = expected.entry((hook.url, delivery.load)).or_default();
            entry.0 += delivery.sent;
            entry.1 += 1;
        }
    }
    let mut got: BTreeMap<(usize, usize), (usize, BTreeSet<String>)> = BTreeMap::new();
    let prefix = format!("/org{n}/url");
    let mut pinged: Vec<(usize, String, String)> = Vec::new();
    for request in system.receiver.requests() {
        let Some(url) = request.path.strip_prefix(&prefix) else {
            continue;
        };
        let url: usize = url.parse().expect("a URL number");
        let body = request.json();
        if body["event"] == "webhook.ping" {
            let hook = body["data"]["webhookId"]
                .as_str()
                .expect("the pinged webhook");
            let id = body["id"].as_str().expect("a delivery id");
            pinged.push((url, hook.to_owned(), id.to_owned()));
            let at = ids.hooks.iter().position(|h| h.to_string() == hook);
            let at = at.unwrap_or_else(|| panic!("org{n}'s receiver got a ping of {hook}"));
            assert!(
                org.hooks[at].url == url && request.signed_with(&ids.secrets[at]),
                "org{n}'s ping of hook {at} came to url {url}, or not signed with its secret"
            );
            continue;
        }
        let load_id = body["subject"]["id"].as_str().expect("the load's id");
        let load = ids
            .loads
            .iter()
            .position(|l| l.to_string() == load_id)
            .unwrap_or_else(|| panic!("org{n}'s receiver got a load not its own: {load_id}"));
        let stored = loads
            .iter()
            .find(|l| l.id.to_string() == load_id)
            .expect("the load");
        let named = stored.waybill.as_ref().map(|w| w.storage_path.as_str());
        assert_eq!(
            body["data"]["waybill"]["storagePath"].as_str(),
            named,
            "org{n}'s delivery of load {load} names another waybill"
        );
        // Signed with a secret the organization was given for a webhook
        // at that URL.
        let given: Vec<&String> = org
            .hooks
            .iter()
            .zip(&ids.secrets)
            .filter(|(hook, _)| hook.url == url)
            .map(|(_, secret)| secret)
            .collect();
        assert!(
            given.iter().any(|secret| request.signed_with(secret)),
            "org{n}'s delivery of load {load} at url {url} verifies with no secret it was given"
        );
        let entry = got.entry((url, load)).or_default();
        entry.0 += 1;
        entry
            .1
            .insert(body["id"].as_str().expect("a delivery id").to_owned());
    }
    let got: BTreeMap<(usize, usize), (usize, usize)> = got
        .into_iter()
        .map(|(k, (attempts, ids))| (k, (attempts, ids.len())))
        .collect();
    assert_eq!(
        got, expected,
        "org{n}'s deliveries by (url, load): (attempts, delivery ids)"
    );
    pings(n, org, ids, &pinged);
}

/// Each webhook got each ping it was sent, as often as the model says,
/// under one delivery id a ping.
fn pings(
    n: usize,
    org: &super::reference::Org,
    ids: &super::system::Ids,
    pinged: &[(usize, String, String)],
) {
    let mut expected: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (hook, id) in org.hooks.iter().zip(&ids.hooks) {
        for ping in hook.pings.iter().filter(|p| p.sent > 0) {
            let entry = expected.entry(id.to_string()).or_default();
            entry.0 += ping.sent;
            entry.1 += 1;
        }
    }
    let mut got: BTreeMap<String, (usize, BTreeSet<&str>)> = BTreeMap::new();
    for (_, hook, id) in pinged {
        let entry = got.entry(hook.clone()).or_default();
        entry.0 += 1;
        entry.1.insert(id);
    }
    let got: BTreeMap<String, (usize, usize)> = got
        .into_iter()
        .map(|(hook, (attempts, ids))| (hook, (attempts, ids.len())))
        .collect();
    assert_eq!(
        got, expected,
        "org{n}'s pings by webhook: (attempts, delivery ids)"
    );
}
