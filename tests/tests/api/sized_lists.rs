//! The lists without a page size (sites, receiving points, factories,
//! trucks, members, grants, a site's people, a load's log) come whole
//! while they fit Lambda's response and in pages by size beyond it
//! (`shared::http::pages_by_size`): every row once, each page under the
//! limit, `meta.next_cursor` null on the last.

use futures::StreamExt;
use http::Method;
use serde::Serialize;
use serde_json::{Value, json};
use shared::http::payload::{HEADERS_ADDED_AFTER, LAMBDA_RESPONSE_LIMIT, invocation_len};
use shared::model::site::CreateSite;

use api_tests::{Reply, TestOrg, call, harness, org, run, send, unique_phone};

async fn get(t: &TestOrg, path: &str) -> Reply {
    call(Method::GET, path).key(&t.key).send().await
}

/// The list at `path` (a query string of its own or none), page after
/// page (each under Lambda's limit, with `meta` right): its rows' `id`s
/// and each page's size in Lambda's document.
pub async fn every_page(t: &TestOrg, path: &str, id: &str) -> (Vec<String>, Vec<usize>) {
    let (mut ids, mut sizes) = (Vec::new(), Vec::new());
    let joiner = if path.contains('?') { '&' } else { '?' };
    let mut next = path.to_owned();
    loop {
        let page = get(t, &next).await;
        page.expect(200, None);
        let carried = invocation_len(&page.headers, page.text.as_bytes());
        assert!(
            carried + HEADERS_ADDED_AFTER < LAMBDA_RESPONSE_LIMIT,
            "{carried}"
        );
        let rows = page.body["data"].as_array().unwrap();
        assert_eq!(page.body["meta"]["count"], rows.len());
        ids.extend(rows.iter().map(|row| row[id].as_str().unwrap().to_owned()));
        sizes.push(carried);
        match page.body["meta"]["next_cursor"].as_str() {
            Some(cursor) => next = format!("{path}{joiner}cursor={cursor}"),
            None => {
                assert_eq!(page.body["meta"]["next_cursor"], Value::Null);
                break;
            }
        }
    }
    (ids, sizes)
}

/// The widest sites the contract allows in a list's row (every text at its
/// 500 characters, each one JSON writes as `\u0001`: about 24 KB of
/// Lambda's document a row): 300 of them take about 7 MB, so the list
/// comes in pages by size, each nearly full, every site once, newest first,
/// and its cursor is the list's and filter's and organization's alone.
#[test]
fn a_list_over_lambdas_limit_comes_in_pages_by_size_every_row_once() {
    run(async {
        let t = org().await;
        let costly = "\u{1}".repeat(500);
        let mut body = json!({"name": costly});
        for field in [
            "street_address",
            "postal_code",
            "city",
            "construction_id",
            "external_id",
        ] {
            body[field] = json!(costly);
        }
        let store = harness().await.store();
        let sites: Vec<_> = (0..300)
            .map(|_| {
                let create: CreateSite = serde_json::from_value(body.clone()).unwrap();
                create.validate(t.id(), shared::model::now()).unwrap()
            })
            .collect();
        futures::stream::iter(&sites)
            .for_each_concurrent(16, |site| {
                let sites = store.sites();
                async move {
                    sites.create(site).await.unwrap();
                }
            })
            .await;
        let (ids, sizes) = every_page(&t, "/api/v1/sites?status=all", "id").await;
        let mut newest_first: Vec<String> = sites.iter().map(|site| site.id.to_string()).collect();
        newest_first.sort_by(|a, b| b.cmp(a));
        assert_eq!(ids, newest_first, "every site once, in the list's order");
        assert!(sizes.len() >= 2, "{sizes:?}");
        assert!(
            sizes[0] > LAMBDA_RESPONSE_LIMIT * 9 / 10,
            "a page is filled: {sizes:?}"
        );

        let first = get(&t, "/api/v1/sites?status=all").await;
        let cursor = first.body["meta"]["next_cursor"].as_str().unwrap();
        let stranger = org().await;
        for (who, path) in [
            (&t, format!("/api/v1/sites?status=active&cursor={cursor}")),
            (
                &t,
                format!("/api/v1/receiving-points?status=all&cursor={cursor}"),
            ),
            (&t, format!("/api/v1/factories?status=all&cursor={cursor}")),
            (
                &stranger,
                format!("/api/v1/sites?status=all&cursor={cursor}"),
            ),
            (&t, "/api/v1/sites?cursor=not-a-cursor".to_owned()),
        ] {
            get(who, &path).await.expect(422, Some("invalid_cursor"));
        }
    });
}

/// A cursor of list `list`, as a page that ended at the row of place
/// `place` would have given (signed with the deployment's cursor key).
async fn cursor_after(t: &TestOrg, list: String, place: impl Serialize) -> String {
    let listing = harness()
        .await
        .state
        .cursors
        .listing(t.id(), list)
        .await
        .unwrap();
    listing.next(Some(place)).unwrap()
}

