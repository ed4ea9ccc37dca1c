//! The outside world answering after the service stopped waiting: the
//! tracker opening an issue late, the geocoder answering late, a
//! receiver acting on a delivery and answering after the dispatcher's
//! timeout.

use super::faults::held_no_longer_than_said;
use super::tracker::SLOW;
use super::*;
use crate::model::steps::Misreport;

impl System {
    /// `Step::Late`: a keyed ticket whose issue the tracker opens after
    /// the service stopped waiting (or after answering 502, as `tracker`
    /// says). The attempt answers 504 `support_tracker_timeout` (or 502
    /// `support_tracker_error`) with `Retry-After`, and holds its key
    /// until the call can no longer land: a retry meanwhile answers 409
    /// `idempotency_key_in_flight` with a `Retry-After` no longer; once
    /// the issue has landed and that time passed, the retry finds the
    /// issue: one issue, one slot. An issue that lands only after the
    /// retry opened its own and answered it is closed by the dispatcher's
    /// sweep as that one's duplicate: one open issue. A ticket the quota
    /// refuses calls no tracker and answers as any. A keyed geocoding the
    /// provider answers late: 504 `geocode_timeout`, nothing held (a
    /// lookup changes nothing), and the retry at once asks again.
    pub(super) async fn late(
        &mut self,
        model: &Model,
        step: &Step,
        tracker: Misreport,
        expect: Expect,
    ) {
        let geocoding = matches!(step, Step::Geocode { .. });
        let slow = match (geocoding, tracker.fails()) {
            (true, _) => self.temper.slow_geocoder.clone(),
            (false, true) => self.temper.failing.clone(),
            (false, false) => self.temper.slow.clone(),
        };
        let marks = self.mark();
        let request = self.prepare(model, step).await.expect("a request");
        slow.store(true, Ordering::SeqCst);
        let first = self.send(&request, false).await;
        slow.store(false, Ordering::SeqCst);
        // Refused before the provider (the quota): answered as any.
        let last = if !(200..300).contains(&expect.status) {
            first
        } else if geocoding {
            self.asked_again(step, &request, &first).await
        } else {
            self.held_until_landed(step, tracker, &request, &first)
                .await
        };
        self.conclude(model, step, &request, &last, expect, marks);
    }

    /// `Step::LateReceivers`' dispatches: the dispatcher's run while
    /// every receiver acts on each delivery's attempt and answers after
    /// the dispatcher stopped waiting; then its run once the attempts it
    /// scheduled again are due (a second). The receivers answer those at
    /// once.
    pub(super) async fn late_receivers(&self) {
        self.receiver.answer_late(Some(SLOW));
        self.dispatch().await;
        self.receiver.answer_late(None);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        self.dispatch().await;
    }

    /// A ticket's retries after its late issue: held until the call can
    /// no longer land, then the issue found (or, landing past the answer,
    /// the retry's own issue answered and the late one swept). The last
    /// answer.
    async fn held_until_landed(
        &self,
        step: &Step,
        tracker: Misreport,
        request: &Request,
        first: &Reply,
    ) -> Reply {
        let context = format!("{step}: first {} {}", first.status, first.text);
        let uncertain = match tracker.fails() {
            true => (502, "support_tracker_error"),
            false => (504, "support_tracker_timeout"),
        };
        assert_eq!(
            (first.status.as_u16(), first.code()),
            uncertain,
            "{context}"
        );
        let said: u64 = first
            .header("retry-after")
            .parse()
            .unwrap_or_else(|_| panic!("{context}: no Retry-After"));
        let retry = self.send(request, false).await;
        assert_eq!(
            retry.code(),
            "idempotency_key_in_flight",
            "{context}; a retry while the call may land answered {} {}",
            retry.status,
            retry.text
        );
        let wait: u64 = retry.header("retry-after").parse().expect("Retry-After");
        assert!(wait <= said, "{context}; then Retry-After {wait}");
        // The issue lands (after the service gave up on it); the hold
        // ends.
        if !tracker.past_the_answer() {
            self.temper.land_late();
        }
        self.clock.advance(Duration::from_secs(said));
        let last = self.send(request, false).await;
        if tracker.past_the_answer() {
            // It lands after the answer; the dispatcher's schedule closes
            // it as a duplicate of the issue the answer named.
            self.temper.land_late();
            self.clock.scope(self.dispatcher.tickets()).await;
        }
        last
    }

    /// A geocoding's retry after its late answer: nothing held, asked
    /// again at once. The retry's answer.
    async fn asked_again(&self, step: &Step, request: &Request, first: &Reply) -> Reply {
        let context = format!("{step}: first {} {}", first.status, first.text);
        assert_eq!(
            (
                first.status.as_u16(),
                first.code(),
                first.header("retry-after")
            ),
            (504, "geocode_timeout", ""),
            "{context}"
        );
        let retry = self.send(request, false).await;
        held_no_longer_than_said(first, &retry, &context);
        retry
    }
}
