//! What DynamoDB's failures mean to the store: a condition that may fail
//! without harm, the item as it stood when one failed, a transaction's
//! cancellation reasons, and the 500 of anything else.

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};

use crate::error::{ApiError, ApiResult};
use crate::store::engine::item;

/// An UpdateItem whose condition may fail without harm (a give-back that
/// finds nothing to give back): done either way.
pub(crate) fn unless_condition_failed<R: std::fmt::Debug + Send + Sync + 'static>(
    result: Result<
        aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
        SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError, R>,
    >,
) -> ApiResult<()> {
    match result {
        Ok(_) => Ok(()),
        Err(error) => match error.as_service_error() {
            Some(e) if e.is_conditional_check_failed_exception() => Ok(()),
            _ => Err(sdk_error(error)),
        },
    }
}

/// A conditional UpdateItem that asked for ALL_NEW, and ALL_OLD on a
/// failed condition: the item after, or the item as it stood (none when
/// there was none) when the condition failed.
pub(crate) fn new_or_old<R: std::fmt::Debug + Send + Sync + 'static>(
    result: Result<
        aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
        SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError, R>,
    >,
) -> ApiResult<Result<item::Item, Option<item::Item>>> {
    use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
    match result {
        Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
        Err(error) => match error.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(e) => Ok(Err(e.item)),
            other => Err(ApiError::internal(other)),
        },
    }
}

/// Any SDK failure is unexpected here: a 500 with the cause logged.
pub(crate) fn sdk_error<E, R>(error: SdkError<E, R>) -> ApiError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    ApiError::internal(DisplayErrorContext(error).to_string())
}

/// Why a transaction was cancelled, one entry per action (`None` when that
/// action was not the cause).
pub(crate) fn cancellation_codes<R>(
    error: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, R>,
) -> Option<Vec<Option<String>>> {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
    match error.as_service_error()? {
        TransactWriteItemsError::TransactionCanceledException(e) => Some(
            e.cancellation_reasons()
                .iter()
                .map(|r| r.code().filter(|c| *c != "None").map(str::to_owned))
                .collect(),
        ),
        _ => None,
    }
}
