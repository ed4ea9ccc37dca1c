//! Nearby places: what an organization sees (its own places, every public
//! receiving point, never an archived one), nearest first within the
//! radius, correct at cell edges, across the antimeridian and near the
//! poles, and every parameter checked.

use api_tests::{Reply, TestOrg, new_key, org, run, send};
use http::Method;
use serde_json::json;
use shared::auth::Scope;
use shared::model::geo::Coordinates;

use crate::receiving_points::new_point;
use crate::sites::new_site;

/// A search area of this test's own: the public cells are shared by every
/// test of the run, so each test searches where no other test puts places.
fn somewhere(lat_range: std::ops::Range<f64>) -> Coordinates {
    use rand::Rng;
    let mut rng = rand::rng();
    Coordinates {
        lat: rng.random_range(lat_range),
        lng: rng.random_range(-179.0..179.0),
    }
}

/// `km` from `from` toward `bearing`, as a request body's `lat`/`lng`.
fn at(from: Coordinates, bearing: f64, km: f64) -> (f64, f64) {
    let c = from.moved(bearing, km);
    let c = Coordinates::new(c.lat, c.lng).unwrap();
    (c.lat, c.lng)
}

async fn site_at(t: &TestOrg, name: &str, (lat, lng): (f64, f64)) -> String {
    new_site(t, json!({"name": name, "lat": lat, "lng": lng})).await
}

async fn point_at(
    t: &TestOrg,
    site: &str,
    name: &str,
    (lat, lng): (f64, f64),
    public: bool,
) -> String {
    new_point(
        t,
        json!({"site_id": site, "name": name, "lat": lat, "lng": lng, "is_public": public}),
    )
    .await
}

