//! An idempotent request's outcome commits with its writes (Stripe's
//! atomic phases): a request that holds a claim on its `Idempotency-Key`
//! renders its answer from what its write is about to commit, and that
//! answer goes into the write's own transaction, on the claim's item, on
//! condition that the claim is still this request's. So a request that
//! dies at any point (before, during or after its commit) leaves either
//! nothing (a retry runs) or its writes and its answer (a retry gets that
//! answer), never the one without the other; and a request whose claim
//! lapsed meanwhile (frozen past its lease while a retry took the key
//! over) cannot commit at all.
//!
//! The layer runs each handler inside an `Outcome`. The HTTP layer
//! registers the claim and the route's `Render` (what the route answers
//! for the value its write returns); the store calls `render` with that
//! value just before the transaction that commits it, and `tx::transact`
//! adds the answer's action (`action`) and notes its commit. Outside a
//! request, without a claim, or for a value of another type than the
//! route's, nothing happens: the write goes alone.
//!
//! Effects outside the table (an object written, a message sent, a
//! provider called) go only while the request's claim is its own
//! (`fence`): a request thawed past its lease, whose key another attempt
//! holds now, makes none of them.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::TransactWriteItem;
use futures::future::BoxFuture;

use crate::clock::millis;
use crate::error::ApiError;
use crate::error::codes;
use crate::store::engine::client::Store;
use crate::store::exactly_once::idempotency;
use crate::store::exactly_once::idempotency::{Answer, Claim, LEASE};

tokio::task_local! {
    static OUTCOME: Outcome;
}

/// An answer as it is sent (`plain`) and as it is kept (`stored`: sealed
/// when it carries a secret).
#[derive(Clone, Debug)]
pub struct Kept {
    pub plain: Answer,
    pub stored: Answer,
}

/// What a route answers for the value its write commits (boxed: the
/// store knows neither the type nor the route). It gets the claim the
/// answer is kept under (a sealed answer is bound to its item).
pub type Render = Arc<
    dyn Fn(Box<dyn Any + Send>, Claim) -> BoxFuture<'static, Result<Kept, ApiError>> + Send + Sync,
>;

/// One request's outcome.
#[derive(Clone, Debug, Default)]
pub struct Outcome(Arc<Mutex<Phase>>);

#[derive(Default)]
struct Phase {
    /// The request's claim, and the store it was written to.
    claim: Option<Claim>,
    store: Option<Store>,
    render: Option<(TypeId, Render)>,
    /// Rendered for the transaction about to go.
    pending: Option<Kept>,
    /// Kept by a committed transaction: the answer as sent.
    committed: Option<Answer>,
    /// A transaction of the request kept its answer: what it does after
    /// (a file copied to its place) belongs to that commit, whatever
    /// became of the claim since.
    kept: bool,
    /// An effect outside the table whose outcome is unknown (a call that
    /// timed out after it left) may still land until then (Unix ms): the
    /// key is held that long, not freed, whatever the request answers.
    uncertain_until: Option<u64>,
}

impl std::fmt::Debug for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Phase")
            .field("claim", &self.claim)
            .field("render", &self.render.is_some())
            .field("pending", &self.pending.is_some())
            .field("committed", &self.committed.is_some())
            .finish()
    }
}

impl Outcome {
    /// Runs `future` (a handler) with this outcome.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        OUTCOME.scope(self.clone(), future).await
    }

    /// Until when (Unix ms) an effect the request began may still land,
    /// when its outcome is unknown (`uncertain_until`).
    pub fn uncertain(&self) -> Option<u64> {
        let phase = self.0.lock().unwrap_or_else(|e| e.into_inner());
        phase.uncertain_until.filter(|_| phase.claim.is_some())
    }
}

fn with<T>(f: impl FnOnce(&mut Phase) -> T) -> Option<T> {
    OUTCOME
        .try_with(|outcome| {
            let mut phase = outcome.0.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut phase)
        })
        .ok()
}

/// The request holds `claim` (its `Idempotency-Key`), written to `store`.
pub fn claimed(claim: Claim, store: &Store) {
    with(|phase| {
        phase.claim = Some(claim);
        phase.store = Some(store.clone());
    });
}

