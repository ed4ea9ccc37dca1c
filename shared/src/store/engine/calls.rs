//! Per-request accounting of DynamoDB round trips: an SDK interceptor tells
//! the counter of the request being served (a tokio task-local set by the
//! request middleware) when each attempt starts and ends. From that the
//! counter knows the calls made, the time during which at least one call
//! was in flight (`waited`, what the request spent waiting on DynamoDB),
//! and the sequential round trips: the number of separate stretches of that
//! time (calls made in parallel share one). It also notes which operation
//! and key shape each call had (`CallNote`), so a 500 can say which store
//! call failed without a secret or a value in the log, and it adds up the
//! read and write capacity units DynamoDB reports for each call (every call
//! of a request asks for them: `ReturnConsumedCapacity=TOTAL`, which costs
//! nothing). Outside a request (CLI, setup) nothing is counted or asked.
//! The same interceptor refuses a write that the request's `WriteGate`
//! still holds (`gate.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store::engine::trace;
use crate::store::engine::transact_units::TransactFloor;
use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextMut, BeforeTransmitInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

tokio::task_local! {
    static CALLS: CallCounter;
}

#[derive(Debug, Default)]
struct Flight {
    in_flight: u32,
    since: Option<Instant>,
    waited: Duration,
    round_trips: u32,
}

#[derive(Debug, Default)]
struct Calls {
    count: AtomicU32,
    flight: Mutex<Flight>,
    /// The last call that failed, and the last call.
    notes: Mutex<(Option<CallNote>, Option<CallNote>)>,
    units: Mutex<Units>,
    /// Attempts of calls to other AWS services (`aws_calls`), by
    /// `service:Operation`.
    aws_calls: Mutex<BTreeMap<String, u32>>,
    /// Who is calling: the request's route (`POST /api/v1/sites`), a
    /// job's name (`webhook-dispatcher`), for the role check's record
    /// (`aws_calls::record`).
    caller: Option<String>,
}

/// Capacity units DynamoDB reported for a request's calls: read units of
/// GetItem, Query and their batch and transaction forms, write units of
/// the rest. A call that failed reports none (a refused conditional write
/// still costs its write units in AWS).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Units {
    pub read: f64,
    pub write: f64,
}

/// What a store call was, without its values: the DynamoDB operation and
/// the shape of the keys it named (`ORG#* / SURPLUS#*`: the key's literal
/// parts, every id, name or hash a `*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallNote {
    pub operation: String,
    pub key_shape: String,
    pub failed: bool,
}

/// Counter of one request's DynamoDB calls (retries included).
#[derive(Clone, Debug, Default)]
pub struct CallCounter(Arc<Calls>);

impl CallCounter {
    /// The counter of `caller`'s calls (a request's route, a job's name).
    pub fn for_caller(caller: impl Into<String>) -> Self {
        CallCounter(Arc::new(Calls {
            caller: Some(caller.into()),
            ..Calls::default()
        }))
    }

    /// The caller of the request or job being served, if any.
    pub fn current_caller() -> Option<String> {
        CALLS.try_with(|c| c.0.caller.clone()).ok().flatten()
    }

    /// Calls made (attempts, retries included).
    pub fn get(&self) -> u32 {
        self.0.count.load(Ordering::Relaxed)
    }

    /// Sequential round trips: stretches of time with a call in flight.
    pub fn round_trips(&self) -> u32 {
        self.flight().round_trips
    }

    /// Time during which at least one call was in flight.
    pub fn waited(&self) -> Duration {
        let flight = self.flight();
        flight.waited + flight.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// The counter of the request being served, if any (to carry into a
    /// task the request spawns).
    pub fn current() -> Option<CallCounter> {
        CALLS.try_with(Clone::clone).ok()
    }

    /// Runs `future` with this counter as the current request's counter.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        CALLS.scope(self.clone(), future).await
    }

    /// The call to blame for a failure of the request: the last call that
    /// failed, else the last call (a record it returned did not decode).
    pub fn blame(&self) -> Option<CallNote> {
        let notes = self.0.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes.0.clone().or_else(|| notes.1.clone())
    }

    fn note(&self, note: CallNote) {
        let mut notes = self.0.notes.lock().unwrap_or_else(|e| e.into_inner());
        if note.failed {
            notes.0 = Some(note.clone());
        }
        notes.1 = Some(note);
    }