async fn factory_at(t: &TestOrg, name: &str, (lat, lng): (f64, f64)) -> String {
    let reply = send(
        t,
        Method::POST,
        "/api/v1/factories",
        Some(json!({"name": name, "lat": lat, "lng": lng})),
    )
    .await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

async fn nearby(t: &TestOrg, center: Coordinates, rest: &str) -> Reply {
    let path = format!(
        "/api/v1/places/nearby?lat={}&lng={}{rest}",
        center.lat, center.lng
    );
    send(t, Method::GET, &path, None).await
}

/// The names of a result, in order.
fn names(reply: &Reply) -> Vec<&str> {
    reply.expect(200, None);
    reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

#[test]
fn an_organization_sees_its_own_places_and_public_receiving_points_nearest_first() {
    run(async {
        // Given two organizations with places around one point.
        let center = somewhere(-50.0..50.0);
        let (a, b) = (org().await, org().await);
        let a_site = site_at(&a, "A site", at(center, 0.0, 3.0)).await;
        point_at(&a, &a_site, "A private point", at(center, 90.0, 1.0), false).await;
        let a_public = point_at(&a, &a_site, "A public point", at(center, 180.0, 2.0), true).await;
        factory_at(&a, "A factory", at(center, 270.0, 4.0)).await;
        let b_site = site_at(&b, "B site", at(center, 45.0, 1.5)).await;
        point_at(
            &b,
            &b_site,
            "B private point",
            at(center, 135.0, 0.5),
            false,
        )
        .await;
        let b_public = point_at(&b, &b_site, "B public point", at(center, 225.0, 5.0), true).await;
        factory_at(&b, "B factory", at(center, 315.0, 0.7)).await;

        // When A searches every type.
        let all = nearby(&a, center, "&types=receiving_point,site,factory").await;

        // Then A sees its own four places and B's public point, nearest
        // first, never B's private point, site or factory.
        assert_eq!(
            names(&all),
            [
                "A private point",
                "A public point",
                "A site",
                "A factory",
                "B public point"
            ]
        );
        assert_eq!(all.body["meta"]["count"], 5);
        let rows = all.body["data"].as_array().unwrap();
        let expected_km = [1.0, 2.0, 3.0, 4.0, 5.0];
        for (row, km) in rows.iter().zip(expected_km) {
            let distance = row["distance_km"].as_f64().unwrap();
            assert!((distance - km).abs() < 0.002, "{row}");
            let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
            assert_eq!(
                keys.len(),
                6,
                "type, id, name, coordinates, distance_km, is_own: {row}"
            );
        }
        let types: Vec<&str> = rows.iter().map(|r| r["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "receiving_point",
                "receiving_point",
                "site",
                "factory",
                "receiving_point"
            ]
        );
        let own: Vec<bool> = rows
            .iter()
            .map(|r| r["is_own"].as_bool().unwrap())
            .collect();
        assert_eq!(own, [true, true, true, true, false]);
        assert_eq!(rows[1]["id"], a_public.as_str());
        assert_eq!(rows[4]["id"], b_public.as_str());
        assert_eq!(rows[2]["coordinates"]["lat"], at(center, 0.0, 3.0).0);

        // The default type is receiving points; repeated `types` work too.
        let points = nearby(&a, center, "").await;
        assert_eq!(
            names(&points),
            ["A private point", "A public point", "B public point"]
        );
        let repeated = nearby(&a, center, "&types=factory&types=site").await;
        assert_eq!(names(&repeated), ["A site", "A factory"]);

        // And B, from the same point, sees its own places and A's public point.
        let seen_by_b = nearby(&b, center, "&types=receiving_point,site,factory").await;
        assert_eq!(
            names(&seen_by_b),
            [
                "B private point",
                "B factory",
                "B site",
                "A public point",
                "B public point"
            ]
        );
    });
}

#[test]
fn archived_or_private_places_of_others_never_appear() {
    run(async {
        let center = somewhere(-50.0..50.0);
        let (a, b) = (org().await, org().await);
        let b_site = site_at(&b, "B site", at(center, 0.0, 10.0)).await;
        let b_point = point_at(&b, &b_site, "B point", at(center, 90.0, 2.0), true).await;
        let a_site = site_at(&a, "A site", at(center, 180.0, 3.0)).await;
        let a_point = point_at(&a, &a_site, "A point", at(center, 270.0, 1.0), false).await;
        assert_eq!(names(&nearby(&a, center, "").await), ["A point", "B point"]);

        // B archives its point: gone for A; restored, it is back.
        let path = format!("/api/v1/receiving-points/{b_point}");
        send(&b, Method::DELETE, &path, None)
            .await
            .expect(200, None);
        assert_eq!(names(&nearby(&a, center, "").await), ["A point"]);
        send(&b, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(200, None);
        assert_eq!(names(&nearby(&a, center, "").await), ["A point", "B point"]);

        // B makes it private: gone for A, still B's own.
        send(&b, Method::PATCH, &path, Some(json!({"is_public": false})))
            .await
            .expect(200, None);
        assert_eq!(names(&nearby(&a, center, "").await), ["A point"]);
        assert_eq!(names(&nearby(&b, center, "").await), ["B point"]);

        // A archives its own point and site: gone for A too.
        send(
            &a,
            Method::DELETE,
            &format!("/api/v1/receiving-points/{a_point}"),
            None,
        )
        .await
        .expect(200, None);
        send(&a, Method::DELETE, &format!("/api/v1/sites/{a_site}"), None)
            .await
            .expect(200, None);
        let left = nearby(&a, center, "&types=receiving_point,site").await;
        assert_eq!(names(&left), Vec::<&str>::new());
        assert_eq!(left.body["meta"]["count"], 0);
    });
}

#[test]
fn radius_and_limit_bound_the_results() {
    run(async {
        let center = somewhere(-50.0..50.0);
        let t = org().await;
        for km in [1.0, 2.0, 3.0, 4.0, 5.0] {
            site_at(&t, &format!("{km} km"), at(center, 33.0, km)).await;
        }
        let limited = nearby(&t, center, "&types=site&limit=3").await;
        assert_eq!(names(&limited), ["1 km", "2 km", "3 km"]);
        let narrow = nearby(&t, center, "&types=site&radius_km=2.5").await;
        assert_eq!(names(&narrow), ["1 km", "2 km"]);
        // Default radius 40 km, default limit 20.
        assert_eq!(
            nearby(&t, center, "&types=site").await.body["meta"]["count"],
            5
        );
    });
}

#[test]
fn at_a_cell_edge_a_point_just_inside_the_radius_is_found_and_one_just_outside_is_not() {
    run(async {
        // Given a center 0.2 km west of a cell edge of the precision the
        // search reads (a 10 km search reads the finest cells).
        let t = org().await;
        let rough = somewhere(-50.0..50.0);
        let cover = shared::model::geo::cover(rough, 10.0);
        let width = 360.0 / 1024.0; // columns of the precision-4 grid
        assert_eq!(cover.precision, 4);
        let edge = ((rough.lng + 180.0) / width).ceil() * width - 180.0;
        let center = Coordinates::new(rough.lat, edge).unwrap().moved(270.0, 0.2);
        let center = Coordinates::new(center.lat, center.lng).unwrap();
        // Points east of the edge, in the next cell, 0.1 km inside and
        // outside the radius.
        let inside = at(center, 90.0, 9.9);
        let outside = at(center, 90.0, 10.1);
        let cell = |(lat, lng): (f64, f64)| Coordinates { lat, lng }.geohash(4);
        assert_ne!(cell(inside), center.geohash(4), "the next cell");
        site_at(&t, "inside", inside).await;
        site_at(&t, "outside", outside).await;

        let found = nearby(&t, center, "&types=site&radius_km=10").await;
        assert_eq!(names(&found), ["inside"]);
        let distance = found.body["data"][0]["distance_km"].as_f64().unwrap();
        assert!((distance - 9.9).abs() < 0.002, "{distance}");
        // A little wider, both.
        let wider = nearby(&t, center, "&types=site&radius_km=10.2").await;
        assert_eq!(names(&wider), ["inside", "outside"]);
    });
}

#[test]
fn a_search_across_the_antimeridian_finds_both_sides() {
    run(async {
        let t = org().await;
        let lat = somewhere(-50.0..50.0).lat;
        let center = Coordinates::new(lat, 179.98).unwrap();
        // 4 km east of the center is longitude -179.9x.
        let east = at(center, 90.0, 4.0);
        assert!(east.1 < 0.0, "{east:?}");
        let west = at(center, 270.0, 6.0);
        site_at(&t, "east", east).await;
        site_at(&t, "west", west).await;
        site_at(&t, "far east", at(center, 90.0, 30.0)).await;
        let found = nearby(&t, center, "&types=site&radius_km=20").await;
        assert_eq!(names(&found), ["east", "west"]);
        // And from the other side of the line.
        let other = Coordinates::new(lat, -179.99).unwrap();
        let found = nearby(&t, other, "&types=site&radius_km=40").await;
        assert_eq!(names(&found), ["east", "west", "far east"]);
    });
}

#[test]
fn near_the_poles_every_longitude_is_searched() {
    run(async {
        let t = org().await;
        for (pole, name) in [(1.0, "north"), (-1.0, "south")] {
            let lng = somewhere(0.0..1.0).lng;
            let center = Coordinates::new(89.95 * pole, lng).unwrap();
            // Across the pole: 0.05 degrees to the pole and as far beyond it,
            // on the opposite meridian.
            let across = at(center, if pole > 0.0 { 0.0 } else { 180.0 }, 11.0);
            assert!((across.1 - center.lng).abs() > 170.0, "{across:?}");
            site_at(&t, &format!("{name} across"), across).await;
            site_at(&t, &format!("{name} beside"), at(center, 90.0, 15.0)).await;
            let found = nearby(&t, center, "&types=site&radius_km=30").await;
            assert_eq!(
                names(&found),
                [format!("{name} across"), format!("{name} beside")]
            );
            // A search that reaches past the pole reads coarse cells.
            let wide = nearby(&t, center, "&types=site&radius_km=100").await;
            assert_eq!(wide.body["meta"]["count"], 2);
        }
    });
}

#[test]
fn every_parameter_is_checked_and_named() {
    run(async {
        let t = org().await;
        for (query, parameter) in [
            ("", "lat"),
            ("?lat=60", "lng"),
            ("?lat=91&lng=0", "lat"),
            ("?lat=0&lng=180.5", "lng"),
            ("?lat=x&lng=0", "lat"),
            ("?lat=0&lng=0&radius_km=0.9", "radius_km"),
            ("?lat=0&lng=0&radius_km=100.1", "radius_km"),
            ("?lat=0&lng=0&limit=0", "limit"),
            ("?lat=0&lng=0&limit=51", "limit"),
            ("?lat=0&lng=0&limit=1.5", "limit"),
            ("?lat=0&lng=0&types=truck", "types"),
            ("?lat=0&lng=0&types=site,,factory", "types"),
            ("?lat=0&lng=0&lng=1", "lng"),
            ("?lat=0&lng=0&status=all", "status"),
        ] {
            let reply = send(
                &t,
                Method::GET,
                &format!("/api/v1/places/nearby{query}"),
                None,
            )
            .await;
            reply.expect(422, Some("validation_error"));
            let message = reply.body["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("{parameter}:")),
                "{query}: {message}"
            );
        }
        // A key without read:data.
        let orgs_only = new_key(t.id(), &[Scope::ReadOrgs]).await;
        let reply = api_tests::call(Method::GET, "/api/v1/places/nearby?lat=0&lng=0")
            .key(&orgs_only)
            .send()
            .await;
        reply.expect(403, Some("insufficient_scope"));
    });
}

#[test]
fn a_search_reads_its_cells_in_one_round_trip_of_parallel_queries() {
    run(async {
        let t = org().await;
        let center = somewhere(-50.0..50.0);
        // The default search: receiving points, own and public cells.
        let reply = nearby(&t, center, "").await;
        reply.expect(200, None);
        let cells = shared::model::geo::cover(center, 40.0).cells.len() as u32;
        assert!(cells <= shared::model::geo::MAX_CELLS as u32);
        // The key and its budget (two calls at once), then one query per
        // cell and scope.
        assert_eq!(reply.ddb_calls, 2 + 2 * cells, "{cells} cells");
        let sites = nearby(&t, center, "&types=site,factory").await;
        assert_eq!(sites.ddb_calls, 2 + cells, "no public cells for sites");
    });
}

/// Public entries of many other organizations' receiving points, written
/// as the store writes them (the `PUBLIC` cells only), in bulk: `(lat, lng)`
/// each, named `Crowd <i>` padded to 500 characters (the longest name).
async fn crowd(points: &[(f64, f64)]) {
    use shared::store::records::geo::{GeoEntry, is_first_copy};
    let h = api_tests::harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let entries: Vec<GeoEntry> = points
        .iter()
        .enumerate()
        .map(|(i, &(lat, lng))| GeoEntry {
            kind: shared::model::place::PlaceKind::ReceivingPoint,
            id: uuid::Uuid::now_v7(),
            org_id: uuid::Uuid::now_v7(),
            name: format!("Crowd {i} {}", "x".repeat(480)),
            coordinates: Coordinates { lat, lng },
            public: true,
        })
        .collect();
    let items: Vec<_> = shared::store::records::geo::items(&entries)
        .unwrap()
        .into_iter()
        // The copy the searches of this run read (they read one).
        .filter(|item| is_first_copy(item["pk"].as_s().unwrap()))
        .map(|item| {
            aws_sdk_dynamodb::types::WriteRequest::builder()
                .put_request(
                    aws_sdk_dynamodb::types::PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .unwrap(),
                )
                .build()
        })
        .collect();
    use futures::StreamExt;
    let batches: Vec<Vec<_>> = items.chunks(25).map(<[_]>::to_vec).collect();
    let table = h.store().table().to_owned();
    let writes = futures::stream::iter(batches)
        .map(|batch| {
            let (db, table) = (db.clone(), table.clone());
            async move {
                db.batch_write_item()
                    .request_items(table, batch)
                    .send()
                    .await
            }
        })
        .buffer_unordered(8);
    writes
        .for_each(|written| async move {
            assert!(
                written
                    .unwrap()
                    .unprocessed_items
                    .unwrap_or_default()
                    .is_empty()
            );
        })
        .await;
}

/// `public_items_read` and `public_budget_spent` of a search's log line.
fn public_reading(reply: &Reply) -> (usize, bool) {
    let id = reply.header("x-request-id").to_owned();
    let logs = api_tests::webhooks::logs();
    let line = logs
        .lines()
        .find(|line| line.contains(&id) && line.contains("geo cells read"))
        .unwrap_or_else(|| panic!("no geo log line for request {id}"));
    let read = line
        .split("public_items_read=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no public_items_read in {line}"));
    (read, line.contains("public_budget_spent=true"))
}

/// Ten times the crowd the security review measured (about 1,000 public
/// points in one place): 10,000 public points of other organizations
/// within 800 m, with the longest names, and a nearer one published after
/// them. Whatever the radius, a search reads at most
/// `PUBLIC_READ_BUDGET` entries (and their bytes), and still answers
/// exactly: the nearest first, the same places a reading of every entry
/// would give.
#[test]
fn a_search_reads_a_bounded_part_of_a_crowd_and_still_finds_the_nearest() {
    use rand::{Rng, SeedableRng};
    use shared::store::records::places::PUBLIC_READ_BUDGET;
    run(async {
        let t = org().await;
        let center = somewhere(-50.0..50.0);
        let center = Coordinates::new(center.lat, center.lng).unwrap();
        let place = center.moved(90.0, 1.5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1_000);
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|_| {
                let at = place.moved(rng.random_range(0.0..360.0), rng.random_range(0.0..0.8));
                let at = Coordinates::new(at.lat, at.lng).unwrap();
                (at.lat, at.lng)
            })
            .collect();
        crowd(&points).await;
        let other = org().await;
        let site = site_at(&other, "Depot", at(center, 0.0, 3.0)).await;
        point_at(&other, &site, "Newest", at(center, 180.0, 0.1), true).await;
        // What reading every entry would answer: the crowd by distance.
        let mut by_distance: Vec<(f64, usize)> = points
            .iter()
            .enumerate()
            .map(|(i, &(lat, lng))| (center.distance_km(&Coordinates { lat, lng }), i))
            .collect();
        by_distance.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (rest, radius, limit) in [
            ("&radius_km=1&limit=1", 1.0, 1),
            ("&radius_km=2&limit=20", 2.0, 20),
            ("&radius_km=100&limit=50", 100.0, 50),
        ] {
            let reply = nearby(&t, center, rest).await;
            let got = names(&reply);
            assert_eq!(got.len(), limit, "{rest}");
            assert_eq!(got[0], "Newest", "{rest}");
            // The answer's distances are to the metre, ties by id: it holds
            // every point nearer than its last one's metre, and none
            // farther.
            let metres = |km: f64| (km * 1000.0).round() as i64;
            let index = |name: &str| -> usize { name.split(' ').nth(1).unwrap().parse().unwrap() };
            let answered: Vec<i64> = got[1..]
                .iter()
                .map(|name| {
                    let (lat, lng) = points[index(name)];
                    metres(center.distance_km(&Coordinates { lat, lng }))
                })
                .collect();
            assert!(
                answered.windows(2).all(|w| w[0] <= w[1]),
                "{rest}: {answered:?}"
            );
            if let Some(&last) = answered.last() {
                let chosen: std::collections::HashSet<usize> =
                    got[1..].iter().map(|name| index(name)).collect();
                for (km, i) in &by_distance {
                    let m = metres(*km);
                    if m >= last || *km > radius {
                        break;
                    }
                    assert!(chosen.contains(i), "{rest}: Crowd {i} at {m} m missing");
                }
            }
            let (read, spent) = public_reading(&reply);
            assert!(read <= PUBLIC_READ_BUDGET, "{rest}: read {read}");
            assert!(!spent, "{rest}: the budget ran out");
            // Bytes: at most the budget's entries, about 600 bytes each
            // (strongly consistent reads: a unit per 4 KB), and a unit per
            // query at least.
            assert!(
                reply.units.read <= 400.0,
                "{rest}: {} read units",
                reply.units.read
            );
        }
    });
}

/// 2,000 public points on one spot (one part the search cannot divide):
/// the budget holds, and the answer is points of that spot, by id.
#[test]
fn a_crowd_on_one_spot_is_read_within_the_budget() {
    use shared::store::records::places::PUBLIC_READ_BUDGET;
    run(async {
        let t = org().await;
        let center = somewhere(-50.0..50.0);
        let center = Coordinates::new(center.lat, center.lng).unwrap();
        let spot = at(center, 45.0, 0.3);
        crowd(&vec![spot; 2_000]).await;
        let reply = nearby(&t, center, "&radius_km=1&limit=10").await;
        let got = names(&reply);
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|name| name.starts_with("Crowd ")));
        let ids: Vec<&str> = reply.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted, "ties by id");
        let (read, _) = public_reading(&reply);
        assert!(read <= PUBLIC_READ_BUDGET, "read {read}");
    });
}

