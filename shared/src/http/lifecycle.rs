//! What happens to every request before and after its handler, in order.
//! Each stage is a type that only the stage before it can build, and one
//! value is handed along (never left in a shared slot for a later step to
//! find), so a step out of order does not compile:
//!
//! 1. `Arrived` (the layer, before routing): a return path to the layer is
//!    opened (`begin`), and a `POST` with an `Idempotency-Key` has its body
//!    read and fingerprinted (`idempotency::read`). It rides in the
//!    request's extensions to the route.
//! 2. `Admitted` (the `Ctx` extractor): the key presented is read and the
//!    request counted in one round trip (`ApiKeys::admit`); 401, 403 or
//!    429 otherwise, in the contract's order (`auth::decision`). It holds
//!    the key's organization, the key, the rate-limit decision and the
//!    budget slot the request holds. A warm request does not wait for it:
//!    a `GET` or `PATCH` whose key this instance admitted lately
//!    (`auth::memory`: the organization, a scope that covers the route,
//!    budget left) has its admission started in a task of its own and runs
//!    its handler at once, so the admission and the route's own reads take
//!    one round trip. Its writes wait for the admission (`gate`,
//!    which the admission holds), and go only if it let the request in: a
//!    warm `PATCH` reads beside its admission, then writes.
//! 3. `Claimed` (the `Ctx` extractor): the `Idempotency-Key`, if any, is
//!    claimed, or the request does not run (the first answer is replayed,
//!    or 400/409/422). The `Claimed` goes back to the layer, and the
//!    handler runs.
//! 4. `Settled` (the layer, after the handler, `Returned::settle`): a warm
//!    request's admission is awaited first. Refused, the handler's answer
//!    is dropped unread and the refusal answers, exactly as a cold
//!    request's would; admitted for another organization than remembered,
//!    the answer is dropped and the request runs again, cold
//!    (`Settled::again`), nothing written. Then
//!    the slot is kept for a success or given back (and counted as a
//!    failure), the answer is kept for its `Idempotency-Key` or the key
//!    freed, and the `X-RateLimit-*` headers are written. A request refused
//!    before admission shows the key's true budget, or the full budget when
//!    no key was accepted.

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;
use uuid::Uuid;

use super::idempotency::{self, NotRun, Presented};
use crate::auth::key::{self, KeyHash};
use crate::auth::memory::Recalled;
use crate::auth::scope::RequiredScope;
use crate::error::ApiError;
use crate::error::codes;
use crate::gate::WriteGate;
use crate::ratelimit::{self, RateLimitDecision, Reservation, Window};
use crate::state::AppState;
use crate::store::engine::calls::CallCounter;
use crate::store::exactly_once::idempotency::Claim;
use crate::store::operators::api_keys::Limits;

/// The layer's start of a request: the return path opened, the request
/// not yet read.
#[derive(Debug)]
pub struct Arriving(oneshot::Sender<Handback>);

/// Stage 1: a request that reached the layer, on its way to its route.
#[derive(Debug)]
pub struct Arrived {
    idempotency: Option<Presented>,
    /// Its handler may start before its admission ends, when its key is
    /// remembered: the layer kept a copy to run it again (`GET`, `HEAD`,
    /// `PATCH`).
    early: bool,
    back: oneshot::Sender<Handback>,
}

/// The layer's end of the return path, and what an answer cut off by the
/// deadline shows (the budget the request was admitted with, if it got
/// that far).
#[derive(Debug)]
pub struct Returned {
    from: oneshot::Receiver<Handback>,
    shown: Option<Shown>,
}

/// The budget an answer shows, and the key's organization and id for its
/// line.
type Shown = (Option<RateLimitDecision>, Option<Uuid>, Option<Uuid>);

/// Opens a request's lifecycle, in the layer.
pub fn begin() -> (Arriving, Returned) {
    let (back, from) = oneshot::channel();
    (Arriving(back), Returned { from, shown: None })
}

/// What the route hands back to the layer.
#[derive(Debug)]
enum Handback {
    /// Refused before admission: the budget to show (None: no key was
    /// accepted), and the key's organization and id, when it was found.
    Refused {
        rate: Option<RateLimitDecision>,
        org: Option<Uuid>,
        key: Option<Uuid>,
    },
    Claimed(Claimed),
}