    /// The capacity units of the calls made so far.
    pub fn units(&self) -> Units {
        *self.0.units.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Attempts of calls to other AWS services, by `service:Operation`.
    pub fn aws_calls(&self) -> BTreeMap<String, u32> {
        self.0
            .aws_calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The same, as a log line's field (`S3:CopyObject=1 SQS:SendMessage=1`);
    /// None when there were none.
    pub fn aws_calls_text(&self) -> Option<String> {
        let calls = self.aws_calls();
        (!calls.is_empty()).then(|| {
            calls
                .iter()
                .map(|(call, n)| format!("{call}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    /// The sink of `aws_calls`' interceptor: a call of the request being
    /// served, if any, counted on its counter.
    pub(crate) fn count_aws_call(call: String) {
        let _ = CALLS.try_with(|counter| {
            let mut calls = counter
                .0
                .aws_calls
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *calls.entry(call).or_default() += 1;
        });
    }

    fn add_units(&self, units: Units) {
        let mut total = self.0.units.lock().unwrap_or_else(|e| e.into_inner());
        total.read += units.read;
        total.write += units.write;
    }

    fn flight(&self) -> std::sync::MutexGuard<'_, Flight> {
        self.0.flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `calls`, made concurrently by the code, as one stretch of time
    /// in flight: one round trip, however the runtime happens to order
    /// their first polls (in a debug build against a loopback engine the
    /// first can finish before the second starts, which measures the
    /// build, not the code). Their calls are counted as usual.
    pub async fn together<F: Future>(calls: F) -> F::Output {
        let counter = CALLS.try_with(Clone::clone).ok();
        if let Some(counter) = &counter {
            counter.begin_stretch();
        }
        let output = calls.await;
        if let Some(counter) = &counter {
            counter.end_stretch();
        }
        output
    }

    fn begin_stretch(&self) {
        let mut flight = self.flight();
        if flight.in_flight == 0 {
            flight.round_trips += 1;
            flight.since = Some(Instant::now());
        }
        flight.in_flight += 1;
    }

    fn end_stretch(&self) {
        self.ended();
    }

    fn started(&self) {
        self.0.count.fetch_add(1, Ordering::Relaxed);
        let mut flight = self.flight();
        if flight.in_flight == 0 {
            flight.round_trips += 1;
            flight.since = Some(Instant::now());
        }
        flight.in_flight += 1;
    }

    fn ended(&self) {
        let mut flight = self.flight();
        flight.in_flight = flight.in_flight.saturating_sub(1);
        if flight.in_flight == 0
            && let Some(since) = flight.since.take()
        {
            flight.waited += since.elapsed();
        }
    }
}

/// What a request cost in DynamoDB calls, put in response extensions so
/// in-process tests can read it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DynamoCalls {
    pub calls: u32,
    pub round_trips: u32,
    pub units: Units,
    /// The request's reads went out beside its key's admission (a warm
    /// request, `http::lifecycle`).
    pub warm: bool,
}

/// A request's calls to other AWS services (`aws_calls`), by
/// `service:Operation`, put in response extensions beside `DynamoCalls`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AwsCalls(pub BTreeMap<String, u32>);

#[derive(Debug)]
pub struct CountCalls;

impl Intercept for CountCalls {
    fn name(&self) -> &'static str {
        "CountCalls"
    }

    /// Within a request, every call asks for the capacity it consumed;
    /// and a write the request's gate still holds does not go (`gate.rs`:
    /// here, where the operation's name is known).
    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if crate::gate::writes_held() && WRITES.contains(&operation(cfg).as_str()) {
            return Err("a write before the request's admission let it in".into());
        }
        if CALLS.try_with(|_| ()).is_ok() {
            // A transaction's report is raised index by index
            // (`transact_units.rs`): it needs each index's figure.
            let indexes = trace::enabled() || operation(cfg) == "TransactWriteItems";
            units::ask(context.input_mut(), indexes);
        }
        Ok(())
    }

    fn read_before_attempt(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = CALLS.try_with(CallCounter::started);
        // The serialized request is gone once sent: note its keys now.
        let body = context
            .request()
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            .unwrap_or_default();
        cfg.interceptor_state()
            .store_put(KeyShape(key_shape(&body)));
        if crate::aws_calls::record::enabled() {
            let operation = operation(cfg);
            let needed = crate::store::engine::iam::needed(&operation, &body);
            let caller = CallCounter::current_caller();
            crate::aws_calls::record::record(caller.as_deref(), "DynamoDB", &operation, &needed);
        }
        let transaction = operation(cfg) == "TransactWriteItems";
        if transaction || trace::enabled() {
            let touches = trace::touches(&body);
            if transaction {
                let floor = TransactFloor::of(&touches);
                cfg.interceptor_state().store_put(floor);
            }
            if trace::enabled() {
                cfg.interceptor_state().store_put(trace::Touches(touches));
            }
        }
        Ok(())
    }

    /// Called once for every attempt `read_before_attempt` saw.
    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = CALLS.try_with(|calls| {
            calls.ended();
            let operation = operation(cfg);
            if let Some(Ok(output)) = context.output_or_error() {
                let mut consumed = units::consumed(output);
                if let Some(floor) = cfg.load::<TransactFloor>() {
                    floor.apply(&mut consumed);
                }
                calls.add_units(units::reported(&operation, &consumed));
                if let Some(touches) = cfg.load::<trace::Touches>() {
                    let write = WRITES.contains(&operation.as_str());
                    trace::emit(&operation, &touches.0, &consumed, write);
                }
            }
            calls.note(CallNote {
                operation,
                key_shape: cfg
                    .load::<KeyShape>()
                    .map(|k| k.0.clone())
                    .unwrap_or_default(),
                failed: !matches!(context.output_or_error(), Some(Ok(_))),
            });
        });
        Ok(())
    }
}

/// The DynamoDB operations that write.
const WRITES: [&str; 5] = [
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "BatchWriteItem",
];

/// The name of the operation a call's config bag is for.
fn operation(cfg: &ConfigBag) -> String {
    cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
        .map_or("?".to_owned(), |m| m.name().to_owned())
}

/// Capacity units: asked for in a call's input, read off its output.
mod units {
    use aws_sdk_dynamodb::operation as op;
    use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};
    use aws_smithy_runtime_api::client::interceptors::context::{Input, Output};

    use super::{Units, WRITES};

    /// Sets `ReturnConsumedCapacity` on the input of any operation a
    /// request makes: `TOTAL`, or `INDEXES` (the table's and each index's
    /// apart) for the store's trace and for a transaction.
    pub fn ask(input: &mut Input, indexes: bool) {
        let asked = match indexes {
            true => ReturnConsumedCapacity::Indexes,
            false => ReturnConsumedCapacity::Total,
        };
        macro_rules! ask {
            ($($input:ty),*) => {$(
                if let Some(input) = input.downcast_mut::<$input>() {
                    input.return_consumed_capacity = Some(asked);
                    return;
                }
            )*};
        }
        ask!(
            op::get_item::GetItemInput,
            op::query::QueryInput,
            op::batch_get_item::BatchGetItemInput,
            op::transact_get_items::TransactGetItemsInput,
            op::put_item::PutItemInput,
            op::update_item::UpdateItemInput,
            op::delete_item::DeleteItemInput,
            op::transact_write_items::TransactWriteItemsInput,
            op::batch_write_item::BatchWriteItemInput
        );
    }

    /// The capacity `output` reports, per table (one for most calls).
    pub fn consumed(output: &Output) -> Vec<ConsumedCapacity> {
        macro_rules! one {
            ($($output:ty),*) => {$(
                if let Some(output) = output.downcast_ref::<$output>() {
                    return output.consumed_capacity.iter().cloned().collect();
                }
            )*};
        }
        macro_rules! many {
            ($($output:ty),*) => {$(
                if let Some(output) = output.downcast_ref::<$output>() {
                    return output.consumed_capacity.iter().flatten().cloned().collect();
                }
            )*};
        }
        one!(
            op::get_item::GetItemOutput,
            op::query::QueryOutput,
            op::put_item::PutItemOutput,
            op::update_item::UpdateItemOutput,
            op::delete_item::DeleteItemOutput
        );
        many!(
            op::batch_get_item::BatchGetItemOutput,
            op::transact_get_items::TransactGetItemsOutput,
            op::transact_write_items::TransactWriteItemsOutput,
            op::batch_write_item::BatchWriteItemOutput
        );
        Vec::new()
    }

    /// The units `operation` consumed: write units for a write, else read
    /// units.
    pub fn reported(operation: &str, consumed: &[ConsumedCapacity]) -> Units {
        let units = consumed.iter().filter_map(|c| c.capacity_units).sum();
        if WRITES.contains(&operation) {
            Units {
                read: 0.0,
                write: units,
            }
        } else {
            Units {
                read: units,
                write: 0.0,
            }
        }
    }
}

/// A call's key shape, kept in its config bag from before it is sent to
/// after it is answered.
#[derive(Clone, Debug)]
struct KeyShape(String);

impl aws_smithy_types::config_bag::Storable for KeyShape {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// The shapes of the keys a request's JSON names (`pk` and `sk` of every
/// `Key` or `Item`, a Query's `:pk`), each value's literal parts kept and
/// the rest starred, distinct, in order.
fn key_shape(body: &serde_json::Value) -> String {
    fn starred(value: &str) -> String {
        value
            .split('#')
            .map(|part| {
                let literal =
                    !part.is_empty() && part.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
                if literal { part } else { "*" }
            })
            .collect::<Vec<_>>()
            .join("#")
    }
    fn walk(value: &serde_json::Value, shapes: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(fields) => {
                if let Some(pk) = fields.get("pk").and_then(|v| v["S"].as_str()) {
                    let mut shape = starred(pk);
                    if let Some(sk) = fields.get("sk").and_then(|v| v["S"].as_str()) {
                        shape = format!("{shape} / {}", starred(sk));
                    }
                    if !shapes.contains(&shape) {
                        shapes.push(shape);
                    }
                    return;
                }
                for field in fields.values() {
                    walk(field, shapes);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, shapes)),
            _ => {}
        }
    }
    let mut shapes = Vec::new();
    if let Some(pk) = body["ExpressionAttributeValues"][":pk"]["S"].as_str() {
        let index = body["IndexName"]
            .as_str()
            .map(|i| format!(" ({i})"))
            .unwrap_or_default();
        shapes.push(format!("{}{index}", starred(pk)));
    }
    walk(&body["Key"], &mut shapes);
    walk(&body["Item"], &mut shapes);
    walk(&body["TransactItems"], &mut shapes);
    walk(&body["RequestItems"], &mut shapes);
    shapes.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_keep_the_literal_parts_only() {
        let update =
            serde_json::json!({"Key": {"pk": {"S": "ORG#0196aa"}, "sk": {"S": "SURPLUS#0196bb"}}});
        assert_eq!(key_shape(&update), "ORG#* / SURPLUS#*");
        let query = serde_json::json!({"IndexName": "gsi1", "ExpressionAttributeValues": {":pk": {"S": "ORG#x#SURPLUS#open"}}});
        assert_eq!(key_shape(&query), "ORG#*#SURPLUS#* (gsi1)");
        let tx = serde_json::json!({"TransactItems": [
            {"Put": {"Item": {"pk": {"S": "PLATE#o#fi#ABC123"}, "sk": {"S": "UNIQUE"}, "truck_id": {"S": "t"}}}},
            {"ConditionCheck": {"Key": {"pk": {"S": "GEO#PUBLIC#4#u6sc"}, "sk": {"S": "RP#1"}}}},
            {"Update": {"Key": {"pk": {"S": "RATE#abcdef"}, "sk": {"S": "RATE"}}}},
        ]});
        assert_eq!(
            key_shape(&tx),
            "PLATE#*#*#* / UNIQUE, GEO#PUBLIC#*#* / RP#*, RATE#* / RATE"
        );
    }

    #[test]
    fn parallel_calls_share_a_round_trip() {
        let calls = CallCounter::default();
        calls.started();
        calls.ended();
        // Two at once, overlapping.
        calls.started();
        calls.started();
        calls.ended();
        calls.ended();
        calls.started();
        calls.ended();
        assert_eq!((calls.get(), calls.round_trips()), (4, 3));
        // Calls made together are one stretch, even one after the other.
        calls.begin_stretch();
        calls.started();
        calls.ended();
        calls.started();
        calls.ended();
        calls.end_stretch();
        assert_eq!((calls.get(), calls.round_trips()), (6, 4));
    }
}