/// An owner's public receiving point named `name`, 1 km east of a search
/// centre of this test's own, and another organization that searches
/// there.
struct Published {
    table: String,
    owner: TestOrg,
    searcher: TestOrg,
    center: Coordinates,
    point: String,
    id: uuid::Uuid,
    here: Coordinates,
}

async fn published(name: &str) -> Published {
    let table = api_tests::harness().await.store().table().to_owned();
    let owner = org().await;
    let searcher = org().await;
    let center = somewhere(-50.0..50.0);
    let site = site_at(&owner, "Yard", at(center, 0.0, 1.0)).await;
    let (lat, lng) = at(center, 90.0, 1.0);
    let point = point_at(&owner, &site, name, (lat, lng), true).await;
    let id = point.parse().unwrap();
    Published {
        table,
        owner,
        searcher,
        center,
        point,
        id,
        here: Coordinates { lat, lng },
    }
}

#[test]
fn a_deactivated_organizations_public_points_leave_everyones_search() {
    run(async {
        let Published {
            table,
            owner,
            searcher,
            center,
            point,
            id,
            here,
        } = published("Open gate").await;
        assert_eq!(
            names(&nearby(&searcher, center, "&radius_km=5").await),
            ["Open gate"]
        );
        assert_eq!(copies_holding(&table, id, here).await, [8, 8, 8]);
        api_tests::harness()
            .await
            .store()
            .orgs()
            .deactivate(owner.id())
            .await
            .unwrap();
        assert!(names(&nearby(&searcher, center, "&radius_km=5").await).is_empty());
        assert_eq!(
            copies_holding(&table, id, here).await,
            [0, 0, 0],
            "out of every copy"
        );
        // Nor can a load go there any more.
        let own_site = site_at(&searcher, "Origin", at(center, 180.0, 1.0)).await;
        crate::surpluses::create_load(
            &searcher,
            json!({"site_id": own_site, "volume_m3": 1, "to_receiving_point_id": point}),
        )
        .await
        .expect(422, Some("receiving_point_not_found"));
    });
}

