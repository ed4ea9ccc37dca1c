//! An attempt's turn at its receiver (`model::receiver`): a healthy
//! receiver's attempts go when due; a slowed or parked one's only in its
//! turn, the others held without a request (recorded as failed attempts
//! on the retry schedule, each coming back no sooner than the receiver's
//! next turn; a recovery sends them again). After the answer (or none),
//! the receiver's health is kept.

use shared::ApiResult;
use shared::metrics::delivery::ReceiverChange;
use shared::model::delivery::{AttemptError, DeliveryRecord, Held};
use std::time::Duration;

use shared::model::receiver::{self, Gate, Health, State};
use shared::model::webhook::{self, WebhookRecord};
use uuid::Uuid;

use crate::Dispatcher;
use crate::client::Outcome;
use crate::share::Batch;
use shared::store::records::dispatch_shares::Taken;

/// An attempt's turn: whether it makes its request, and its receiver's
/// health as read before it.
pub(crate) struct Turn {
    receiver: Uuid,
    before: Health,
    pinged: bool,
    /// Why it makes no request; None when it does.
    pub(crate) held: Option<Held>,
    /// When held: the Unix ms the receiver's next turn starts.
    free_at: Option<i64>,
}

impl Turn {
    /// How long `delivery` waits before its next attempt, `scheduled` by
    /// the retry schedule: for a held attempt no less than until the
    /// receiver's next turn and the delivery's share of a gap after it
    /// (`model::receiver::retry_wait`).
    pub(crate) fn wait(
        &self,
        scheduled: Duration,
        now: i64,
        delivery: Uuid,
        limits: &receiver::Limits,
    ) -> Duration {
        match self.free_at {
            Some(free_at) if self.held.is_some() => {
                let spread = receiver::spread_of(delivery, limits.slow_gap);
                receiver::retry_wait(scheduled, free_at, now, spread)
            }
            _ => scheduled,
        }
    }
}

/// The outcome of an attempt held: no request, no answer.
pub(crate) fn no_request() -> Outcome {
    Outcome {
        status: None,
        error: Some(AttemptError::Internal),
        duration: std::time::Duration::ZERO,
    }
}

impl Dispatcher {
    /// The turn of an attempt of `delivery` at `hook`'s receiver: a ping
    /// goes whatever the receiver's health (its owner's probe); any other
    /// attempt goes when the receiver is healthy, or slowed or parked and
    /// its turn is taken here; else it is held. An attempt that would make
    /// a request first takes its batch's place in its organization's share
    /// (`share`): None when the share is full (the attempt is put off, its
    /// receiver's turn not taken); a held one needs no place.
    pub(crate) async fn turn(
        &self,
        delivery: &DeliveryRecord,
        hook: &WebhookRecord,
        places: &Batch,
    ) -> ApiResult<Option<Turn>> {
        let (org, pinged) = (delivery.org_id, delivery.event == webhook::WEBHOOK_PING);
        let receiver = webhook::receiver(org, &hook.url);
        let mut turn = Turn {
            receiver,
            before: Health::default(),
            pinged,
            held: None,
            free_at: None,
        };
        let may_go =
            || async { ApiResult::Ok(places.may_go(self, org, delivery.id).await? == Taken::Yes) };
        if pinged {
            return Ok(may_go().await?.then_some(turn));
        }
        let receivers = self.state.store.receivers();
        turn.before = receivers.get(org, receiver).await?;
        let now = shared::clock::now().timestamp_millis();
        let limits = &self.policy.receivers;
        let held = match turn.before.state(now, limits) {
            State::Parked => Held::ReceiverParked,
            _ => Held::ReceiverSlowed,
        };
        let gate = turn.before.gate(now, limits);
        if !matches!(gate, Gate::Wait(_)) && !may_go().await? {
            return Ok(None);
        }
        // A turn taken by another attempt first ends about when this one's
        // would have.
        (turn.held, turn.free_at) = match gate {
            Gate::Open => (None, None),
            Gate::Turn(until) if receivers.take_turn(org, receiver, now, until).await? => {
                (None, None)
            }
            Gate::Turn(until) | Gate::Wait(until) => (Some(held), Some(until)),
        };
        Ok(Some(turn))
    }

    /// Keeps the receiver's health after an attempt's answer (or none): a
    /// 2xx ends its streak of failures, a failure other than a ping's adds
    /// to it, a held attempt changes nothing. After the attempt is
    /// recorded: a health that cannot be written is logged, and the
    /// attempt stands.
    pub(crate) async fn answered(
        &self,
        delivery: &DeliveryRecord,
        turn: &Turn,
        outcome: &Outcome,
    ) -> ReceiverChange {
        if turn.held.is_some() {
            return ReceiverChange::default();
        }
        let receivers = self.state.store.receivers();
        let (org, receiver) = (delivery.org_id, turn.receiver);
        let now = shared::clock::now().timestamp_millis();
        let kept = async {
            let mut change = ReceiverChange::default();
            if outcome.succeeded() {
                if turn.pinged || turn.before.failures > 0 {
                    receivers.succeeded(org, receiver).await?;
                }
            } else if !turn.pinged {
                let after = receivers.failed(org, receiver, now).await?;
                let limits = &self.policy.receivers;
                change.slowed = after.failures == limits.slow_after;
                change.parked = after.state(now, limits) == State::Parked
                    && after.parked_at.is_none()
                    && receivers.parked(org, receiver, now).await?;
            }
            ApiResult::Ok(change)
        };
        kept.await.unwrap_or_else(|error| {
            tracing::error!(delivery_id = %delivery.id, %error, "receiver health not kept; the attempt stands");
            ReceiverChange::default()
        })
    }
}
