//! Faults at the wire: an HTTP client for every AWS SDK client of a state
//! (DynamoDB, S3, SQS, Secrets Manager) that, once armed, breaks the n-th
//! call it carries in one of three ways:
//!
//! - `Fail`: the call never leaves (a connection refused): nothing happens
//!   at the service, the caller hears an error.
//! - `Cut`: the call reaches the service and takes effect, and its answer
//!   is lost (a connection cut after the commit): the caller hears an error.
//! - `Die`: the call reaches the service and takes effect, and the caller
//!   never hears anything again (the function was killed right after):
//!   `Cuts::died` wakes whoever runs the request, to drop it.
//! - `Stall`: the call waits before it leaves until `Cuts::go` (a frozen
//!   container, thawed later); `Cuts::stalled` tells when it waits.
//! - `Freeze`: the call takes effect, then its caller is frozen until
//!   `Cuts::go` before it hears the answer; `Cuts::stalled` tells when.
//! - `Cancel(reason)`: the call (a `TransactWriteItems`) never leaves, and
//!   the caller hears DynamoDB cancel the transaction for `reason` on its
//!   first action (`TransactionConflict`: another transaction held the
//!   item).
//!
//! Calls are counted from arming, every service together, so a request's
//! calls can be broken one after the other. The SDK's own retries are off
//! for such a client (`Cuts::sdk`): each call's fault is seen, not retried
//! away; `Cuts::sdk_retrying` keeps them, as deployed, to show what the
//! SDK's retry of a broken call does.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use tokio::sync::Notify;

/// How long `Cuts::stalled` waits for the armed call (a request reaches
/// it in well under a second on a busy debug build).
pub const REACHED_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

/// How the armed call breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    Fail,
    Cut,
    Die,
    Stall,
    Freeze,
    Cancel(&'static str),
}

#[derive(Debug, Default)]
struct Plan {
    calls: AtomicUsize,
    armed: Mutex<Option<(Cut, At)>>,
    /// How many more calls the armed cut breaks after the next.
    again: AtomicUsize,
    /// The call `At::Resent` breaks again: its operation and body.
    resent: Mutex<Option<(String, Vec<u8>)>>,
    /// `At::NextAfter`'s call was made: the next one breaks.
    passed: std::sync::atomic::AtomicBool,
    /// The call that was broken: its number and what it was.
    broken: Mutex<Option<String>>,
    /// Every call's operation since `Cuts::mark`, and when it was made.
    log: Mutex<Vec<(Instant, String)>>,
    died: Notify,
    stalled: Notify,
    go: Notify,
}