#[test]
fn an_organization_has_at_most_200_public_places() {
    run(async {
        let t = org().await;
        let center = somewhere(-50.0..50.0);
        let site = site_at(&t, "Yard", at(center, 0.0, 1.0)).await;
        // As if 199 public points with coordinates existed already.
        let h = api_tests::harness().await;
        aws_sdk_dynamodb::Client::new(&h.sdk)
            .update_item()
            .table_name(h.store().table())
            .key(
                "pk",
                shared::store::engine::item::s(format!("ORG#{}", t.id())),
            )
            .key("sk", shared::store::engine::item::s("ORG"))
            .update_expression("SET public_places = :n")
            .expression_attribute_values(":n", shared::store::engine::item::n(199))
            .send()
            .await
            .unwrap();
        let last = point_at(&t, &site, "Last", at(center, 90.0, 1.0), true).await;
        let body = |public: bool| json!({"site_id": site, "name": "More", "lat": center.lat, "lng": center.lng, "is_public": public});
        let refused = send(
            &t,
            Method::POST,
            "/api/v1/receiving-points",
            Some(body(true)),
        )
        .await;
        refused.expect(409, Some("public_place_limit_reached"));
        // Private points, and public ones nobody can find by place, are not
        // capped.
        let private = point_at(&t, &site, "Private", at(center, 180.0, 1.0), false).await;
        send(
            &t,
            Method::POST,
            "/api/v1/receiving-points",
            Some(json!({"site_id": site, "name": "Nowhere", "is_public": true})),
        )
        .await
        .expect(201, None);
        let publish = format!("/api/v1/receiving-points/{private}");
        send(
            &t,
            Method::PATCH,
            &publish,
            Some(json!({"is_public": true})),
        )
        .await
        .expect(409, Some("public_place_limit_reached"));
        // Archiving a public point makes room.
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/receiving-points/{last}"),
            None,
        )
        .await
        .expect(200, None);
        send(
            &t,
            Method::PATCH,
            &publish,
            Some(json!({"is_public": true})),
        )
        .await
        .expect(200, None);
    });
}

