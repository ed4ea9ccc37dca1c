//! DynamoDB access. DynamoDB types stay inside this module: functions call
//! `store.orgs().get(id)`, never the SDK. Every key shape is in `keys`.

pub mod api_keys;
pub mod archivable;
pub mod audit;
pub mod batch;
pub mod calls;
pub mod deactivation;
mod decode;
pub mod deliveries;
pub mod geo;
pub mod grants;
mod hourly;
pub mod idempotency;
pub mod import;
pub mod item;
pub mod keys;
pub mod members;
pub mod orgs;
pub mod outbox;
pub mod outcome;
pub mod places;
pub mod quotas;
pub mod records;
pub mod reports;
pub mod rollups;
pub mod schema;
pub mod sealed_values;
pub mod staged;
pub mod surpluses;
pub mod trace;
pub mod trucks;
pub mod tx;
pub mod webhooks;

use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};

use crate::error::{ApiError, ApiResult};

#[derive(Clone, Debug)]
pub struct Store {
    db: Client,
    table: Arc<str>,
    /// Copies of the `PUBLIC` cells a search may read (`geo::PUBLIC_COPIES`
    /// are written; the deployment says how many are filled).
    public_copies: u32,
}

impl Store {
    pub fn new(db: Client, table: impl Into<Arc<str>>) -> Self {
        Self {
            db,
            table: table.into(),
            public_copies: 1,
        }
    }

    /// The store whose searches read `copies` copies of the `PUBLIC` cells
    /// (1 to `geo::PUBLIC_COPIES`; `PUBLIC_CELL_COPIES`).
    pub fn with_public_copies(mut self, copies: u32) -> Self {
        self.public_copies = copies.clamp(1, geo::PUBLIC_COPIES);
        self
    }

    pub(crate) fn public_copies(&self) -> u32 {
        self.public_copies
    }

    /// A DynamoDB client that counts its round trips per request (and the
    /// request's counter takes its other AWS calls too: `aws_calls`).
    pub fn client(sdk: &aws_config::SdkConfig) -> Client {
        crate::aws_calls::count_into(calls::CallCounter::count_aws_call);
        let config = aws_sdk_dynamodb::config::Builder::from(sdk)
            .interceptor(calls::CountCalls)
            .interceptor(crate::telemetry::aws_spans::SpanAwsCalls)
            .build();
        Client::from_conf(config)
    }

    /// The item at `key`, read strongly consistent, if it exists.
    pub(crate) async fn get_item(&self, key: item::Item) -> ApiResult<Option<item::Item>> {
        let out = self
            .db
            .get_item()
            .table_name(self.table())
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(out.item)
    }

    /// A strongly consistent Query of partition `pk`'s items whose sort
    /// key starts with `prefix`, in sort-key order (callers add a filter
    /// or the order they need).
    pub(crate) fn prefix_query(
        &self,
        pk: String,
        prefix: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.db
            .query()
            .table_name(self.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", item::s(pk))
            .expression_attribute_values(":prefix", item::s(prefix))
            .consistent_read(true)
    }

    /// An UpdateItem of the item at `pk`, `sk` (callers add the update,
    /// its condition and what it returns).
    pub(crate) fn update(
        &self,
        pk: impl Into<String>,
        sk: impl Into<String>,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.db
            .update_item()
            .table_name(self.table())
            .set_key(Some(item::key(pk, sk)))
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn orgs(&self) -> orgs::Orgs<'_> {
        orgs::Orgs(self)
    }

    pub fn api_keys(&self) -> api_keys::ApiKeys<'_> {
        api_keys::ApiKeys(self)
    }

