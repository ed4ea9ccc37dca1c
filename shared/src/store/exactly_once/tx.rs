//! Transaction helpers: every multi-item change is one TransactWriteItems.

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};

use crate::error::ApiError;
use crate::error::{Code, codes};
use crate::store::engine::client::Store;
use crate::store::engine::errors::{cancellation_codes, sdk_error};
use crate::store::engine::item::Item;
use crate::store::exactly_once::idempotency::Lost;
use crate::store::exactly_once::outcome;

/// A Put action, with an optional condition.
pub(crate) fn put(
    table: &str,
    item: Item,
    condition: Option<&str>,
) -> Result<TransactWriteItem, ApiError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .set_condition_expression(condition.map(Into::into));
    Ok(TransactWriteItem::builder()
        .put(put.build().map_err(ApiError::internal)?)
        .build())
}

/// A Delete action, with an optional condition.
pub(crate) fn delete(
    table: &str,
    key: Item,
    condition: Option<&str>,
) -> Result<TransactWriteItem, ApiError> {
    let delete = Delete::builder()
        .table_name(table)
        .set_key(Some(key))
        .set_condition_expression(condition.map(Into::into));
    Ok(TransactWriteItem::builder()
        .delete(delete.build().map_err(ApiError::internal)?)
        .build())
}

/// The error for a lost optimistic race (the item changed since it was
/// read); callers read again and retry.
pub(crate) fn raced() -> ApiError {
    RACED.with("")
}

pub(crate) fn is_raced(error: &ApiError) -> bool {
    std::ptr::eq(error.catalogued(), &RACED)
}

/// Not an answer (the catalogue's): a lost race never leaves the store,
/// which retries it or answers `concurrent_update`.
static RACED: Code = Code {
    code: "raced",
    status: 409,
    meaning: "a lost optimistic race, retried",
};

/// Attempts of a read-modify-write that keeps losing races.
pub(crate) const RACE_ATTEMPTS: usize = 3;

/// Runs `attempt` (a read, a change and a conditional write) again while it
/// loses the race to another writer; 409 `concurrent_update` after
/// `RACE_ATTEMPTS` losses.
pub(crate) async fn retry_races<T, F, Fut>(mut attempt: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    for _ in 0..RACE_ATTEMPTS {
        match attempt().await {
            Err(e) if is_raced(&e) => continue,
            other => return other,
        }
    }
    Err(concurrent_update())
}

/// 409 after `RACE_ATTEMPTS` lost races.
pub(crate) fn concurrent_update() -> ApiError {
    codes::CONCURRENT_UPDATE.with("the record is being changed by another request; try again")
}

/// A failed condition on action `.0` means the error `.1()`.
pub(crate) type Conflict = (usize, fn() -> ApiError);

/// Runs a transaction; a failed condition on action `i` becomes the error
/// paired with `i` in `conflicts`. When the request holds a claim on its
/// `Idempotency-Key` and its answer was rendered for this transaction
/// (`outcome`), the answer goes in it as a last action, on condition that
/// the claim is still the request's: 409 `idempotency_key_in_flight` when
/// it is not (nothing committed).
pub(crate) async fn transact(
    store: &Store,
    mut actions: Vec<TransactWriteItem>,
    conflicts: &[Conflict],
) -> Result<(), ApiError> {
    // A warm request's reads went out beside its admission; its writes
    // wait for it (`gate`).
    crate::gate::writes_may_go().await?;
    let answer = outcome::take_pending();
    let kept_at = match &answer {
        Some((claim, kept)) => {
            actions.push(outcome::action(store.table(), claim, kept)?);
            Some(actions.len() - 1)
        }
        None => None,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let sent = store
            .db
            .transact_write_items()
            .set_transact_items(Some(actions.clone()))
            .send()
            .await;
        let error = match sent {
            Ok(_) => {
                if let Some((_, kept)) = answer {
                    outcome::commit(kept);
                }
                return Ok(());
            }
            Err(error) => error,
        };
        let codes = cancellation_codes(&error).unwrap_or_default();
        let code = |i: usize| codes.get(i).and_then(Option::as_deref);
        if let (Some(at), Some((claim, kept))) = (kept_at, &answer)
            && code(at) == Some("ConditionalCheckFailed")
        {
            // The claim is no longer the request's: this transaction
            // committed on an attempt whose answer was lost, or the
            // claim lapsed and another request holds the key.
            if store.idempotency().after_losing(claim).await? == Lost::KeptOurs {
                outcome::commit(kept.clone());
                return Ok(());
            }
            return Err(outcome::claim_lost());
        }
        for (index, make) in conflicts {
            if code(*index) == Some("ConditionalCheckFailed") {
                return Err(make());
            }
        }
        // Another transaction held one of the items: try again.
        let raced = codes.iter().flatten().any(|c| c == "TransactionConflict");
        if raced && attempt < CONFLICT_ATTEMPTS {
            tokio::time::sleep(std::time::Duration::from_millis(20 * attempt)).await;
            continue;
        }
        return Err(sdk_error(error));
    }
}

/// Attempts of a transaction cancelled by a conflicting transaction.
const CONFLICT_ATTEMPTS: u64 = 4;