/// A public point indexed before the entries of the `PUBLIC` cells were
/// sorted by geohash, and before their copies, is found again once an
/// operator rewrites them (`admin reindex-places`, an upgrade step safe to
/// run again): under its new key, in every copy. In a table of its own:
/// the run's table holds the crowds other tests write, which the command
/// would copy too.
#[test]
fn an_older_public_entry_is_found_once_reindexed() {
    use shared::store::engine::item::{n, s};
    run(async {
        let h = api_tests::harness().await;
        let db = aws_sdk_dynamodb::Client::new(&h.sdk);
        let mut config = (*h.state.config).clone();
        config.store.table = format!("reindex-{}", uuid::Uuid::new_v4());
        shared::store::engine::schema::ensure_table(&db, &config.store.table)
            .await
            .unwrap();
        let store = shared::store::Store::new(db.clone(), config.store.table.as_str());
        let reindex = || async {
            let cli =
                <admin::cli::Cli as clap::Parser>::try_parse_from(["admin", "reindex-places"])
                    .unwrap();
            admin::cli::run(cli.command, &config, &h.sdk)
                .await
                .unwrap()
                .lines[0]
                .clone()
        };
        let center = somewhere(-50.0..50.0);
        let center = Coordinates::new(center.lat, center.lng).unwrap();
        let (lat, lng) = at(center, 30.0, 2.0);
        let id = uuid::Uuid::now_v7();
        let point = Coordinates { lat, lng };
        for precision in shared::model::geo::INDEX_PRECISIONS {
            let pk = shared::store::records::geo::cell_pk(
                shared::store::records::geo::PUBLIC,
                precision,
                &point.geohash(precision),
            );
            db.put_item()
                .table_name(store.table())
                .item("pk", s(pk))
                .item("sk", s(format!("RP#{id}")))
                .item("kind", s("RP"))
                .item("id", s(id.to_string()))
                .item("org_id", s(uuid::Uuid::now_v7().to_string()))
                .item("name", s("Older"))
                .item("lat", n(lat))
                .item("lng", n(lng))
                .send()
                .await
                .unwrap();
        }
        let search = |copies: u32| {
            let store = store.clone().with_public_copies(copies);
            async move {
                let query = shared::model::place::NearbyQuery {
                    center,
                    radius_km: 5.0,
                    kinds: vec![shared::model::place::PlaceKind::ReceivingPoint],
                    limit: 20,
                };
                let found = store
                    .places()
                    .nearby(uuid::Uuid::now_v7(), &query)
                    .await
                    .unwrap();
                found.into_iter().map(|p| p.name).collect::<Vec<_>>()
            }
        };
        assert!(search(1).await.is_empty(), "its old key is not read");
        let done = reindex().await;
        assert_eq!(
            (done["rewritten"].as_u64(), done["copied"].as_u64()),
            (Some(3), Some(21))
        );
        assert_eq!(search(1).await, ["Older"]);
        // Every copy of its cells holds it now, as a request writes it:
        // whichever a search reads finds it.
        assert_eq!(copies_holding(store.table(), id, point).await, [8, 8, 8]);
        for _ in 0..16 {
            assert_eq!(search(8).await, ["Older"]);
        }
        // Again: nothing left to do.
        let again = reindex().await;
        assert_eq!(
            (again["rewritten"].as_u64(), again["copied"].as_u64()),
            (Some(0), Some(0))
        );
        assert_eq!(copies_holding(store.table(), id, point).await, [8, 8, 8]);
    });
}