    /// The values kept sealed (an operator rotating the seal key).
    pub fn sealed_values(&self) -> sealed_values::SealedValues<'_> {
        sealed_values::SealedValues(self)
    }

    pub fn members(&self) -> members::Members<'_> {
        members::Members(self)
    }

    pub fn sites(&self) -> records::Records<'_, crate::model::site::SiteRecord> {
        records::Records::new(self)
    }

    pub fn factories(&self) -> records::Records<'_, crate::model::factory::FactoryRecord> {
        records::Records::new(self)
    }

    pub fn receiving_points(
        &self,
    ) -> records::Records<'_, crate::model::receiving_point::ReceivingPointRecord> {
        records::Records::new(self)
    }

    /// Records of kind `R` in organization partitions.
    pub fn records<R: records::Record>(&self) -> records::Records<'_, R> {
        records::Records::new(self)
    }

    pub fn surpluses(&self) -> surpluses::Surpluses<'_> {
        surpluses::Surpluses(self)
    }

    pub fn reports(&self) -> reports::Reports<'_> {
        reports::Reports(self)
    }

    pub fn rollups(&self) -> rollups::Rollups<'_> {
        rollups::Rollups(self)
    }

    pub fn staged(&self) -> staged::Staged<'_> {
        staged::Staged(self)
    }

    pub fn outbox(&self) -> outbox::Outbox<'_> {
        outbox::Outbox(self)
    }

    pub fn deliveries(&self) -> deliveries::Deliveries<'_> {
        deliveries::Deliveries(self)
    }

    pub fn webhooks(&self) -> webhooks::Webhooks<'_> {
        webhooks::Webhooks(self)
    }

    pub fn places(&self) -> places::Places<'_> {
        places::Places(self)
    }

    pub fn quotas(&self) -> quotas::Quotas<'_> {
        quotas::Quotas(self)
    }

    pub fn trucks(&self) -> trucks::Trucks<'_> {
        trucks::Trucks(self)
    }

    pub fn grants(&self) -> grants::Grants<'_> {
        grants::Grants(self)
    }

    pub fn idempotency(&self) -> idempotency::Idempotency<'_> {
        idempotency::Idempotency(self)
    }

    pub fn audit(&self) -> audit::Audit<'_> {
        audit::Audit(self)
    }
}

/// `query` answering only the attributes `from_item::<R>` reads, not the
/// key and index attributes the store adds: less for DynamoDB to send and
/// for the SDK and serde to parse and decode.
pub(crate) fn project<R: serde::de::DeserializeOwned>(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
    let Some(names) = item::attributes::<R>() else {
        return query;
    };
    // Placeholders for all: `status`, `version` and others are reserved.
    let placeholders: Vec<String> = (0..names.len()).map(|i| format!("#r{i}")).collect();
    let query = query.projection_expression(placeholders.join(", "));
    placeholders
        .into_iter()
        .zip(names)
        .fold(query, |query, (placeholder, name)| {
            query.expression_attribute_names(placeholder, *name)
        })
}

/// Every record a query matches, decoded from only the attributes it reads.
pub(crate) async fn query_records<R: serde::de::DeserializeOwned>(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> ApiResult<Vec<R>> {
    query_all(project::<R>(query))
        .await?
        .into_iter()
        .map(item::from_item)
        .collect()
}

/// Every item a query matches, page by page (a page is up to 1 MB).
pub(crate) async fn query_all(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> ApiResult<Vec<item::Item>> {
    Ok(query_counted(query).await?.0)
}

/// Every item a query matches, and how many items DynamoDB read for them
/// (before any filter).
pub(crate) async fn query_counted(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> ApiResult<(Vec<item::Item>, usize)> {
    let mut items = Vec::new();
    let mut read = 0;
    let mut start = None;
    loop {
        let page = query
            .clone()
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(sdk_error)?;
        read += usize::try_from(page.scanned_count).unwrap_or(0);
        items.extend(page.items.unwrap_or_default());
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok((items, read));
        }
    }
}

/// Every item of the table that `filter` (with `values`) lets through,
/// page by page: a Scan, for an operator's upgrade step only, never in a
/// request's path.
pub(crate) async fn scan_all(
    store: &Store,
    filter: &str,
    values: &[(&str, aws_sdk_dynamodb::types::AttributeValue)],
) -> ApiResult<Vec<item::Item>> {
    let mut scan = store
        .db
        .scan()
        .table_name(store.table())
        .filter_expression(filter)
        .consistent_read(true);
    for (name, value) in values {
        scan = scan.expression_attribute_values(*name, value.clone());
    }
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = scan
            .clone()
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(sdk_error)?;
        items.extend(page.items.unwrap_or_default());
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(items);
        }
    }
}

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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

    use super::*;

    fn query() -> QueryFluentBuilder {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .build();
        Client::from_conf(config).query()
    }

    #[test]
    fn a_projected_query_names_each_attribute_of_the_record_by_placeholder() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Row {
            id: String,
            status: String,
        }
        let query = project::<Row>(query());
        let input = query.as_input();
        assert_eq!(
            input.get_projection_expression().as_deref(),
            Some("#r0, #r1")
        );
        assert_eq!(
            input.get_expression_attribute_names(),
            &Some(HashMap::from([
                ("#r0".to_owned(), "id".to_owned()),
                ("#r1".to_owned(), "status".to_owned()),
            ]))
        );
    }

    #[test]
    fn a_record_without_field_names_reads_every_attribute() {
        let query = project::<HashMap<String, String>>(query());
        assert_eq!(query.as_input().get_projection_expression(), &None);
    }
}