/// Stage 2: a request whose key may make it, counted (or, for a warm
/// read, being counted).
#[derive(Debug)]
pub struct Admitted {
    pub org_id: Uuid,
    pub key_id: Uuid,
    admission: Admission,
    idempotency: Option<Presented>,
    back: oneshot::Sender<Handback>,
}

/// An admission's outcome: the key's organization and id, the rate-limit
/// decision and the budget slot the request holds.
type Outcome = (Uuid, Uuid, RateLimitDecision, Option<Reservation>);

#[derive(Debug)]
enum Admission {
    /// Decided before the handler.
    Decided {
        rate: RateLimitDecision,
        slot: Option<Reservation>,
    },
    /// A warm request's, running beside its handler; awaited before the
    /// answer leaves.
    Running(JoinHandle<Result<Outcome, Refusal>>),
}

/// Stage 3: an admitted request about to run (or answered without
/// running), as the layer settles it.
#[derive(Debug)]
pub struct Claimed {
    org_id: Uuid,
    key_id: Uuid,
    admission: Admission,
    claim: Option<Claim>,
}

impl Arriving {
    /// Stage 1, in the layer: `request` with its `Arrived` in its
    /// extensions (its body read first when it carries an
    /// `Idempotency-Key`: at most `limit` bytes). An `early` request (one
    /// the layer can run again) may start before its admission ends.
    pub async fn arrive(
        self,
        request: Request,
        limit: usize,
        early: bool,
        cursors: &crate::cursor::Cursors,
    ) -> Result<Request, ApiError> {
        let (mut request, idempotency) = idempotency::read(request, limit, cursors).await?;
        let arrived = Arrived {
            idempotency,
            early,
            back: self.0,
        };
        request.extensions_mut().insert(InTransit::new(arrived));
        Ok(request)
    }
}

/// `Arrived` in the request's extensions, which hold only `Clone` values:
/// the one value in a cell that the route takes out once.
#[derive(Clone, Debug)]
struct InTransit(Arc<Mutex<Option<Arrived>>>);

impl InTransit {
    fn new(arrived: Arrived) -> Self {
        InTransit(Arc::new(Mutex::new(Some(arrived))))
    }
}

impl Arrived {
    /// The request's `Arrived`, taken out of its extensions (None: it did
    /// not pass the layer, or its route took it already).
    pub fn take(extensions: &mut http::Extensions) -> Option<Arrived> {
        let in_transit = extensions.remove::<InTransit>()?;
        let mut cell = in_transit.0.lock().unwrap_or_else(|e| e.into_inner());
        cell.take()
    }

    /// Stage 2, in the extractor: admits the key `headers` present for a
    /// route that needs `S`; for a warm request, starts its admission and
    /// lets the handler run beside it.
    pub async fn admit<S: RequiredScope>(
        self,
        state: &AppState,
        headers: &HeaderMap,
    ) -> Result<Admitted, NotRun> {
        let Arrived {
            idempotency,
            early,
            back,
        } = self;
        let decided = match presented(state, headers) {
            Err(refused) => Err(refused),
            Ok(hash) => {
                let recalled = early.then(|| recall::<S>(state, &hash)).flatten();
                if let Some(recalled) = recalled {
                    let running = beside::<S>(state, hash, recalled.org_id);
                    return Ok(Admitted {
                        org_id: recalled.org_id,
                        key_id: recalled.key_id,
                        admission: Admission::Running(running),
                        idempotency,
                        back,
                    });
                }
                // Boxed: the admission's state is large, and a debug
                // build's worker stack is not (cargo lambda watch).
                Box::pin(admission::<S>(state, hash)).await
            }
        };
        match decided {
            Ok((org_id, key_id, rate, slot)) => Ok(Admitted {
                org_id,
                key_id,
                admission: Admission::Decided { rate, slot },
                idempotency,
                back,
            }),
            Err(refused) => {
                let _ = back.send(Handback::Refused {
                    rate: refused.rate,
                    org: refused.org,
                    key: refused.key,
                });
                Err(refused.error.into())
            }
        }
    }
}

/// Why admission refused, with what the answer shows, and the key's
/// organization and id when the key was found (for the request's line,
/// never the answer).
#[derive(Debug)]
struct Refusal {
    error: ApiError,
    rate: Option<RateLimitDecision>,
    org: Option<Uuid>,
    key: Option<Uuid>,
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Refusal {
            error,
            rate: None,
            org: None,
            key: None,
        }
    }
}

