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

use shared::ApiResult;
use shared::metrics::Report;
use shared::model::delivery::DeliveryRecord;
use shared::queue::QueueMessage;
use shared::store::records::dispatch_shares::{Place, Taken};
use uuid::Uuid;

use crate::Dispatcher;

/// One batch's places: an organization's is taken by the first of its
/// attempts in the batch (the others wait for the answer, and share it)
/// and given back by the last to end, on that attempt's own line (its
/// cost is the attempt's). A refusal holds for the rest of the batch.
pub(crate) struct Batch {
    place: Place,
    orgs: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Held>>>>,
}

/// A batch's hold on one organization's place.
#[derive(Default)]
struct Held {
    /// Attempts of the organization going on in the batch now.
    users: usize,
    /// The place is taken.
    taken: bool,
    /// The share was found full.
    refused: Option<Taken>,
}

impl Batch {
    /// A batch starting now, its places lasting `lease`.
    pub(crate) fn new(lease: std::time::Duration) -> Self {
        let now = shared::clock::now().timestamp_millis();
        let until = now + i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2);
        Batch {
            place: Place::new(Uuid::now_v7(), until),
            orgs: Mutex::default(),
        }
    }

    fn of(&self, org: Uuid) -> Arc<tokio::sync::Mutex<Held>> {
        let mut orgs = self.orgs.lock().unwrap_or_else(|e| e.into_inner());
        orgs.entry(org).or_default().clone()
    }

    /// Whether this batch may make an attempt of organization `org`; when
    /// it may (`Taken::Yes`), the attempt calls `done` when it ends.
    pub(crate) async fn may_go(&self, dispatcher: &Dispatcher, org: Uuid) -> ApiResult<Taken> {
        let held = self.of(org);
        let mut held = held.lock().await;
        if let Some(refused) = held.refused {
            return Ok(refused);
        }
        if !held.taken {
            let limit = dispatcher.policy.org_batches;
            let now = shared::clock::now().timestamp_millis();
            let shares = dispatcher.state.store.dispatch_shares();
            match shares.take(org, &self.place, limit, now).await? {
                Taken::Yes => held.taken = true,
                full => {
                    held.refused = Some(full);
                    return Ok(full);
                }
            }
        }
        held.users += 1;
        Ok(Taken::Yes)
    }

    /// An attempt of organization `org` that `may_go` let go has ended:
    /// the last of the batch's gives the place back (one that cannot be
    /// lapses at its lease's end).
    pub(crate) async fn done(&self, dispatcher: &Dispatcher, org: Uuid) {
        let held = self.of(org);
        let mut held = held.lock().await;
        held.users = held.users.saturating_sub(1);
        if held.users > 0 || !held.taken {
            return;
        }
        let shares = dispatcher.state.store.dispatch_shares();
        match shares.give_back(org, &self.place).await {
            Ok(()) => held.taken = false,
            Err(error) => {
                tracing::warn!(%org, %error, "a batch's place not given back; it lapses at its lease's end");
            }
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
    ) -> ApiResult<()> {
        let store = &self.state.store;
        store
            .deliveries()
            .release(delivery.id, until, scheduled)
            .await?;
        let wait = self.policy.put_off
            + shared::model::receiver::spread_of(delivery.id, self.policy.put_off);
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
