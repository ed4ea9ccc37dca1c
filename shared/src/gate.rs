//! A request's writes wait for its admission. A warm request (`auth::memory`)
//! runs its handler while its key is still being admitted, so that the
//! route's reads go out beside the admission; its writes must not. The
//! layer runs each handler inside a `WriteGate`, open unless the request's
//! admission holds it: then every transaction, S3 upload and SQS message
//! waits at `writes_may_go` until the admission ends, and goes only if it
//! let the request in. The store's call interceptor (`store/engine/calls.rs`)
//! refuses any other DynamoDB write the gate still holds, so a write path
//! that forgot to wait fails instead of writing for a key that may not.
//! Every other side effect waits too: S3 copies and deletes, and calls to
//! the providers (`outbound`). A task spawned inside a request would lose
//! the gate (a task-local): service code spawns with `gate::spawn`, which
//! carries it; `tokio::spawn` is refused in `shared/` and `functions/` by
//! clippy (their `clippy.toml`).

use std::sync::Arc;
use tracing::Instrument;

use tokio::sync::watch;

use crate::error::{ApiError, ApiResult};

tokio::task_local! {
    static GATE: WriteGate;
}

/// Where a request's writes stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Passage {
    /// Writes go (no admission pending, or it let the request in).
    Open,
    /// The admission is still running.
    Held,
    /// The admission refused the request, or named another organization
    /// than its handler runs for: nothing is written.
    Shut,
}

/// One request's gate.
#[derive(Clone, Debug)]
pub struct WriteGate(Arc<watch::Sender<Passage>>);

impl Default for WriteGate {
    fn default() -> Self {
        WriteGate(Arc::new(watch::Sender::new(Passage::Open)))
    }
}

impl WriteGate {
    /// Runs `future` (a handler) behind this gate.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        GATE.scope(self.clone(), future).await
    }

    /// The gate of the request being served, held until the returned
    /// `Opening` decides it (None outside a request).
    pub fn hold() -> Option<Opening> {
        let gate = GATE.try_with(Clone::clone).ok()?;
        gate.0.send_replace(Passage::Held);
        Some(Opening(gate))
    }
}

/// A held gate, opened or shut once by the admission that holds it; shut
/// if dropped undecided (the admission's task ended without an outcome).
#[derive(Debug)]
pub struct Opening(WriteGate);

impl Opening {
    pub fn decide(self, go: bool) {
        let passage = if go { Passage::Open } else { Passage::Shut };
        self.0.0.send_replace(passage);
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.0.send_if_modified(|passage| {
            let held = *passage == Passage::Held;
            if held {
                *passage = Passage::Shut;
            }
            held
        });
    }
}

/// Waits until the request's writes may go: at once outside a request or
/// for a request admitted before its handler. An error when its admission
/// refused it (the layer answers the refusal, and this error is dropped).
pub async fn writes_may_go() -> ApiResult<()> {
    let Ok(mut passage) = GATE.try_with(|gate| gate.0.subscribe()) else {
        return Ok(());
    };
    let decided = passage
        .wait_for(|p| *p != Passage::Held)
        .await
        .map(|p| *p)
        .unwrap_or(Passage::Shut);
    match decided {
        Passage::Open => Ok(()),
        _ => Err(ApiError::internal(
            "a write of a request that its admission did not let in",
        )),
    }
}

/// Spawns `future` as a task of its own that keeps the request's gate
/// (its writes wait for the admission as the handler's do), its clock
/// and its span (the trace's calls under the request's).
/// Outside a request, a plain spawn.
#[allow(clippy::disallowed_methods)] // The one spawn that carries the gate.
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let future = crate::clock::carried(future).instrument(tracing::Span::current());
    match GATE.try_with(Clone::clone) {
        Ok(gate) => tokio::spawn(GATE.scope(gate, future)),
        Err(_) => tokio::spawn(future),
    }
}

/// Whether a write now would go before the request's admission let it in
/// (for the interceptor's check, which cannot wait).
pub(crate) fn writes_held() -> bool {
    GATE.try_with(|gate| *gate.0.borrow() != Passage::Open)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_wait_for_the_admission_and_go_only_when_it_lets_in() {
        // Outside a request: nothing to wait for.
        assert!(writes_may_go().await.is_ok());
        for go in [true, false] {
            let gate = WriteGate::default();
            gate.scope(async {
                assert!(!writes_held());
                let opening = WriteGate::hold().unwrap();
                assert!(writes_held());
                // A task spawned by the handler keeps the gate.
                let waiting = spawn(async { writes_may_go().await.is_ok() });
                tokio::task::yield_now().await;
                assert!(!waiting.is_finished());
                opening.decide(go);
                assert_eq!(waiting.await.unwrap(), go);
                assert_eq!(writes_held(), !go);
            })
            .await;
        }
        // An admission that ends undecided shuts the gate.
        let gate = WriteGate::default();
        gate.scope(async {
            drop(WriteGate::hold());
            assert!(writes_may_go().await.is_err());
        })
        .await;
    }
}
