//! The store's handle: one DynamoDB client and the table's name, and the
//! calls every part of the store makes (a strongly consistent read, a
//! query of a partition's prefix, an update).

use std::sync::Arc;

use aws_sdk_dynamodb::Client;

use crate::error::ApiResult;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::{calls, item};

#[derive(Clone, Debug)]
pub struct Store {
    pub(in crate::store) db: Client,
    table: Arc<str>,
    /// Copies of the `PUBLIC` cells a search may read (`crate::model::geo::PUBLIC_COPIES`
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
    /// (1 to `crate::model::geo::PUBLIC_COPIES`; `PUBLIC_CELL_COPIES`).
    pub fn with_public_copies(mut self, copies: u32) -> Self {
        self.public_copies = copies.clamp(1, crate::model::geo::PUBLIC_COPIES);
        self
    }

    pub(crate) fn public_copies(&self) -> u32 {
        self.public_copies
    }

    /// A DynamoDB client that counts its round trips per request (and the
    /// request's counter takes its other AWS calls too: `aws_calls`).
    pub fn client(sdk: &aws_config::SdkConfig) -> Client {
        crate::aws_calls::count_into(calls::CallCounter::count_aws_call);
        crate::aws_calls::caller_from(calls::CallCounter::current_caller);
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
}
