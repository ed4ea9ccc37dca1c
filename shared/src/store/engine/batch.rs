//! Batch reads and writes: the service's per-call limits (100 keys, 25
//! writes) and the items it leaves unprocessed handled in one place.

use std::time::Duration;

use aws_sdk_dynamodb::types::{DeleteRequest, KeysAndAttributes, PutRequest, WriteRequest};

use crate::error::{ApiError, ApiResult};
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::Item;

/// Keys per BatchGetItem call.
const GET_BATCH: usize = 100;
/// Items per BatchWriteItem call.
const WRITE_BATCH: usize = 25;

/// A growing pause between sends of what the service left unprocessed.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Backoff(Duration::from_millis(50))
    }
    async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(Duration::from_secs(2));
    }
}

/// The items at `keys` that exist (strongly consistent, in no particular
/// order): one call per 100 keys, the calls in parallel.
pub(crate) async fn get_all(store: &Store, keys: Vec<Item>) -> ApiResult<Vec<Item>> {
    let calls = keys
        .chunks(GET_BATCH)
        .map(|chunk| get_chunk(store, chunk.to_vec()));
    let found = futures::future::try_join_all(calls).await?;
    Ok(found.into_iter().flatten().collect())
}

async fn get_chunk(store: &Store, keys: Vec<Item>) -> ApiResult<Vec<Item>> {
    let mut found = Vec::new();
    let mut pending = Some(
        KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(true)
            .build()
            .map_err(ApiError::internal)?,
    );
    let mut backoff = Backoff::new();
    while let Some(wanted) = pending.take() {
        let out = store
            .db
            .batch_get_item()
            .request_items(store.table(), wanted)
            .send()
            .await
            .map_err(sdk_error)?;
        found.extend(
            out.responses
                .unwrap_or_default()
                .remove(store.table())
                .unwrap_or_default(),
        );
        pending = out
            .unprocessed_keys
            .and_then(|mut left| left.remove(store.table()))
            .filter(|left| !left.keys().is_empty());
        if pending.is_some() {
            backoff.wait().await;
        }
    }
    Ok(found)
}

/// Writes `items`, 25 a call, until every one is stored.
pub(crate) async fn put_all(store: &Store, items: Vec<Item>) -> ApiResult<()> {
    let requests = items
        .into_iter()
        .map(|item| {
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(ApiError::internal)?;
            Ok(WriteRequest::builder().put_request(put).build())
        })
        .collect::<ApiResult<Vec<_>>>()?;
    write_all(store, requests).await
}

/// Deletes the items of `keys`, 25 a call, until every one is gone.
pub(crate) async fn delete_all(store: &Store, keys: Vec<Item>) -> ApiResult<()> {
    let requests = keys
        .into_iter()
        .map(|key| {
            let delete = DeleteRequest::builder()
                .set_key(Some(key))
                .build()
                .map_err(ApiError::internal)?;
            Ok(WriteRequest::builder().delete_request(delete).build())
        })
        .collect::<ApiResult<Vec<_>>>()?;
    write_all(store, requests).await
}

/// Makes `requests`, 25 a call, retrying what DynamoDB left unprocessed.
async fn write_all(store: &Store, requests: Vec<WriteRequest>) -> ApiResult<()> {
    for chunk in requests.chunks(WRITE_BATCH) {
        let mut pending: Vec<WriteRequest> = chunk.to_vec();
        let mut backoff = Backoff::new();
        while !pending.is_empty() {
            let output = store
                .db
                .batch_write_item()
                .request_items(store.table(), pending)
                .send()
                .await
                .map_err(sdk_error)?;
            pending = output
                .unprocessed_items
                .and_then(|mut left| left.remove(store.table()))
                .unwrap_or_default();
            if !pending.is_empty() {
                backoff.wait().await;
            }
        }
    }
    Ok(())
}
