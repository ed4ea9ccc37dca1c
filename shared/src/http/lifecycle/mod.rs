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
use uuid::Uuid;

use super::idempotency::{self, NotRun, Presented};
use crate::auth::scope::RequiredScope;
use crate::error::ApiError;
use crate::ratelimit::{self, RateLimitDecision, Reservation};
use crate::state::AppState;
use crate::store::exactly_once::idempotency::Claim;

mod admission;

use admission::{Refusal, admission, beside, presented, recall};

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
            RateLimitDecision::untouched(&state.config.http.rate_limit, crate::clock::system_time())
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