/// How many copies of its `PUBLIC` cell in `table` hold public point `id` at `at`,
/// at each index precision (read strongly consistent).
async fn copies_holding(table: &str, id: uuid::Uuid, at: Coordinates) -> Vec<usize> {
    use shared::model::place::PlaceKind;
    use shared::store::records::geo::{PUBLIC_COPIES, public_cell_pk, public_sk};
    let h = api_tests::harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let mut held = Vec::new();
    for precision in shared::model::geo::INDEX_PRECISIONS {
        let mut n = 0;
        for copy in 0..PUBLIC_COPIES {
            let found = db
                .get_item()
                .table_name(table)
                .key(
                    "pk",
                    shared::store::engine::item::s(public_cell_pk(
                        copy,
                        precision,
                        &at.geohash(precision),
                    )),
                )
                .key(
                    "sk",
                    shared::store::engine::item::s(public_sk(PlaceKind::ReceivingPoint, &at, id)),
                )
                .consistent_read(true)
                .send()
                .await
                .unwrap();
            n += usize::from(found.item.is_some());
        }
        held.push(n);
    }
    held
}

/// Every public point is written into each copy of its cells, moved and
/// archived in all of them in the same transaction; a deployment that
/// reads all the copies (`PUBLIC_CELL_COPIES=8`) finds it from whichever
/// it reads, and loses it from each when it moves or goes.
#[test]
fn a_public_point_is_in_every_copy_of_its_cells_and_found_from_any() {
    run(async {
        let Published {
            table,
            owner,
            searcher,
            center,
            id,
            here,
            ..
        } = published("Every copy").await;
        assert_eq!(copies_holding(&table, id, here).await, [8, 8, 8]);

        let h = api_tests::harness().await;
        let spread = h.router_with(|c| c.store.public_cell_copies = 8);
        let path = format!(
            "/api/v1/places/nearby?lat={}&lng={}&radius_km=5",
            center.lat, center.lng
        );
        let search = || async {
            api_tests::call(Method::GET, &path)
                .key(&searcher.key)
                .send_to(&spread)
                .await
        };
        // Searches choose their copy at random: 24 of them miss a copy
        // with a chance of (7/8)^24, about 4%, per copy; each must find it.
        for _ in 0..24 {
            assert_eq!(names(&search().await), ["Every copy"]);
        }

        // Moved 20 km away: gone from every copy here, in every copy there.
        let (lat2, lng2) = at(center, 180.0, 20.0);
        send(
            &owner,
            Method::PATCH,
            &format!("/api/v1/receiving-points/{id}"),
            Some(json!({"lat": lat2, "lng": lng2})),
        )
        .await
        .expect(200, None);
        let there = Coordinates {
            lat: lat2,
            lng: lng2,
        };
        assert_eq!(copies_holding(&table, id, here).await, [0, 0, 0]);
        assert_eq!(copies_holding(&table, id, there).await, [8, 8, 8]);
        for _ in 0..8 {
            assert!(names(&search().await).is_empty());
        }

        // Archived: gone from every copy.
        send(
            &owner,
            Method::DELETE,
            &format!("/api/v1/receiving-points/{id}"),
            None,
        )
        .await
        .expect(200, None);
        assert_eq!(copies_holding(&table, id, there).await, [0, 0, 0]);
    });
}
