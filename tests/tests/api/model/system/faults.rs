//! Faults as steps: a call broken at the wire, and a request frozen past
//! its claim's lease (thawed after a retry took its key over, or before
//! any retry). Each ends as a client ends it: retrying with its key until
//! it has an answer, which is then checked as any step's.

use shared::model::surplus::SurplusRecord;
use tokio::task::JoinHandle;

use super::*;

impl System {
    /// `step` with its `at`-th call broken by `fault` (the form of a
    /// direct upload goes whole), then retried with its key as a client
    /// does: after a 5xx, and after a 409 `idempotency_key_in_flight` once
    /// the dead attempt's lease ran out. The first answer, if it was a
    /// success, is the one replayed.
    pub(super) async fn faulted(
        &mut self,
        model: &Model,
        step: &Step,
        fault: Fault,
        at: usize,
        expect: Expect,
    ) {
        let marks = self.mark();
        let Some(request) = self.prepared(model, step, expect, marks).await else {
            return;
        };
        let (cut, cuts, router) = match fault {
            Fault::Fail => (Cut::Fail, &self.cuts, &self.faulty),
            Fault::Cut => (Cut::Cut, &self.cuts, &self.faulty),
            Fault::Die => (Cut::Die, &self.cuts, &self.faulty),
            Fault::CutResent | Fault::CutEvery => (Cut::Cut, &self.resent, &self.resending),
        };
        match fault {
            // Every attempt the SDK makes of the call (more than it makes).
            Fault::CutEvery => cuts.arm_resent(cut, at, 10),
            _ => cuts.arm(cut, at),
        }
        let first = tokio::select! {
            reply = Self::send_to(&request, router) => Some(reply),
            () = cuts.died() => None,
        };
        cuts.disarm();
        let context = format!("{step}, call {at} {fault:?} ({:?})", cuts.broken());
        // The key is new: no other attempt can hold it.
        if let Some(first) = &first {
            assert!(
                first.code() != "idempotency_key_in_flight",
                "{context}: the first attempt found its key in flight: {}",
                first.text
            );
        }
        let by = step.by().expect("a request");
        let name = request.idempotency_key.clone().expect("a keyed request");
        let mut retry = self.send(&request, false).await;
        if let Some(first) = &first {
            held_no_longer_than_said(first, &retry, &context);
        }
        for _ in 0..5 {
            if retry.code() == "idempotency_key_in_flight" {
                let key_id = self.orgs[by.org].keys[by.key].1;
                api_tests::lapse(&self.state.config.store.table, key_id, &name).await;
            } else if !retry.status.is_server_error() {
                break;
            }
            retry = self.send(&request, false).await;
        }
        if let Some(first) = first.filter(|f| f.status.is_success()) {
            replays(&retry, &first, &context);
        }
        self.conclude(model, step, &request, &retry, expect, marks);
    }

    /// `step` paused at its `at`-th call (a frozen container) while the
    /// clock passes its lease and a retry with its key runs whole; then
    /// thawed: it answers the retry's kept answer or 409, never its own,
    /// and calls no provider.
    pub(super) async fn paused(&mut self, model: &Model, step: &Step, at: usize, expect: Expect) {
        let marks = self.mark();
        let Some(request) = self.prepared(model, step, expect, marks).await else {
            self.clock.advance(Wait::Lease.duration());
            return;
        };
        let (frozen, whole) = self.freeze(&request, at).await;
        self.clock.advance(Wait::Lease.duration());
        let Some(frozen) = frozen else {
            // Fewer calls than `at`: it ran whole.
            let whole = whole.expect("an answer");
            return self.conclude(model, step, &request, &whole, expect, marks);
        };
        let context = format!("{step}, paused at {:?}", self.cuts.broken());
        let retry = self.send(&request, false).await;
        let called = (self.geocoder.count(), self.tracker.count());
        self.cuts.go();
        let thawed = frozen.await.expect("the thawed request");
        self.cuts.disarm();
        let now = (self.geocoder.count(), self.tracker.count());
        assert_eq!(
            now, called,
            "{context}: the thawed attempt called a provider"
        );
        if thawed.code() == "idempotency_key_in_flight" {
        } else if retry.status.is_server_error() || retry.status == 429 {
            // Nothing was kept: the thawed attempt may run as the request.
            assert!(
                !thawed.status.is_success(),
                "{context}: thawed ran after {}: {}",
                retry.status,
                thawed.text
            );
        } else {
            assert_eq!(
                (thawed.status, &thawed.text),
                (retry.status, &retry.text),
                "{context}: the thawed attempt answered its own"
            );
        }
        self.conclude(model, step, &request, &retry, expect, marks);
    }

