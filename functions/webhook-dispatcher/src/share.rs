//! An organization's share of the dispatcher. The queue's trigger runs a
//! few batches at once, and a batch lasts as long as its slowest request:
//! a receiver that hangs holds a whole batch for the request's timeout.
//! So a batch takes a place in the organization's share before its first
//! request for it (`store::records::dispatch_shares`), and at most
//! `Policy::org_batches` batches hold one organization's requests at once;
//! the others stay free for everyone else. An attempt whose organization's
//! share is full is put off: no request, no count, its delivery's claim
//! given back and its message sent again for a few seconds later.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::ApiResult;
use shared::metrics::Report;
use shared::model::delivery::DeliveryRecord;
use shared::queue::QueueMessage;
use shared::store::records::dispatch_shares::{Place, Taken};
use uuid::Uuid;

use crate::Dispatcher;

/// A place taken less than this long ago (ms) is a busy organization's,
/// whose requests end quickly ...
const RECENT_MS: i64 = 2_000;
/// ... so an attempt put off then waits this long (SQS delays by whole
/// seconds).
const BRIEF: Duration = Duration::from_secs(1);

/// One batch's places: an organization's is taken by the first of its
/// attempts in the batch that makes a request (the others wait for the
/// answer, and share it) and given back by the last to end, on that
/// attempt's own line (its cost is the attempt's). A refusal holds for
/// the rest of the batch.
pub(crate) struct Batch {
    id: Uuid,
    /// How long a place lasts from its taking.
    lease: i64,
    orgs: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Held>>>>,
    /// The deliveries whose attempts hold their organization's place.
    holders: Mutex<HashMap<Uuid, Uuid>>,
}

/// A batch's hold on one organization's place.
#[derive(Default)]
struct Held {
    /// Attempts of the organization going on in the batch now.
    users: usize,
    /// The place taken, while it is.
    place: Option<Place>,
    /// The share was found full.
    refused: Option<Taken>,
}

impl Batch {
    /// A batch, its places lasting `lease` from their taking.
    pub(crate) fn new(lease: std::time::Duration) -> Self {
        Batch {
            id: Uuid::now_v7(),
            lease: i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4),
            orgs: Mutex::default(),
            holders: Mutex::default(),
        }
    }

    fn of(&self, org: Uuid) -> Arc<tokio::sync::Mutex<Held>> {
        let mut orgs = self.orgs.lock().unwrap_or_else(|e| e.into_inner());
        orgs.entry(org).or_default().clone()
    }

    /// Whether this batch may make delivery `delivery`'s attempt, of
    /// organization `org`; when it may (`Taken::Yes`), `done` gives the
    /// place back when the attempt ends.
    pub(crate) async fn may_go(
        &self,
        dispatcher: &Dispatcher,
        org: Uuid,
        delivery: Uuid,
    ) -> ApiResult<Taken> {
        let held = self.of(org);
        let mut held = held.lock().await;
        if let Some(refused) = held.refused {
            return Ok(refused);
        }
        if held.place.is_none() {
            let limit = dispatcher.policy.org_batches;
            let now = shared::clock::now().timestamp_millis();
            let place = Place::new(self.id, now + self.lease);
            let shares = dispatcher.state.store.dispatch_shares();
            match shares.take(org, &place, limit, now).await? {
                Taken::Yes => held.place = Some(place),
                full => {
                    held.refused = Some(full);
                    return Ok(full);
                }
            }
        }
        held.users += 1;
        let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        holders.insert(delivery, org);
        Ok(Taken::Yes)
    }

    /// Delivery `delivery`'s attempt has ended: if `may_go` let it go, and
    /// it is the last of its organization's in the batch, the place is
    /// given back (one that cannot be lapses at its lease's end).
    pub(crate) async fn done(&self, dispatcher: &Dispatcher, delivery: Uuid) {
        let org = {
            let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
            holders.remove(&delivery)
        };
        let Some(org) = org else {
            return;
        };
        let held = self.of(org);
        let mut held = held.lock().await;
        held.users = held.users.saturating_sub(1);
        if held.users > 0 {
            return;
        }
        let Some(place) = held.place.take() else {
            return;
        };
        let shares = dispatcher.state.store.dispatch_shares();
        if let Err(error) = shares.give_back(org, &place).await {
            tracing::warn!(%org, %error, "a batch's place not given back; it lapses at its lease's end");
        }
    }

    /// How organization `org`'s share was found full in this batch, if
    /// it was.
    pub(crate) async fn refusal(&self, org: Uuid) -> Option<Taken> {
        self.of(org).lock().await.refused
    }

    /// How long an attempt put off after `refusal` waits: briefly (`BRIEF`)
    /// when the organization's last place was taken moments ago (a busy
    /// organization whose requests end quickly), else the policy's wait
    /// and the delivery's share of as much again (a slow one's: its
    /// requests hold their batches for seconds).
    pub(crate) fn put_off_wait(
        &self,
        refusal: Option<Taken>,
        policy: &crate::policy::Policy,
        delivery: Uuid,
    ) -> Duration {
        let now = shared::clock::now().timestamp_millis();
        let brief = match refusal {
            Some(Taken::Full { last_lapses }) => now - (last_lapses - self.lease) < RECENT_MS,
            _ => false,
        };
        match brief {
            true => BRIEF,
            false => policy.put_off + shared::model::receiver::spread_of(delivery, policy.put_off),
        }
    }
}

impl Dispatcher {
    /// Puts off the attempt of `delivery` (claimed until `until`, by a
    /// scheduled message when `scheduled`, else for retry `request`): its
    /// claim given back, its message sent again for later. Nothing is
    /// counted against the delivery.
    pub(crate) async fn put_off(
        &self,
        delivery: &DeliveryRecord,
        until: i64,
        scheduled: bool,
        request: Option<Uuid>,
        places: &Batch,
    ) -> ApiResult<()> {
        let store = &self.state.store;
        store
            .deliveries()
            .release(delivery.id, until, scheduled)
            .await?;
        let refusal = places.refusal(delivery.org_id).await;
        let wait = places.put_off_wait(refusal, &self.policy, delivery.id);
        let message = QueueMessage::Deliver {
            delivery_id: delivery.id,
            manual: !scheduled,
            request,
        };
        self.state
            .queue
            .send_after(delivery.org_id, &message, wait)
            .await?;
        shared::metrics::delivery::PutOff {
            delivery_id: delivery.id,
            org_id: delivery.org_id,
            manual: !scheduled,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        }
        .log(&self.state.config.metrics);
        tracing::info!(delivery_id = %delivery.id, org_id = %delivery.org_id, "organization's share of the dispatcher full: attempt put off");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn a_busy_organizations_attempt_waits_briefly_a_slow_ones_the_policys_wait() {
        let policy = Policy::default();
        let batch = Batch::new(policy.batch_lease);
        let delivery = Uuid::now_v7();
        let now = shared::clock::now().timestamp_millis();
        let taken = |ago: i64| {
            Some(Taken::Full {
                last_lapses: now - ago + batch.lease,
            })
        };
        // The last place was taken half a second ago: its request is
        // likely to end soon.
        assert_eq!(batch.put_off_wait(taken(500), &policy, delivery), BRIEF);
        // Every place was taken seconds ago: the requests hang.
        let wait = batch.put_off_wait(taken(10_000), &policy, delivery);
        assert!(
            wait >= policy.put_off && wait <= policy.put_off * 2,
            "{wait:?}"
        );
        assert_eq!(
            batch.put_off_wait(None, &policy, delivery),
            wait,
            "no refusal known: the policy's"
        );
    }
}
