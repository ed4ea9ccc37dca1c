//! Transaction helpers: every multi-item change is one TransactWriteItems.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use super::item::Item;
use super::{Store, cancellation_codes, sdk_error};
use crate::error::{ApiError, ApiResult};

/// A Put action, with an optional condition.
pub(crate) fn put(table: &str, item: Item, condition: Option<&str>) -> ApiResult<TransactWriteItem> {
    let put = Put::builder().table_name(table).set_item(Some(item)).set_condition_expression(condition.map(Into::into));
    Ok(TransactWriteItem::builder().put(put.build().map_err(ApiError::internal)?).build())
}

/// A failed condition on action `.0` means the error `.1()`.
pub(crate) type Conflict = (usize, fn() -> ApiError);

/// Runs a transaction; a failed condition on action `i` becomes the error
/// paired with `i` in `conflicts`.
pub(crate) async fn transact(store: &Store, actions: Vec<TransactWriteItem>, conflicts: &[Conflict]) -> ApiResult<()> {
    match store.db.transact_write_items().set_transact_items(Some(actions)).send().await {
        Ok(_) => Ok(()),
        Err(error) => {
            if let Some(codes) = cancellation_codes(&error) {
                for (index, make) in conflicts {
                    if codes.get(*index).and_then(Option::as_deref) == Some("ConditionalCheckFailed") {
                        return Err(make());
                    }
                }
            }
            Err(sdk_error(error))
        }
    }
}