    /// `step` paused at its `at`-th call while the clock passes its lease,
    /// then thawed before any retry: it answers, as the request, or 409
    /// `idempotency_key_in_flight` (it lost its hold), and then the
    /// client's retry gets that answer replayed or, after a 409, runs:
    /// a 409 is never the request's answer.
    pub(super) async fn thawed_first(
        &mut self,
        model: &Model,
        step: &Step,
        at: usize,
        expect: Expect,
    ) {
        let marks = self.mark();
        let Some(request) = self.prepared(model, step, expect, marks).await else {
            self.clock.advance(Wait::Lease.duration());
            return;
        };
        let (frozen, whole) = self.freeze(&request, at).await;
        self.clock.advance(Wait::Lease.duration());
        let thawed = match (frozen, whole) {
            (Some(frozen), _) => {
                self.cuts.go();
                frozen.await.expect("the thawed request")
            }
            (None, whole) => whole.expect("an answer"),
        };
        self.cuts.disarm();
        let context = format!("{step}, paused at call {at}, thawed first");
        let retry = self.retried(&request).await;
        // Refused by the admission, a request holds no claim: nothing kept.
        let kept = !thawed.status.is_server_error() && thawed.status != 429 && !expect.quiet;
        if thawed.code() == "idempotency_key_in_flight" || !kept {
            assert_ne!(
                retry.header("idempotent-replayed"),
                "true",
                "{context}: the retry replayed an answer not kept ({} {})",
                thawed.status,
                thawed.text
            );
        } else {
            replays(&retry, &thawed, &context);
        }
        self.conclude(model, step, &request, &retry, expect, marks);
    }

    /// `step` paused at its `at`-th call while its lease passes, thawed,
    /// then frozen right after its next call took effect (a renewal of its
    /// hold, say) while a lease passes again, and thawed: whatever it
    /// answers, the client's retry runs or replays an answer kept as the
    /// request's, never a 409.
    pub(super) async fn paused_twice(
        &mut self,
        model: &Model,
        step: &Step,
        at: usize,
        expect: Expect,
    ) {
        let marks = self.mark();
        let lease = Wait::Lease.duration();
        let Some(request) = self.prepared(model, step, expect, marks).await else {
            self.clock.advance(lease * 2);
            return;
        };
        let (frozen, whole) = self.freeze(&request, at).await;
        self.clock.advance(lease);
        let thawed = match (frozen, whole) {
            (Some(mut frozen), _) => {
                self.cuts.arm(Cut::Freeze, 1);
                self.cuts.go();
                let whole = tokio::select! {
                    () = self.cuts.stalled() => None,
                    whole = &mut frozen => Some(whole.expect("the request")),
                };
                self.clock.advance(lease);
                match whole {
                    Some(whole) => whole,
                    None => {
                        self.cuts.go();
                        frozen.await.expect("the thawed request")
                    }
                }
            }
            (None, whole) => {
                self.clock.advance(lease);
                whole.expect("an answer")
            }
        };
        self.cuts.disarm();
        let context = format!("{step}, paused at call {at} and after the next");
        let retry = self.retried(&request).await;
        assert_ne!(
            retry.code(),
            "idempotency_key_in_flight",
            "{context}: the retry found the key in flight after the attempt answered {} {}",
            thawed.status,
            thawed.text
        );
        let kept = !thawed.status.is_server_error() && thawed.status != 429 && !expect.quiet;
        if kept && thawed.code() != "idempotency_key_in_flight" {
            replays(&retry, &thawed, &context);
        }
        self.conclude(model, step, &request, &retry, expect, marks);
    }

    /// `Step::CopyPaused`: the upload paused right after its commit (the
    /// load names its file now), another upload replaces the waybill,
    /// then the first thaws and answers its own committed answer, and no
    /// object is at the name the load no longer holds. An upload refused
    /// before any commit runs whole, then the other.
    pub(super) async fn copy_paused(
        &mut self,
        model: &Model,
        step: &Step,
        tag: u32,
        expect: Expect,
    ) {
        let Step::Upload { by, load, .. } = *step else {
            unreachable!("a paused copy is an upload's")
        };
        let replacing = Step::replacing(step, tag);
        let marks = self.mark();
        let request = self.prepare(model, step).await.expect("an upload");
        self.cuts.arm_after(Cut::Stall, "TransactWriteItems");
        let mut paused = tokio::spawn({
            let (request, router) = (request.clone(), self.faulty.clone());
            async move { Self::send_to(&request, &router).await }
        });
        let whole = tokio::select! {
            () = self.cuts.stalled() => None,
            whole = &mut paused => Some(whole.expect("the upload")),
        };
        let (org, load_id) = (self.orgs[by.org].id, self.orgs[by.org].loads[load]);
        let store = self.state.store.clone();
        let named = || async {
            let record = store.records::<SurplusRecord>().get(org, load_id).await;
            record
                .expect("the load read")
                .and_then(|l| l.waybill)
                .map(|w| w.storage_path)
        };
        let left = match whole {
            Some(_) => None,
            None => named().await,
        };
        let second = model.before[0];
        let replaced = self.prepare(model, &replacing).await.expect("an upload");
        let second_marks = self.mark();
        let reply = self.send(&replaced, false).await;
        self.check(&replacing, &reply, second, None, second_marks);
        let first = match whole {
            Some(whole) => whole,
            None => {
                self.cuts.go();
                paused.await.expect("the thawed upload")
            }
        };
        self.cuts.disarm();
        let now = named().await;
        if let Some(left) = left.filter(|left| Some(left) != now.as_ref()) {
            assert!(
                !self.state.files.exists(&left).await.expect("a look"),
                "{step}: the thawed attempt placed {left}, which the load no longer names"
            );
        }
        self.conclude(model, step, &request, &first, expect, marks);
    }