/// Which call breaks.
#[derive(Clone, Copy, Debug)]
enum At {
    /// The n-th from arming.
    Nth(usize),
    /// The first whose operation contains this.
    First(&'static str),
    /// The first whose operation contains `.0` and whose body contains `.1`.
    FirstWith(&'static str, &'static str),
    /// The n-th from arming, then the SDK's every resend of it.
    NthResent(usize),
    /// A resend of the call `NthResent` broke (`Plan::resent`).
    Resent,
    /// The first call after the first whose operation contains this (the
    /// call right after a commit, say).
    NextAfter(&'static str),
}

/// The switch of a faulty client.
#[derive(Clone, Debug, Default)]
pub struct Cuts(Arc<Plan>);

impl Cuts {
    /// Breaks the `at`-th call from now (1 is the next) by `cut`.
    pub fn arm(&self, cut: Cut, at: usize) {
        self.0.calls.store(0, Ordering::SeqCst);
        self.0.again.store(0, Ordering::SeqCst);
        *self.0.broken.lock().unwrap() = None;
        *self.0.armed.lock().unwrap() = Some((cut, At::Nth(at)));
    }

    /// Breaks the next call whose operation (as `broken` names it)
    /// contains `operation`, by `cut`.
    pub fn arm_first(&self, cut: Cut, operation: &'static str) {
        self.arm(cut, 0);
        *self.0.armed.lock().unwrap() = Some((cut, At::First(operation)));
    }

    /// Breaks the next call whose operation contains `operation` and whose
    /// body contains `body` (a key's prefix, say), by `cut`.
    pub fn arm_on(&self, cut: Cut, operation: &'static str, body: &'static str) {
        self.arm(cut, 0);
        *self.0.armed.lock().unwrap() = Some((cut, At::FirstWith(operation, body)));
    }

    /// Breaks the next `times` calls whose operation contains
    /// `operation`, each by `cut`.
    pub fn arm_each(&self, cut: Cut, operation: &'static str, times: usize) {
        self.arm_first(cut, operation);
        self.0
            .again
            .store(times.saturating_sub(1), Ordering::SeqCst);
    }

    /// Breaks the next `times` calls whose operation contains `operation`
    /// and whose body contains `body`, each by `cut` (every attempt the SDK
    /// makes of one call, say).
    pub fn arm_each_on(&self, cut: Cut, operation: &'static str, body: &'static str, times: usize) {
        self.arm_on(cut, operation, body);
        self.0
            .again
            .store(times.saturating_sub(1), Ordering::SeqCst);
    }

    /// Breaks the `at`-th call from now by `cut`, and each of the next
    /// `times - 1` calls that send it again (the same operation and body:
    /// the SDK's resends), whatever comes in between: with `Cut::Cut`,
    /// every attempt takes effect and no acknowledgement is heard.
    pub fn arm_resent(&self, cut: Cut, at: usize, times: usize) {
        self.arm(cut, 0);
        *self.0.armed.lock().unwrap() = Some((cut, At::NthResent(at)));
        *self.0.resent.lock().unwrap() = None;
        self.0
            .again
            .store(times.saturating_sub(1), Ordering::SeqCst);
    }

    /// Breaks, by `cut`, the first call after the first whose operation
    /// contains `operation` (e.g. `Stall` after `TransactWriteItems`: an
    /// attempt paused between its commit and what follows it).
    pub fn arm_after(&self, cut: Cut, operation: &'static str) {
        self.arm(cut, 0);
        self.0.passed.store(false, Ordering::SeqCst);
        *self.0.armed.lock().unwrap() = Some((cut, At::NextAfter(operation)));
    }

    /// Breaks nothing more.
    pub fn disarm(&self) {
        *self.0.armed.lock().unwrap() = None;
    }

    /// What the broken call was (its operation), once it was made.
    pub fn broken(&self) -> Option<String> {
        self.0.broken.lock().unwrap().clone()
    }

    /// Calls made since arming.
    pub fn calls(&self) -> usize {
        self.0.calls.load(Ordering::SeqCst)
    }

    /// Forgets the calls made so far (`Cuts::outside` counts from here).
    pub fn mark(&self) {
        self.0.log.lock().unwrap().clear();
    }

    /// The calls since `mark` that left for a service other than DynamoDB
    /// (S3, SQS) or Secrets Manager's reads: what a request caused outside
    /// the table.
    pub fn outside(&self) -> Vec<String> {
        let log = self.0.log.lock().unwrap();
        log.iter()
            .map(|(_, op)| op)
            .filter(|op| !op.starts_with("DynamoDB_") && !op.starts_with("secretsmanager."))
            .cloned()
            .collect()
    }

    /// When the calls since `mark` whose operation contains `operation`
    /// were made (broken or not), in order.
    pub fn made(&self, operation: &str) -> Vec<Instant> {
        let log = self.0.log.lock().unwrap();
        log.iter()
            .filter(|(_, op)| op.contains(operation))
            .map(|(at, _)| *at)
            .collect()
    }

    /// Resolves when a `Die` call has taken effect.
    pub async fn died(&self) {
        self.0.died.notified().await;
    }

    /// Resolves when a `Stall` or `Freeze` call waits; panics when none
    /// does within `REACHED_WITHIN` (the request failed or finished before
    /// the armed call: a test that waited for ever would hang, not fail).
    pub async fn stalled(&self) {
        let reached = tokio::time::timeout(REACHED_WITHIN, self.0.stalled.notified()).await;
        assert!(
            reached.is_ok(),
            "the armed call was not made within {REACHED_WITHIN:?}"
        );
    }

    /// Lets a `Stall` call go.
    pub fn go(&self) {
        self.0.go.notify_one();
    }

    /// `sdk` with this switch on its HTTP client and without retries:
    /// its one attempt may take what the whole call may (a slow answer
    /// from an engine on a busy machine, which a retry would have covered,
    /// is not a fault this switch made).
    pub fn sdk(&self, sdk: &aws_config::SdkConfig) -> aws_config::SdkConfig {
        let mut builder = self.sdk_retrying(sdk).to_builder();
        builder.set_retry_config(Some(aws_config::retry::RetryConfig::disabled()));
        if let Some(timeouts) = sdk.timeout_config() {
            let attempt = timeouts
                .operation_timeout()
                .or(timeouts.operation_attempt_timeout());
            let mut timeouts = timeouts.to_builder();
            timeouts.set_operation_attempt_timeout(attempt);
            builder.set_timeout_config(Some(timeouts.build()));
        }
        builder.build()
    }

    /// `sdk` with this switch on its HTTP client, its retries as they are.
    pub fn sdk_retrying(&self, sdk: &aws_config::SdkConfig) -> aws_config::SdkConfig {
        // The engines are on loopback, in plain HTTP.
        let inner = sdk
            .http_client()
            .unwrap_or_else(|| aws_smithy_http_client::Builder::new().build_http());
        sdk.to_builder()
            .http_client(SharedHttpClient::new(Faulty {
                inner,
                plan: self.0.clone(),
            }))
            .build()
    }
}

#[derive(Debug)]
struct Faulty {
    inner: SharedHttpClient,
    plan: Arc<Plan>,
}

impl HttpClient for Faulty {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(FaultyConnector {
            inner: self.inner.http_connector(settings, components),
            plan: self.plan.clone(),
        })
    }
}

#[derive(Debug)]
struct FaultyConnector {
    inner: SharedHttpConnector,
    plan: Arc<Plan>,
}

/// What a call is: its JSON protocol target (DynamoDB, SQS) or its method
/// and path (S3).
fn operation(request: &HttpRequest) -> String {
    match request.headers().get("x-amz-target") {
        Some(target) => target.to_owned(),
        None => format!("{} {}", request.method(), request.uri()),
    }
}

impl HttpConnector for FaultyConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let plan = self.plan.clone();
        let n = plan.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let what = operation(&request);
        plan.log
            .lock()
            .unwrap()
            .push((Instant::now(), what.clone()));
        let cut = {
            let mut armed = plan.armed.lock().unwrap();
            let body = || {
                request
                    .body()
                    .bytes()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default()
            };
            if let Some((_, At::NextAfter(op))) = *armed
                && !plan.passed.load(Ordering::SeqCst)
            {
                if what.contains(op) {
                    plan.passed.store(true, Ordering::SeqCst);
                }
                return self.inner.call(request);
            }
            let cut = match *armed {
                Some((cut, At::NextAfter(_))) => cut,
                Some((cut, At::Nth(at))) if at == n => cut,
                Some((cut, At::First(op))) if what.contains(op) => cut,
                Some((cut, At::FirstWith(op, part)))
                    if what.contains(op) && body().contains(part) =>
                {
                    cut
                }
                Some((cut, At::NthResent(at))) if at == n => {
                    let bytes = request.body().bytes().unwrap_or_default().to_vec();
                    *plan.resent.lock().unwrap() = Some((what.clone(), bytes));
                    *armed = Some((cut, At::Resent));
                    cut
                }
                Some((cut, At::Resent))
                    if plan
                        .resent
                        .lock()
                        .unwrap()
                        .as_ref()
                        .is_some_and(|(op, bytes)| {
                            *op == what && request.body().bytes().unwrap_or_default() == bytes
                        }) =>
                {
                    cut
                }
                _ => return self.inner.call(request),
            };
            if plan.again.load(Ordering::SeqCst) > 0 {
                plan.again.fetch_sub(1, Ordering::SeqCst);
            } else {
                *armed = None;
            }
            cut
        };
        *plan.broken.lock().unwrap() = Some(format!("call {n}: {what}"));
        let injected = || ConnectorError::io("injected fault".into());
        match cut {
            Cut::Fail => HttpConnectorFuture::ready(Err(injected())),
            Cut::Cut => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let _ = sent.await;
                    Err(injected())
                })
            }
            Cut::Stall => {
                let inner = self.inner.clone();
                HttpConnectorFuture::new(async move {
                    plan.stalled.notify_one();
                    plan.go.notified().await;
                    inner.call(request).await
                })
            }
            Cut::Freeze => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let answer = sent.await;
                    plan.stalled.notify_one();
                    plan.go.notified().await;
                    answer
                })
            }
            Cut::Cancel(reason) => HttpConnectorFuture::ready(Ok(cancelled(&request, reason))),
            Cut::Die => {
                let sent = self.inner.call(request);
                HttpConnectorFuture::new(async move {
                    let _ = sent.await;
                    plan.died.notify_one();
                    std::future::pending().await
                })
            }
        }
    }
}

/// DynamoDB's answer to a `TransactWriteItems` it cancelled for `reason`
/// on the first of its actions (the others' reason `None`).
fn cancelled(request: &HttpRequest, reason: &str) -> HttpResponse {
    let body: serde_json::Value = request
        .body()
        .bytes()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    let actions = body["TransactItems"].as_array().map_or(1, Vec::len);
    let reasons: Vec<serde_json::Value> = (0..actions)
        .map(|i| match i {
            0 => serde_json::json!({"Code": reason, "Message": "injected"}),
            _ => serde_json::json!({"Code": "None"}),
        })
        .collect();
    let answer = serde_json::json!({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "Message": format!("Transaction cancelled, please refer cancellation reasons for specific reasons [{reason}]"),
        "CancellationReasons": reasons,
    });
    let mut response = HttpResponse::new(
        400.try_into().expect("a status"),
        SdkBody::from(answer.to_string()),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
}
