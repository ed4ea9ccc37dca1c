//! Queries read whole: every page of a query, decoded from only the
//! attributes a record reads; and the one Scan, for operators' upgrade
//! steps.

use crate::error::ApiResult;
use crate::store::engine::calls::CallCounter;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;

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

/// Every record the queries match (each of one partition: an
/// organization's records spread over its shards), read at once, in the
/// queries' order.
pub(crate) async fn query_partitions<R: serde::de::DeserializeOwned>(
    queries: impl IntoIterator<Item = aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder>,
) -> ApiResult<Vec<R>> {
    let reads = queries.into_iter().map(query_records::<R>);
    let found = CallCounter::together(futures::future::try_join_all(reads)).await?;
    Ok(found.into_iter().flatten().collect())
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

    use super::*;
    use aws_sdk_dynamodb::Client;

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