/// Each list's page starts after its cursor's row, whichever row: each
/// list's place follows its order (a page that ended at row `i` is followed
/// by row `i + 1`), and a list that fits says it is whole.
async fn pages_after_each_row(
    t: &TestOrg,
    path: &str,
    list: String,
    place: impl Fn(usize, &Value) -> Value,
) {
    let whole = get(t, path).await;
    whole.expect(200, None);
    assert_eq!(whole.body["meta"]["next_cursor"], Value::Null, "{path}");
    let rows = whole.body["data"].as_array().unwrap().clone();
    assert!(rows.len() >= 3, "{path}: {rows:?}");
    let joiner = if path.contains('?') { '&' } else { '?' };
    for (index, row) in rows.iter().enumerate() {
        let cursor = cursor_after(t, list.clone(), place(index, row)).await;
        let page = get(t, &format!("{path}{joiner}cursor={cursor}")).await;
        page.expect(200, None);
        assert_eq!(
            page.body["data"].as_array().unwrap(),
            &rows[index + 1..],
            "{path} after {index}"
        );
        assert_eq!(page.body["meta"]["next_cursor"], Value::Null);
    }
    let foreign = cursor_after(t, "another-list".into(), place(0, &rows[0])).await;
    get(t, &format!("{path}{joiner}cursor={foreign}"))
        .await
        .expect(422, Some("invalid_cursor"));
}

#[test]
fn every_list_paged_by_size_starts_after_its_cursors_row() {
    run(async {
        let t = org().await;
        let id = |row: &Value| row["id"].clone();
        let site = crate::sites::new_site(
            &t,
            json!({"name": "Yard", "contact_first_name": "Cy", "contact_last_name": "Contact"}),
        )
        .await;
        for name in ["North", "South"] {
            crate::sites::new_site(&t, json!({ "name": name })).await;
        }
        pages_after_each_row(
            &t,
            "/api/v1/sites?status=all",
            "sites?status=all".into(),
            |_, row| id(row),
        )
        .await;

        for name in ["A", "B", "C"] {
            crate::receiving_points::new_point(&t, json!({"site_id": site, "name": name})).await;
            send(
                &t,
                Method::POST,
                "/api/v1/factories",
                Some(json!({ "name": name })),
            )
            .await
            .expect(201, None);
        }
        for (path, list) in [
            ("/api/v1/receiving-points", "receiving-points?status=active"),
            ("/api/v1/factories", "factories?status=active"),
        ] {
            pages_after_each_row(&t, path, list.into(), |_, row| id(row)).await;
        }

        // Members by name, two of them namesakes (their ids order them).
        for (first, last) in [("Ann", "Lee"), ("Ann", "Lee"), ("Bo", "Aho")] {
            let body = json!({"first_name": first, "last_name": last, "phone": unique_phone(), "site_id": site});
            send(&t, Method::POST, "/api/v1/members", Some(body))
                .await
                .expect(201, None);
        }
        let by_name = |row: &Value| json!([row["last_name"], row["first_name"], row["id"]]);
        pages_after_each_row(
            &t,
            "/api/v1/members",
            "members?include_inactive=false".into(),
            |_, row| by_name(row),
        )
        .await;
        pages_after_each_row(
            &t,
            &format!("/api/v1/sites/{site}/members"),
            format!("sites/{site}/members"),
            |_, row| {
                json!([
                    !row["member_id"].is_null(),
                    row["last_name"],
                    row["first_name"],
                    row["member_id"]
                ])
            },
        )
        .await;

        for _ in 0..3 {
            crate::trucks::new_truck(
                &t,
                json!({"name": "Mixer", "license": crate::trucks::plate()}),
            )
            .await;
        }
        pages_after_each_row(&t, "/api/v1/trucks", "trucks".into(), |_, row| id(row)).await;

        for _ in 0..3 {
            let grantee = org().await;
            send(
                &t,
                Method::POST,
                "/api/v1/org-access-grants",
                Some(json!({"grantee_org_id": grantee.id()})),
            )
            .await
            .expect(201, None);
        }
        pages_after_each_row(
            &t,
            "/api/v1/org-access-grants",
            "org-access-grants".into(),
            |_, row| json!([row["created_at"], row["id"]]),
        )
        .await;

        let load = crate::surpluses::new_load(&t, &site).await;
        for status in ["in_progress", "new", "in_progress"] {
            crate::surpluses::patch(&t, &load, json!({ "status": status }))
                .await
                .expect(200, None);
        }
        pages_after_each_row(
            &t,
            &format!("/api/v1/surpluses/{load}/log"),
            format!("surpluses/{load}/log"),
            |index, _| json!(index),
        )
        .await;
    });
}
