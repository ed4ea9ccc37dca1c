//! The engines' setup (`shared::store::engine::schema`), as every test process
//! runs it: many processes at once over fresh engines (a nextest run, the
//! dev server and the tests) make the table and the bucket once, and none
//! of them fails because another got there first.

use api_tests::harness;
use shared::store::engine::schema::{ensure_bucket, ensure_table};

const RACERS: usize = 8;

#[tokio::test]
async fn racing_setups_make_the_bucket_once_and_all_succeed() {
    let h = harness().await;
    let s3 = shared::links::s3_client(&h.sdk);
    let bucket = format!("setup-{}", uuid::Uuid::new_v4().simple());
    let made = futures::future::join_all((0..RACERS).map(|_| ensure_bucket(&s3, &bucket))).await;
    let made: Vec<bool> = made
        .into_iter()
        .map(|r| r.expect("every setup succeeds"))
        .collect();
    assert_eq!(made.iter().filter(|m| **m).count(), 1, "{made:?}");
    s3.delete_bucket().bucket(&bucket).send().await.unwrap();
}

#[tokio::test]
async fn racing_setups_make_the_table_once_and_all_succeed() {
    let h = harness().await;
    let db = shared::store::Store::client(&h.sdk);
    let table = format!("test-setup-{}", uuid::Uuid::new_v4());
    let made = futures::future::join_all((0..RACERS).map(|_| ensure_table(&db, &table))).await;
    let made: Vec<bool> = made
        .into_iter()
        .map(|r| r.expect("every setup succeeds"))
        .collect();
    assert_eq!(made.iter().filter(|m| **m).count(), 1, "{made:?}");
    let ttl = db
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description()
            .and_then(|d| d.attribute_name()),
        Some(shared::store::engine::keys::TTL)
    );
    db.delete_table().table_name(&table).send().await.unwrap();
}