/// The request this one is an attempt of (None without an
/// `Idempotency-Key`): shared by its retries, new for a key reused after
/// its retention. What a request causes outside the table names it (a
/// ticket's issue, a delivery's manual attempt), so a later attempt can
/// find it.
pub fn request_id() -> Option<uuid::Uuid> {
    with(|phase| phase.claim.as_ref().map(|c| c.request)).flatten()
}

/// The SHA-256 (hex) of the request's `Idempotency-Key`, as its item's
/// key holds it: what a provider may keep of the request to find its
/// answer again (`Idempotency::standing`).
pub fn key_hash() -> Option<String> {
    with(|phase| {
        let claim = phase.claim.as_ref()?;
        claim.key_hash().map(str::to_owned)
    })
    .flatten()
}

/// Whether an earlier attempt of this request began an effect outside the
/// table that may have happened (`fence` with `acting`): a later attempt
/// looks for it before making it again.
pub fn acted() -> bool {
    with(|phase| phase.claim.as_ref().is_some_and(|c| c.acted)).unwrap_or(false)
}

/// Time kept between the end of an effect's allowance and the end of the
/// lease: the clocks of two instances may differ by this much, and the
/// effect must have arrived before another attempt may take the key.
pub const MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Before an effect outside the table that takes up to `needed`: Ok when
/// the request may make it, with the time (Unix ms) by which it must be
/// made (None without a claim). The request's claim must still be its
/// own: its lease, by this instance's clock, runs past `needed` and the
/// margin (no other attempt can have taken the key), or it is held for a
/// new lease with a conditional write on the claim's token. With `acting`,
/// that write also records that the effect began (`acted`, for a later
/// attempt), and is always made. 409 `idempotency_key_in_flight` when the
/// claim is no longer the request's: the effect is not made, and the
/// request answers what the key's holder answered, if anything.
pub async fn fence(needed: std::time::Duration, acting: bool) -> Result<Option<u64>, ApiError> {
    let held = with(|phase| {
        let claim = phase.claim.clone().filter(|_| !phase.kept)?;
        Some((claim, phase.store.clone()?))
    });
    let Some((claim, store)) = held.flatten() else {
        return Ok(None);
    };
    let now = crate::clock::unix_ms();
    let span = millis(needed) + millis(MARGIN);
    if !acting && claim.lease_until >= now + span {
        return Ok(Some(claim.lease_until - millis(MARGIN)));
    }
    let lease_until = now + span.max(millis(LEASE));
    if !store
        .idempotency()
        .hold(&claim, lease_until, acting)
        .await?
    {
        return Err(claim_lost());
    }
    with(|phase| phase.claim = Some(claim.held_until(lease_until)));
    Ok(Some(lease_until - millis(MARGIN)))
}

/// Before an effect outside the table (an object written, copied or
/// deleted, a message sent, a provider called) that takes up to `needed`:
/// the request's admission let it in (`gate`), and its claim on its
/// `Idempotency-Key`, if any, is still its own (`fence`). The time by which
/// the effect must be made, when there is a claim.
pub async fn effect_may_go(needed: std::time::Duration) -> Result<Option<u64>, ApiError> {
    crate::gate::writes_may_go().await?;
    fence(needed, false).await
}

/// An effect the request began (after `fence` with `acting`) has an
/// unknown outcome, and may still land until `until` (Unix ms): the
/// request's key is held until then, whatever it answers, so that no
/// retry makes the effect again before it could know whether this one
/// landed; a retry meanwhile answers 409 `idempotency_key_in_flight` with
/// `Retry-After`, and after it looks for the effect (`acted`).
pub fn uncertain_until(until: u64) {
    with(|phase| {
        phase.uncertain_until = Some(phase.uncertain_until.map_or(until, |u| u.max(until)));
    });
}

/// 409 for a request whose claim on its `Idempotency-Key` lapsed while it
/// ran (it was held past the claim's lease, and another attempt took the
/// key): it changes nothing more, and answers what the key's holder
/// answered when there is an answer (`http::idempotency::settle`).
pub fn claim_lost() -> ApiError {
    codes::IDEMPOTENCY_KEY_IN_FLIGHT.with(
        "this request ran past its hold on its Idempotency-Key, and another request with the key holds it now; nothing was changed; retry later to get that request's answer",
    )
}

