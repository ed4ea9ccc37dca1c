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

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::TransactWriteItem;
use futures::future::BoxFuture;

use super::idempotency::{Answer, Claim};
use crate::error::ApiResult;

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
pub type Render =
    Arc<dyn Fn(Box<dyn Any + Send>, Claim) -> BoxFuture<'static, ApiResult<Kept>> + Send + Sync>;

/// One request's outcome.
#[derive(Clone, Debug, Default)]
pub struct Outcome(Arc<Mutex<Phase>>);

#[derive(Default)]
struct Phase {
    claim: Option<Claim>,
    render: Option<(TypeId, Render)>,
    /// Rendered for the transaction about to go.
    pending: Option<Kept>,
    /// Kept by a committed transaction: the answer as sent.
    committed: Option<Answer>,
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
}

fn with<T>(f: impl FnOnce(&mut Phase) -> T) -> Option<T> {
    OUTCOME
        .try_with(|outcome| {
            let mut phase = outcome.0.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut phase)
        })
        .ok()
}

/// The request holds `claim` (its `Idempotency-Key`).
pub fn claimed(claim: Claim) {
    with(|phase| phase.claim = Some(claim));
}

/// An id this request and every retry of it with the same
/// `Idempotency-Key` share (None without one): for what a request makes
/// outside the table (a file's name), so that a retry after a failure
/// overwrites what the failed attempt left.
pub fn idempotent_id() -> Option<uuid::Uuid> {
    let item = with(|phase| phase.claim.as_ref().map(Claim::item)).flatten()?;
    let hash = <sha2::Sha256 as sha2::Digest>::digest(item.as_bytes());
    let bytes: [u8; 16] = hash[..16].try_into().ok()?;
    Some(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// Whether an earlier attempt of this request (with its
/// `Idempotency-Key`) held the key and never answered: its effects outside
/// the table (a call to a provider) may have happened, and are looked for
/// before they are made again.
pub fn retried() -> bool {
    with(|phase| phase.claim.as_ref().is_some_and(|c| c.retried)).unwrap_or(false)
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
pub async fn render<T: Any + Clone + Send>(value: &T) -> ApiResult<()> {
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
    with(|phase| phase.committed = Some(kept.plain));
}

/// The answer a committed transaction of this request kept, if any
/// (taken: the route answers it, byte for byte).
pub fn take_committed() -> Option<Answer> {
    with(|phase| phase.committed.take()).flatten()
}

/// The transaction action that keeps `kept` for `claim`.
pub(crate) fn action(table: &str, claim: &Claim, kept: &Kept) -> ApiResult<TransactWriteItem> {
    super::idempotency::answer_action(table, claim, &kept.stored)
}