impl Refusal {
    /// A refusal of the key `record` holds.
    fn of(
        error: ApiError,
        rate: Option<RateLimitDecision>,
        record: &crate::auth::decision::ApiKeyRecord,
    ) -> Self {
        Refusal {
            error,
            rate,
            org: Some(record.org_id),
            key: Some(record.key_id),
        }
    }
}

/// The key `headers` present (401 when none, or a malformed one).
fn presented(state: &AppState, headers: &HeaderMap) -> Result<KeyHash, Refusal> {
    Ok(key::presented(
        headers,
        &state.config.short_name.key_prefix(),
    )?)
}

/// The key's organization, when this instance admitted the key lately and
/// the next admission will most likely let a request that needs `S` in.
fn recall<S: RequiredScope>(state: &AppState, hash: &KeyHash) -> Option<Recalled> {
    let config = &state.config;
    if !config.warm_requests {
        return None;
    }
    state.key_memory.recall(
        hash,
        S::SCOPE,
        config.public_api_enabled,
        crate::model::now(),
    )
}

/// A warm request's admission, in a task of its own (with the request's
/// call counter and span), so that the handler's reads go out at the same
/// time. It holds the request's writes until it ends, and lets them go
/// only if it admits the request for `remembered`, the organization the
/// handler runs for.
fn beside<S: RequiredScope>(
    state: &AppState,
    hash: KeyHash,
    remembered: Uuid,
) -> JoinHandle<Result<Outcome, Refusal>> {
    let state = state.clone();
    let writes = WriteGate::hold();
    let admission = async move {
        let outcome = Box::pin(admission::<S>(&state, hash)).await;
        if let Some(writes) = writes {
            writes.decide(matches!(&outcome, Ok((org, ..)) if *org == remembered));
        }
        outcome
    }
    .instrument(tracing::Span::current());
    let admission = crate::clock::carried(admission);
    // The admission is what decides the gate: it runs outside it.
    #[allow(clippy::disallowed_methods)]
    match CallCounter::current() {
        Some(counter) => tokio::spawn(async move { counter.scope(admission).await }),
        None => tokio::spawn(admission),
    }
}

/// The contract's order: the key (401), its organization, scope,
/// entitlement and the deployment switch (403), then the budget (429),
/// from one round trip where the limit counts (a plain read elsewhere).
/// What it finds is remembered for the key's next request
/// (`auth::memory`), and a refused key forgotten.
async fn admission<S: RequiredScope>(state: &AppState, hash: KeyHash) -> Result<Outcome, Refusal> {
    let memory = &state.key_memory;
    memory.forget(&hash);
    let needed = S::SCOPE;
    let config = &state.config;
    let (now, at) = (crate::clock::system_time(), crate::model::now());
    let limits = &config.rate_limit;
    let window = Window::at(now, limits.window);
    let keys = state.store.api_keys();
    let leases = &state.rate_leases;
    let counting = limits.enabled && config.public_api_enabled;
    // A slot this instance leased for the key in this window: the key is
    // read, not counted again (`ratelimit::lease`).
    let leased = counting.then(|| leases.take(&hash, window.index)).flatten();
    // Else it counts, and says so until what it leased is held.
    let flight = (counting && leased.is_none()).then(|| leases.counting(&hash));
    let found = if leased.is_some() {
        keys.read_leased(&hash, window.index).await
    } else if counting {
        let counted = Limits {
            window: window.index,
            cap: limits.limit,
            failure_cap: limits.failure_limit(),
            slots: leases.size(&hash, window.index, limits.lease),
        };
        Box::pin(keys.admit(&hash, needed, counted, at)).await
    } else {
        keys.read(&hash, window.index).await
    };
    let found = found.inspect_err(|_| leases.forget(&hash))?;
    // A refused key's lease goes (its slots stay spent).
    let refused = |error: ApiError| {
        leases.forget(&hash);
        error
    };
    let record = found
        .record
        .as_ref()
        .ok_or_else(|| refused(ApiError::InvalidApiKey))?;
    let stored =
        KeyHash::from_hex(&record.key_hash).ok_or_else(|| refused(ApiError::InvalidApiKey))?;
    if !stored.matches(&hash) {
        return Err(refused(ApiError::InvalidApiKey).into());
    }
    // The key is its record's: from here on its line names it.
    if let Some(rejected) = record.rejection(at) {
        return Err(Refusal::of(refused(rejected), None, record));
    }
    // The key is valid: from here on every answer shows its budget.
    if let Some(mut refused) = record.refusal(needed, config.public_api_enabled) {
        if !record.org_active && S::INACTIVE_ORG_IS_NOT_FOUND {
            refused = ApiError::org_not_found();
        }
        leases.forget(&hash);
        let rate = ratelimit::standing(limits, window, &found);
        return Err(Refusal::of(refused, Some(rate), record));
    }
    let (rate, slot) = match leased {
        Some(left) => ratelimit::leased(limits, hash, window, &found, left),
        None => {
            let (rate, slot, lease) = ratelimit::decide(&state.store, limits, hash, window, &found)
                .await
                .map_err(|error| Refusal::of(error, None, record))?;
            if slot.is_some() {
                leases.granted(&hash, window.index, lease + 1, rate.remaining);
            }
            // Refused by the window: a slot another request of this
            // instance leased, if one is left once they all have.
            let held = match flight {
                Some(flight) if !rate.allowed && !rate.failures => {
                    leases.take_after(flight, window.index).await
                }
                _ => None,
            };
            match held {
                Some(left) => ratelimit::leased(limits, hash, window, &found, left),
                None => (rate, slot),
            }
        }
    };
    // Remembered for the key's next request; a key at its limit is not
    // worth starting a read for.
    memory.remember(&hash, record, rate.allowed && rate.remaining > 0);
    if !rate.allowed {
        let error = if rate.failures {
            codes::RATE_LIMITED.retry_after(
                "this key made too many failed requests in this minute",
                rate.retry_after,
            )
        } else {
            ApiError::RateLimited {
                retry_after: rate.retry_after,
            }
        };
        return Err(Refusal::of(error, Some(rate), record));
    }
    Ok((record.org_id, record.key_id, rate, slot))
}