/// The route answers `render` for a value of type `T` that its write
/// commits. True when the answer will be kept with the write (the request
/// holds a claim).
pub fn answering<T: Any>(render: Render) -> bool {
    with(|phase| {
        phase.render = Some((TypeId::of::<T>(), render));
        phase.claim.is_some()
    })
    .unwrap_or(false)
}

/// Whether the request will keep an answer rendered from a `T` (it holds
/// a claim, and its route renders from a `T`): a caller that must copy a
/// value to render it asks first.
pub fn wants<T: Any>() -> bool {
    with(|phase| {
        phase.claim.is_some()
            && phase
                .render
                .as_ref()
                .is_some_and(|(id, _)| *id == TypeId::of::<T>())
    })
    .unwrap_or(false)
}

/// Called by the store with the value its next transaction commits (the
/// value the write returns): the route's answer for it is rendered, to go
/// into that transaction. A render that fails fails the write.
pub async fn render<T: Any + Clone + Send>(value: &T) -> Result<(), ApiError> {
    let found = with(|phase| match (&phase.claim, &phase.render) {
        (Some(claim), Some((type_id, render))) if *type_id == TypeId::of::<T>() => {
            Some((claim.clone(), render.clone()))
        }
        _ => None,
    })
    .flatten();
    let Some((claim, render)) = found else {
        return Ok(());
    };
    let kept = render(Box::new(value.clone()), claim).await?;
    with(|phase| phase.pending = Some(kept));
    Ok(())
}

/// The answer rendered for the transaction about to go, with the claim it
/// is kept under (taken: it goes with this transaction or not at all).
pub(crate) fn take_pending() -> Option<(Claim, Kept)> {
    with(|phase| {
        let kept = phase.pending.take()?;
        Some((phase.claim.clone()?, kept))
    })
    .flatten()
}

/// The transaction that carried `kept` committed.
pub(crate) fn commit(kept: Kept) {
    with(|phase| {
        phase.committed = Some(kept.plain);
        phase.kept = true;
    });
}

/// The answer a committed transaction of this request kept, if any
/// (taken: the route answers it, byte for byte).
pub fn take_committed() -> Option<Answer> {
    with(|phase| phase.committed.take()).flatten()
}

/// The transaction action that keeps `kept` for `claim`.
pub(crate) fn action(
    table: &str,
    claim: &Claim,
    kept: &Kept,
) -> Result<TransactWriteItem, ApiError> {
    idempotency::answer_action(table, claim, &kept.stored)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A route's render for a `u32` that counts its calls.
    fn counting(calls: &Arc<AtomicUsize>) -> Render {
        let calls = calls.clone();
        Arc::new(move |_, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            let answer = Answer {
                status: 201,
                headers: Vec::new(),
                body: b"{}".to_vec(),
                sealed: false,
            };
            Box::pin(async move {
                Ok(Kept {
                    plain: answer.clone(),
                    stored: answer,
                })
            })
        })
    }

    /// A write of another type than the route's (a record written before
    /// the one the route answers for) goes alone: nothing is rendered for
    /// it, and no copy of it is asked for; the route's own type is.
    #[tokio::test]
    async fn only_a_value_of_the_routes_type_is_rendered() {
        Outcome::default()
            .scope(async {
                with(|phase| phase.claim = Some(Claim::example()));
                let calls = Arc::new(AtomicUsize::new(0));
                assert!(answering::<u32>(counting(&calls)));
                assert!(!wants::<String>());
                render(&"another record".to_owned()).await.unwrap();
                assert_eq!(calls.load(Ordering::SeqCst), 0);
                assert!(take_pending().is_none());
                assert!(wants::<u32>());
                render(&7u32).await.unwrap();
                assert_eq!(calls.load(Ordering::SeqCst), 1);
                assert!(take_pending().is_some());
            })
            .await;
    }

    /// Without a claim (no `Idempotency-Key`) nothing is rendered or
    /// copied, whatever the type.
    #[tokio::test]
    async fn without_a_claim_nothing_is_rendered() {
        Outcome::default()
            .scope(async {
                let calls = Arc::new(AtomicUsize::new(0));
                assert!(!answering::<u32>(counting(&calls)));
                assert!(!wants::<u32>());
                render(&7u32).await.unwrap();
                assert_eq!(calls.load(Ordering::SeqCst), 0);
                assert!(take_pending().is_none());
            })
            .await;
    }
}