    /// `request` sent again as a client does after an attempt's answer:
    /// again after a 5xx, a few times.
    pub(super) async fn retried(&self, request: &Request) -> Reply {
        let mut retry = self.send(request, false).await;
        for _ in 0..3 {
            if !retry.status.is_server_error() {
                break;
            }
            retry = self.send(request, false).await;
        }
        retry
    }

    /// The step's request, or None when it was answered before it (a
    /// direct upload's form refused), that answer checked.
    pub(super) async fn prepared(
        &mut self,
        model: &Model,
        step: &Step,
        expect: Expect,
        marks: (usize, usize),
    ) -> Option<Request> {
        match self.prepare(model, step).await {
            Ok(request) => Some(request),
            Err(answered) => {
                self.check(step, &answered, expect, None, marks);
                None
            }
        }
    }

    /// Sends `request` through the faulty instance, frozen before its
    /// `at`-th call: the frozen request, or its answer when it made fewer
    /// calls.
    async fn freeze(
        &self,
        request: &Request,
        at: usize,
    ) -> (Option<JoinHandle<Reply>>, Option<Reply>) {
        self.cuts.arm(Cut::Stall, at);
        let mut frozen = tokio::spawn({
            let (request, router) = (request.clone(), self.faulty.clone());
            async move { Self::send_to(&request, &router).await }
        });
        tokio::select! {
            () = self.cuts.stalled() => (Some(frozen), None),
            whole = &mut frozen => {
                self.cuts.disarm();
                (None, Some(whole.expect("the request")))
            }
        }
    }

    /// The client's last answer, checked as a step's (replayed or not, as
    /// it happened: an attempt may have committed before it broke), and
    /// what it made recorded.
    pub(super) fn conclude(
        &mut self,
        model: &Model,
        step: &Step,
        request: &Request,
        answer: &Reply,
        expect: Expect,
        marks: (usize, usize),
    ) {
        let replayed = answer.header("idempotent-replayed") == "true" && !expect.quiet;
        self.geocodes_lost(step, expect, marks.0);
        self.check(step, answer, Expect { replayed, ..expect }, None, marks);
        let ran = Expect {
            replayed: false,
            ..expect
        };
        self.record(request, answer, ran);
        self.settle(model, step, answer);
    }

    /// The geocoder's calls beyond the request's one: at most the broken
    /// attempt's, when it broke after the provider answered.
    fn geocodes_lost(&mut self, step: &Step, expect: Expect, before: usize) {
        let asked = usize::from(matches!(step, Step::Geocode { .. }) && expect.status == 200);
        let extra = self.geocoder.count() - before - asked;
        assert!(
            extra <= 1,
            "{step}: {extra} calls to the geocoder beyond the request's"
        );
        self.lost_geocodes += extra;
    }
}

/// An attempt that answered gave its key back, unless its answer said
/// to wait (`Retry-After`: an effect of its may still land): a retry
/// right after it is never 409 `idempotency_key_in_flight`, or only for
/// as long as the attempt said.
pub(super) fn held_no_longer_than_said(first: &Reply, retry: &Reply, context: &str) {
    if retry.code() != "idempotency_key_in_flight" {
        return;
    }
    let seconds = |reply: &Reply| reply.header("retry-after").parse::<u64>().ok();
    let said = seconds(first);
    assert!(
        said.is_some_and(|said| seconds(retry).is_some_and(|wait| wait <= said)),
        "{context}: the key is held after its attempt answered {} (Retry-After {said:?}): {} {}, Retry-After {:?}",
        first.status,
        retry.status,
        retry.text,
        seconds(retry)
    );
}

/// `retry` is `first`, replayed byte for byte.
fn replays(retry: &Reply, first: &Reply, context: &str) {
    assert_eq!(
        retry.header("idempotent-replayed"),
        "true",
        "{context}: first {} {}, retried {} {}",
        first.status,
        first.text,
        retry.status,
        retry.text
    );
    assert_eq!(
        (retry.status, &retry.text),
        (first.status, &first.text),
        "{context}"
    );
}