impl Admitted {
    /// Stage 3, in the extractor: claims the request's `Idempotency-Key`
    /// (if any) for its key. Whether it then runs or not (a replay, a
    /// refused key), the layer gets the `Claimed` to settle.
    pub async fn claim(self, state: &AppState) -> Result<(Uuid, Uuid), NotRun> {
        let Admitted {
            org_id,
            key_id,
            admission,
            idempotency,
            back,
        } = self;
        let claimed = idempotency::claim(
            &state.store,
            &state.sealer,
            &state.cursors,
            idempotency,
            key_id,
        )
        .await;
        let (claim, outcome) = match claimed {
            Ok(claim) => (claim, Ok((org_id, key_id))),
            Err(not_run) => (None, Err(not_run)),
        };
        let _ = back.send(Handback::Claimed(Claimed {
            org_id,
            key_id,
            admission,
            claim,
        }));
        outcome
    }
}

/// What the layer learns of a request it settles.
#[derive(Debug, Default)]
pub struct Settled {
    /// The key's organization, when a key was accepted.
    pub org: Option<Uuid>,
    /// A warm request whose admission named another organization than
    /// remembered: its answer was dropped, nothing written; run the
    /// request again.
    pub again: bool,
    /// A warm request: its route's reads went out beside its admission,
    /// which let it in.
    pub warm: bool,
    /// The key's id, when the key was found (admitted or refused).
    pub key: Option<Uuid>,
    /// The rate-limit window an admitted request was counted in (None
    /// when the limit is off, or nothing was counted): the admission's
    /// record, logged with the answer's status.
    pub rate_window: Option<u64>,
}

impl Returned {
    /// Stage 4, in the layer, after the handler: settles what came back
    /// (nothing, for routes without a key) into `response` of a `/api/v1/*`
    /// request (`versioned`; other paths carry no budget).
    pub async fn settle(
        &mut self,
        state: &AppState,
        versioned: bool,
        response: Response,
        span: &tracing::Span,
    ) -> (Response, Settled) {
        let (mut response, rate, (org, key), warm, rate_window) = match self.from.try_recv().ok() {
            None => (response, None, (None, None), false, None),
            Some(Handback::Refused { rate, org, key }) => (response, rate, (org, key), false, None),
            Some(Handback::Claimed(claimed)) => match claimed.decided(state).await {
                Decided::Admitted {
                    org,
                    key,
                    rate,
                    slot,
                    claim,
                    warm,
                } => {
                    self.shown = Some((Some(rate), Some(org), Some(key)));
                    let window = slot.map(|s| s.window);
                    let (response, rate) = settle(state, rate, slot, claim, response, span).await;
                    (response, Some(rate), (Some(org), Some(key)), warm, window)
                }
                // The handler's answer is dropped unread: the refusal
                // answers, as it would have before the handler.
                Decided::Refused(refused) => (
                    refused.error.into_response(),
                    refused.rate,
                    (refused.org, refused.key),
                    false,
                    None,
                ),
                Decided::Elsewhere => {
                    let settled = Settled {
                        again: true,
                        ..Settled::default()
                    };
                    return (response, settled);
                }
            },
        };
        show(state, versioned, rate, &mut response);
        let settled = Settled {
            org,
            key,
            warm,
            rate_window,
            ..Settled::default()
        };
        (response, settled)
    }

    /// For an answer made without its route's (cut off by the deadline):
    /// the headers of what came back, nothing given back or kept (the
    /// change may or may not have been made).
    pub fn unsettled(
        mut self,
        state: &AppState,
        versioned: bool,
        response: &mut Response,
    ) -> Settled {
        let (rate, org, key) = match self.from.try_recv().ok() {
            Some(Handback::Refused { rate, org, key }) => (rate, org, key),
            Some(Handback::Claimed(claimed)) => match claimed.admission {
                Admission::Decided { rate, .. } => {
                    (Some(rate), Some(claimed.org_id), Some(claimed.key_id))
                }
                Admission::Running(_) => (None, None, None),
            },
            None => self.shown.take().unwrap_or((None, None, None)),
        };
        show(state, versioned, rate, response);
        Settled {
            org,
            key,
            ..Settled::default()
        }
    }
}

/// The `X-RateLimit-*` headers of a `/api/v1/*` answer (`versioned`): the
/// key's budget as `rate` says, or the full budget when no key was
/// accepted.
fn show(
    state: &AppState,
    versioned: bool,
    rate: Option<RateLimitDecision>,
    response: &mut Response,
) {
    if versioned {
        rate.unwrap_or_else(|| {
            RateLimitDecision::untouched(&state.config.rate_limit, crate::clock::system_time())
        })
        .write_headers(response.headers_mut());
    }
}

/// How a claimed request's admission ended.
enum Decided {
    Admitted {
        org: Uuid,
        key: Uuid,
        rate: RateLimitDecision,
        slot: Option<Reservation>,
        claim: Option<Claim>,
        /// Admitted beside its handler (a warm request).
        warm: bool,
    },
    Refused(Refusal),
    /// A warm request's key belongs to another organization than
    /// remembered.
    Elsewhere,
}

impl Claimed {
    /// The admission's outcome: decided already, or a warm request's,
    /// awaited.
    async fn decided(self, state: &AppState) -> Decided {
        let Claimed {
            org_id,
            key_id,
            admission,
            claim,
        } = self;
        match admission {
            Admission::Decided { rate, slot } => Decided::Admitted {
                org: org_id,
                key: key_id,
                rate,
                slot,
                claim,
                warm: false,
            },
            Admission::Running(running) => match running.await {
                Ok(Ok((org, key, rate, slot))) if org == org_id => Decided::Admitted {
                    org,
                    key,
                    rate,
                    slot,
                    claim,
                    warm: true,
                },
                Ok(Ok((_, _, _, slot))) => {
                    // Counted for a request that runs again: given back.
                    if let Some(slot) = slot {
                        let _ = ratelimit::release(&state.store, slot).await;
                    }
                    Decided::Elsewhere
                }
                Ok(Err(refused)) => Decided::Refused(refused),
                Err(panicked) => Decided::Refused(ApiError::internal(panicked).into()),
            },
        }
    }
}

/// The slot kept (a success) or given back; the answer kept for the
/// `Idempotency-Key` (or the key freed), both at once.
async fn settle(
    state: &AppState,
    rate: RateLimitDecision,
    slot: Option<Reservation>,
    claim: Option<Claim>,
    response: Response,
    span: &tracing::Span,
) -> (Response, RateLimitDecision) {
    let slot = slot.filter(|_| !response.status().is_success());
    let give_back = async {
        match slot {
            Some(slot) => Some(ratelimit::release(&state.store, slot).await),
            None => None,
        }
    };
    let (given_back, response) = tokio::join!(
        give_back,
        idempotency::settle(&state.store, &state.sealer, claim, response)
    );
    let rate = match given_back {
        Some(Ok(())) => rate.released(),
        Some(Err(error)) => {
            span.in_scope(|| tracing::warn!(%error, "could not give back a rate-limit slot"));
            rate
        }
        None => rate,
    };
    (response, rate)
}
