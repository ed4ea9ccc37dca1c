//! Sequences the model test found or was shown to find, kept as plain
//! tests: each runs whole on every `make test`, with every answer and
//! invariant checked as in the search. The shortest sequences it found
//! against the deliberate bugs of `tests/model-mutations/` are here too:
//! each passes on the service and fails with its bug in.

use super::replay;
use super::steps::{By, Fault, KeyName, Misreport, Resealing, Step, Wait};

const A: By = By { org: 0, key: 0 };

/// `A`'s site, no key.
fn site(tag: u32) -> Step {
    Step::CreateSite {
        by: A,
        keyed: false,
        tag,
    }
}

/// `A`'s load at its first site, no key.
fn load(tag: u32) -> Step {
    Step::CreateLoad {
        by: A,
        site: 0,
        keyed: false,
        tag,
    }
}

/// A ticket with an `Idempotency-Key`.
fn ticket(by: By, tag: u32) -> Step {
    Step::Ticket {
        by,
        keyed: true,
        tag,
    }
}

/// `step` paused at call `at` past its lease (`Step::Paused`).
fn paused(at: usize, overtaken: bool, step: Step) -> Step {
    Step::Paused {
        at,
        overtaken,
        step: Box::new(step),
    }
}

/// `step` with call `at` broken by `fault` (`Step::Faulted`).
fn faulted(fault: Fault, at: usize, step: Step) -> Step {
    Step::Faulted {
        fault,
        at,
        step: Box::new(step),
    }
}

/// Issue 40's first finding: a waybill upload's `Idempotency-Key` reused
/// after its retention, on a load delivered since, must not touch the
/// committed waybill.
#[test]
fn an_upload_reused_after_its_retention_leaves_the_delivered_waybill() {
    replay(vec![
        site(0),
        load(1),
        Step::Upload {
            by: A,
            load: 0,
            keyed: true,
            tag: 2,
        },
        Step::Deliver { by: A, load: 0 },
        Step::Wait(Wait::Retention),
        Step::Replay { by: A, nth: 0 },
    ]);
}

/// A ticket whose first attempt died after opening its issue, retried: one
/// issue, then the quota holds for the hour.
#[test]
fn a_killed_ticket_opens_one_issue_and_counts_once() {
    let ticket = |tag| ticket(A, tag);
    replay(vec![
        faulted(Fault::Die, 4, ticket(0)),
        ticket(1),
        ticket(2),
        ticket(3),
        ticket(4),
        ticket(5),
        Step::Wait(Wait::Hour),
        Step::Replay { by: A, nth: 5 },
    ]);
}

/// Found by the model test: a webhook's registration frozen past its
/// lease, thawed before any retry.
#[test]
fn a_registration_thawed_after_its_lease_then_retried() {
    replay(vec![Step::Paused {
        at: 3,
        overtaken: false,
        step: Box::new(Step::Register {
            by: A,
            url: 0,
            keyed: true,
            tag: 6,
        }),
    }]);
}

/// `1-effects-unfenced`: a ticket frozen past its lease while a retry
/// opened the issue must not open a second one when it thaws.
#[test]
fn a_ticket_thawed_after_a_retry_opened_its_issue_opens_none() {
    replay(vec![paused(4, true, ticket(A, 13))]);
}

/// `2-own-claim-unrecognised`: a claim whose write took effect but whose
/// answer was lost, sent again by the SDK, is the request's own claim.
#[test]
fn a_claim_resent_by_the_sdk_is_its_own() {
    replay(vec![faulted(Fault::CutResent, 3, ticket(A, 6))]);
}

/// `3-lost-attempt-answers-its-own`: a ticket frozen past its lease while
/// a retry opened the issue answers the retry's answer when it thaws (the
/// key's first request makes it warm: the call numbers are a warm key's).
#[test]
fn a_ticket_thawed_after_a_retry_answers_the_retrys_answer() {
    let by = By { org: 1, key: 1 };
    replay(vec![
        Step::CreateSite {
            by,
            keyed: false,
            tag: 10,
        },
        Step::Wait(Wait::Hour),
        paused(8, true, ticket(by, 24)),
    ]);
}

/// `5-one-name-per-load`: each upload of a load's waybill under a name of
/// its own, also after an upload frozen past its lease.
#[test]
fn every_waybill_upload_names_its_own_object() {
    let upload = |tag| Step::Upload {
        by: A,
        load: 0,
        keyed: true,
        tag,
    };
    replay(vec![
        site(3),
        load(4),
        paused(3, false, upload(16)),
        faulted(Fault::Fail, 1, upload(22)),
    ]);
}

/// Found by the model test: a load delivered before a webhook was
/// registered reaches it when the dispatcher runs after (webhooks are
/// resolved when the delivery is announced).
#[test]
fn a_delivery_reaches_the_webhooks_registered_when_it_is_announced() {
    let register = |url, tag| Step::Register {
        by: A,
        url,
        keyed: false,
        tag,
    };
    replay(vec![
        site(0),
        load(1),
        Step::Upload {
            by: A,
            load: 0,
            keyed: false,
            tag: 2,
        },
        Step::Deliver { by: A, load: 0 },
        register(0, 3),
        Step::Dispatch,
        Step::Retry {
            by: A,
            hook: 0,
            nth: 0,
            keyed: true,
            tag: 4,
        },
        Step::Replay { by: A, nth: 0 },
        Step::Dispatch,
    ]);
}

/// `4-in-flight-kept`: a ticket paused past its lease, then right after its
/// hold was renewed, answers 409 (its hold ran out before its call); the
/// 409 is never kept, so the client's retry opens the ticket.
#[test]
fn a_ticket_that_lost_its_hold_leaves_its_key_free() {
    replay(vec![Step::PausedTwice {
        at: 6,
        step: Box::new(ticket(A, 10)),
    }]);
}

/// Where grants meet isolation: the grantee's key reads the granter's site
/// (archived too) and never changes it; a revoked grant, or a deactivated
/// granter, hides it again.
#[test]
fn a_granted_site_reads_until_the_grant_or_its_granter_goes() {
    let partner = By { org: 1, key: 0 };
    let peek = Step::Peek {
        by: partner,
        of: 0,
        nth: 0,
    };
    replay(vec![
        site(0),
        peek.clone(),
        Step::Grant {
            by: A,
            keyed: true,
            tag: 1,
        },
        peek.clone(),
        Step::ArchiveSite { by: A, site: 0 },
        peek.clone(),
        Step::Ungrant { by: A },
        peek.clone(),
        Step::Grant {
            by: A,
            keyed: false,
            tag: 2,
        },
        peek.clone(),
        Step::Deactivate { org: 0 },
        peek,
    ]);
}

/// Photos an operator adds to a receiving point are in place, each with
/// its own bytes, beside the waybills of the same organization.
#[test]
fn an_operators_photos_are_in_place() {
    replay(vec![
        site(0),
        Step::CreatePoint {
            by: A,
            site: 0,
            keyed: true,
            tag: 1,
        },
        Step::AddPhoto {
            org: 0,
            point: 0,
            tag: 2,
        },
        Step::AddPhoto {
            org: 0,
            point: 0,
            tag: 3,
        },
        Step::Replay { by: A, nth: 0 },
    ]);
}

/// Found by the model test: a quota slot whose write took effect but whose
/// acknowledgement was lost, sent again by the SDK, took a second slot (the
/// resent write found its slot taken and took the next): one ticket cost
/// two of the hour's five. The slot now names its holder, and the resent
/// write recognises its own.
#[test]
fn a_ticket_whose_quota_write_was_resent_takes_one_slot() {
    let by = By { org: 1, key: 0 };
    let ticket = |tag| ticket(by, tag);
    replay(vec![
        paused(3, false, ticket(0)),
        Step::Tickets {
            by,
            count: 2,
            tag: 2,
        },
        faulted(Fault::CutResent, 6, ticket(8)),
        Step::Ticket {
            by,
            keyed: false,
            tag: 15,
        },
    ]);
}

/// `6-lookup-before-quota`: a sixth ticket in the hour is refused without
/// a call to the tracker, a keyed one too.
#[test]
fn a_ticket_past_the_quota_calls_no_tracker() {
    replay(vec![Step::Tickets {
        by: A,
        count: 6,
        tag: 10,
    }]);
}

/// Found by `make model` (seed 199736604282081): a ticket frozen before
/// its quota write, past its lease, while a retry took a slot and opened
/// the issue; thawed, its write took a second slot (`reserve` moved on to
/// the next free one) and, its claim lost, it answered 409 and kept that
/// slot: one request, two of the hour's five. Now the later write gives
/// its slot back and uses the earlier one.
#[test]
fn frozen_tickets_take_one_slot_each() {
    let by = By { org: 1, key: 1 };
    let ticket = |tag| ticket(by, tag);
    replay(vec![
        paused(3, false, ticket(7)),
        paused(5, true, ticket(12)),
        Step::Tickets {
            by,
            count: 3,
            tag: 15,
        },
    ]);
}

/// Issue 40's sixth finding: a ticket whose attempt got as far as the
/// tracker and was refused, retried after a ticket of the same key quoted
/// the lines that name it, opens an issue of its own: the lookup matches
/// the lines the service wrote at the top of an issue, never a customer's
/// text (`tests/model-mutations/7-lookup-trusts-quotes.patch` brings it
/// back).
#[test]
fn a_quote_of_a_requests_lines_is_not_its_issue() {
    replay(vec![Step::Quoted { by: A, tag: 0 }]);
}

/// Found by `make model` (seed 263556877023920): with four of the hour's
/// five tickets taken, a ticket frozen before its quota write, past its
/// lease, while a retry took the last slot and opened the issue; thawed,
/// its write found every slot taken and it answered 429, a fresh answer
/// of its own beside the request's 201. Now the slot its retry took is
/// the request's, and it answers as an attempt whose claim is lost.
#[test]
fn a_frozen_ticket_thawed_on_a_full_quota_answers_the_requests_answer() {
    replay(vec![
        Step::Tickets {
            by: A,
            count: 4,
            tag: 7,
        },
        paused(5, true, ticket(A, 13)),
    ]);
}

/// Found by `make model` (seed 207885172032796): two manual retries of a
/// delivery (the first keyed, its first attempt failed at its first
/// call), then a dispatch: the receiver got one attempt. Both messages
/// came in one batch, handled at once: the second met the first's lease
/// and went back to the queue for 30 s. Now a batch's messages of one
/// delivery go one after the other, and every retry reaches the receiver
/// in the run.
#[test]
fn two_manual_retries_each_reach_the_receiver() {
    replay(two_retries(Some(Fault::Fail)));
}

/// The same without the fault (which was not needed).
#[test]
fn two_manual_retries_each_reach_the_receiver_unfaulted() {
    replay(two_retries(None));
}

fn two_retries(fault: Option<Fault>) -> Vec<Step> {
    let retry = |keyed, tag| Step::Retry {
        by: A,
        hook: 0,
        nth: 0,
        keyed,
        tag,
    };
    let first = match fault {
        Some(fault) => faulted(fault, 1, retry(true, 21)),
        None => retry(true, 21),
    };
    vec![
        Step::CreateSite {
            by: A,
            keyed: true,
            tag: 0,
        },
        load(1),
        Step::Upload {
            by: A,
            load: 0,
            keyed: true,
            tag: 9,
        },
        Step::Register {
            by: A,
            url: 0,
            keyed: true,
            tag: 13,
        },
        Step::Deliver { by: A, load: 0 },
        Step::Dispatch,
        first,
        retry(false, 25),
        Step::Dispatch,
    ]
}

/// Found by `make model` (seed 104476808952034), a mistake of the
/// reference: a direct upload's confirmation sent again after its
/// retention, on a load delivered since with that very upload as its
/// waybill, answers the load again (200, nothing changed), as
/// docs/decisions/surplus-loads.md says, not 409 `waybill_locked`.
#[test]
fn a_confirmation_sent_again_after_its_retention_answers_the_delivered_load() {
    let by = By { org: 1, key: 1 };
    replay(vec![
        Step::CreateSite {
            by,
            keyed: true,
            tag: 2,
        },
        Step::CreateLoad {
            by,
            site: 0,
            keyed: true,
            tag: 4,
        },
        Step::UploadByForm {
            by,
            load: 0,
            tag: 7,
        },
        Step::Deliver { by, load: 0 },
        Step::Wait(Wait::Retention),
        Step::Replay { by, nth: 2 },
    ]);
}

/// Issue 55, found by the model's operator steps: a keyed ticket whose
/// first attempt ran on an instance that read the cursor key just after
/// it was rotated at once (`--now`), retried on one that read it before,
/// was refused as another request (its fingerprint named a generation the
/// second instance had not read).
#[test]
fn a_retry_on_an_instance_that_has_not_read_a_key_rotated_at_once_replays() {
    replay(vec![
        Step::Tickets {
            by: A,
            count: 2,
            tag: 0,
        },
        Step::RotateKey {
            key: KeyName::Cursor,
            overlap: None,
            now: true,
        },
        faulted(Fault::CutResent, 1, ticket(A, 4)),
    ]);
}

/// Issue 55, found by the model's operator steps: `admin reseal` a page
/// of one or two items at a time never ended (each run writes two audit
/// records the walk meets again); a page now reads ten at least.
#[test]
fn a_reseal_resumed_a_page_at_a_time_ends() {
    replay(vec![Step::Reseal(Resealing::Paged)]);
}

/// Issue 55's first finding, as an operator would follow the guide for a
/// leaked cursor key and reach for it for the seal key: an overlap for the
/// seal key is refused; rotated at once, resealed and dropped, every
/// webhook still delivers signed with its own secret and every kept
/// answer replays.
#[test]
fn the_seal_key_rotated_at_once_resealed_and_dropped_loses_nothing() {
    let register = |tag| Step::Register {
        by: A,
        url: 0,
        keyed: true,
        tag,
    };
    replay(vec![
        register(0),
        Step::RotateKey {
            key: KeyName::Seal,
            overlap: Some(0),
            now: false,
        },
        Step::RotateKey {
            key: KeyName::Seal,
            overlap: None,
            now: true,
        },
        Step::Reseal(Resealing::Whole),
        Step::DropKey {
            key: KeyName::Seal,
            version: 1,
        },
        Step::Wait(Wait::Hour),
        Step::Reseal(Resealing::Killed { at: 3 }),
        Step::DropKey {
            key: KeyName::Seal,
            version: 1,
        },
        Step::Replay { by: A, nth: 0 },
        site(1),
        load(2),
        Step::Upload {
            by: A,
            load: 0,
            keyed: false,
            tag: 3,
        },
        Step::Deliver { by: A, load: 0 },
        Step::Dispatch,
    ]);
}

/// Found by the model while it ran against a deliberate bug this sequence
/// never reaches (`12-drop-while-in-use`): an instance that failed closed
/// (its keys unread for eight minutes) waited ten seconds after its last
/// failed reading before it tried again, so the next request it took
/// once the keys could be read was refused too. It now tries at every use
/// while it has nothing to serve.
#[test]
fn a_request_after_an_instance_could_not_read_its_keys_runs() {
    let b = By { org: 1, key: 0 };
    replay(vec![
        faulted(
            Fault::Fail,
            2,
            Step::CreateSite {
                by: b,
                keyed: true,
                tag: 0,
            },
        ),
        Step::Unreadable {
            step: Box::new(ticket(A, 7)),
        },
        paused(
            3,
            true,
            Step::CreateLoad {
                by: By { org: 1, key: 1 },
                site: 0,
                keyed: true,
                tag: 9,
            },
        ),
    ]);
}

/// `12-drop-while-in-use`'s shortest sequence, written by hand: the
/// cursor key's old generation dropped an hour after the rotation (it no
/// longer signs, but a kept answer fingerprinted with it may be asked for
/// a day): the kept answer must still replay.
#[test]
fn a_kept_answer_replays_after_the_cursor_key_generation_that_fingerprinted_it_is_asked_to_go() {
    replay(vec![
        Step::CreateSite {
            by: A,
            keyed: true,
            tag: 0,
        },
        Step::RotateKey {
            key: KeyName::Cursor,
            overlap: Some(0),
            now: false,
        },
        Step::Wait(Wait::Hour),
        Step::DropKey {
            key: KeyName::Cursor,
            version: 1,
        },
        Step::Replay { by: A, nth: 0 },
    ]);
}

/// Issue 56, found by the model once its faults grew: a geocoding whose
/// answer could not be kept (the write that keeps it never left) answered
/// 500 and held its key for the claim's whole lease; the key is given
/// back, and the retry runs at once.
#[test]
fn an_answer_that_could_not_be_kept_gives_its_key_back() {
    replay(vec![
        Step::Wait(Wait::Moment),
        faulted(
            Fault::Fail,
            6,
            Step::Geocode {
                by: A,
                keyed: true,
                tag: 14,
            },
        ),
    ]);
}

/// Issue 56, finding 3 (`tests/model-mutations/13-unheard-claim-kept`):
/// a claim written while every acknowledgement of it was lost gives its
/// key back; the retry goes on at once, not after the lease.
#[test]
fn a_claim_unheard_on_every_attempt_gives_its_key_back() {
    replay(vec![
        site(2),
        faulted(
            Fault::Fail,
            1,
            Step::CreateLoad {
                by: A,
                site: 0,
                keyed: true,
                tag: 5,
            },
        ),
        load(6),
        faulted(
            Fault::CutEvery,
            4,
            Step::Upload {
                by: A,
                load: 0,
                keyed: true,
                tag: 16,
            },
        ),
    ]);
}

/// Issue 56, finding 4 (`tests/model-mutations/14-own-audit-record-refused`):
/// an operator's command whose audit record's acknowledgement was lost,
/// and which the SDK sent again, goes on: the record there is its own.
#[test]
fn a_command_whose_audit_write_was_heard_late_goes_on() {
    replay(vec![Step::Unheard {
        at: 2,
        step: Box::new(Step::RotateKey {
            key: KeyName::Seal,
            overlap: None,
            now: false,
        }),
    }]);
}

/// Issue 56, finding 1: a ticket whose issue the tracker opened after the
/// service stopped waiting: 504 with `Retry-After`, the key held (409
/// with `Retry-After`) until the call can no longer land, then the retry
/// finds that issue: one issue, one slot.
#[test]
fn a_ticket_the_tracker_answered_late_opens_one_issue() {
    replay(vec![Step::Late {
        step: Box::new(ticket(A, 1)),
        tracker: Misreport::Slow,
    }]);
}

/// Issue 72, findings 1 and 2: a tracker that answers 502 and opens the
/// issue later, or answers late, its issue landing before the retry (the
/// retry finds it) or only after the retry opened its own and answered
/// it (the sweep closes the late one as its duplicate): each ticket ends
/// with one open issue, the one its answer named.
#[test]
fn a_tracker_that_misreports_ends_with_one_open_issue_per_ticket() {
    replay(vec![
        Step::Late {
            step: Box::new(ticket(A, 1)),
            tracker: Misreport::SlowPastTheAnswer,
        },
        Step::Late {
            step: Box::new(ticket(A, 2)),
            tracker: Misreport::FailsThenOpens,
        },
        Step::Late {
            step: Box::new(ticket(A, 3)),
            tracker: Misreport::FailsThenOpensPastTheAnswer,
        },
    ]);
}

/// Issue 56, finding 2 (`tests/model-mutations/16-copy-unchecked`): an
/// upload paused between its commit and its copy, thawed after another
/// upload replaced the waybill, places nothing the load does not name.
#[test]
fn an_upload_thawed_after_its_waybill_was_replaced_places_nothing() {
    replay(vec![
        site(0),
        load(1),
        Step::CopyPaused {
            step: Box::new(Step::Upload {
                by: A,
                load: 0,
                keyed: true,
                tag: 2,
            }),
            tag: 1_000_002,
        },
    ]);
}

/// Issue 56, finding 5 (`tests/model-mutations/17-retry-marks-unread`):
/// a retry request's message that SQS delivers again after 21 other
/// retries of the same delivery makes no second attempt.
#[test]
fn a_retry_message_delivered_again_after_many_others_makes_no_attempt() {
    replay(vec![
        site(0),
        load(1),
        Step::Retries {
            by: A,
            load: 0,
            url: 0,
            others: 21,
            tag: 2,
        },
    ]);
}

/// A keyed geocoding the provider answered after the service stopped
/// waiting: 504 `geocode_timeout` with nothing held, and the retry at
/// once asks again.
#[test]
fn a_geocoding_the_provider_answered_late_is_asked_again_at_once() {
    replay(vec![Step::Late {
        step: Box::new(Step::Geocode {
            by: A,
            keyed: true,
            tag: 1,
        }),
        tracker: Misreport::Slow,
    }]);
}

/// A receiver that acted on a delivery and answered after the
/// dispatcher's timeout gets it again, under the same delivery id, once
/// the retry is due (`tests/model-mutations/18-late-answer-taken-as-received`);
/// an integrator's retry that it answers late is made once, as any of
/// theirs.
#[test]
fn a_delivery_its_receiver_answered_late_is_sent_again_and_a_retry_once() {
    replay(vec![
        site(0),
        load(1),
        load(2),
        Step::LateReceivers {
            by: A,
            load: 0,
            url: 0,
            tag: 3,
        },
        Step::Retry {
            by: A,
            hook: 0,
            nth: 0,
            keyed: true,
            tag: 4,
        },
        Step::LateReceivers {
            by: A,
            load: 1,
            url: 1,
            tag: 5,
        },
    ]);
}

/// Found by the model test: a generation that had yet to sign, dropped,
/// leaves the one before it signing until the next one does, so that one
/// may be dropped later than it said before; nothing else of the ring
/// changes.
#[test]
fn a_generation_dropped_before_it_signed_leaves_the_one_before_signing_on() {
    let rotate = || Step::RotateKey {
        key: KeyName::Cursor,
        overlap: None,
        now: false,
    };
    replay(vec![
        rotate(),
        Step::Wait(Wait::Moment),
        rotate(),
        Step::DropKey {
            key: KeyName::Cursor,
            version: 2,
        },
    ]);
}

/// A ping reaches its webhook alone, once however often its keyed request
/// is replayed, beside a load's delivery to the same receiver; a ping of a
/// webhook deleted before the dispatcher ran reaches no one, and the
/// deleted webhook is not pinged again (404).
#[test]
fn a_ping_reaches_its_webhook_once_and_a_deleted_one_never() {
    let register = |url, tag| Step::Register {
        by: A,
        url,
        keyed: false,
        tag,
    };
    let ping = |hook, keyed, tag| Step::Ping {
        by: A,
        hook,
        keyed,
        tag,
    };
    replay(vec![
        register(0, 1),
        register(1, 2),
        site(3),
        load(4),
        Step::Upload {
            by: A,
            load: 0,
            keyed: false,
            tag: 5,
        },
        Step::Deliver { by: A, load: 0 },
        ping(0, true, 6),
        Step::Replay { by: A, nth: 0 },
        Step::Dispatch,
        Step::Replay { by: A, nth: 0 },
        ping(1, false, 7),
        Step::Unregister { by: A, hook: 1 },
        Step::Dispatch,
        ping(1, false, 8),
        Step::Dispatch,
    ]);
}

/// A recovery after every delivery succeeded sends nothing again, keyed and
/// replayed, or faulted and retried; a deleted webhook's is 404.
#[test]
fn a_recovery_sends_nothing_that_succeeded() {
    let recover = |hook, keyed, tag| Step::Recover {
        by: A,
        hook,
        keyed,
        tag,
    };
    replay(vec![
        Step::Register {
            by: A,
            url: 0,
            keyed: false,
            tag: 1,
        },
        site(2),
        load(3),
        Step::Upload {
            by: A,
            load: 0,
            keyed: false,
            tag: 4,
        },
        Step::Deliver { by: A, load: 0 },
        Step::Dispatch,
        recover(0, true, 5),
        Step::Replay { by: A, nth: 0 },
        faulted(Fault::Die, 2, recover(0, true, 6)),
        Step::Dispatch,
        Step::Unregister { by: A, hook: 0 },
        recover(0, false, 7),
        Step::Dispatch,
    ]);
}

/// Two operators' key commands at once: two rotations of each key (with
/// and without `--now`), a rotation beside a drop of the generation before
/// it, a rotation beside a whole reseal. Each ring ends with every
/// rotation (the loser of a race told to run again, and run again), and
/// every sealed value still opens.
#[test]
fn operators_commands_at_once_lose_no_rotation() {
    let rotate = |key, now| Step::RotateKey {
        key,
        overlap: None,
        now,
    };
    let together = |a, b| Step::Together {
        a: Box::new(a),
        b: Box::new(b),
    };
    replay(vec![
        Step::Register {
            by: A,
            url: 0,
            keyed: false,
            tag: 1,
        },
        together(rotate(KeyName::Seal, true), rotate(KeyName::Seal, false)),
        together(
            rotate(KeyName::Cursor, false),
            rotate(KeyName::Cursor, true),
        ),
        Step::Wait(Wait::Rollout),
        together(
            rotate(KeyName::Cursor, false),
            Step::DropKey {
                key: KeyName::Cursor,
                version: 2,
            },
        ),
        together(rotate(KeyName::Seal, true), Step::Reseal(Resealing::Whole)),
    ]);
}

/// Recoveries of one receiver sent at once, by both keys, again and again:
/// each answered 202, none queues a delivery that succeeded, and the
/// receiver gets each delivery once.
#[test]
fn recoveries_at_once_send_nothing_twice() {
    let recoveries = |count, tag| Step::Recoveries {
        by: A,
        hook: 0,
        count,
        tag,
    };
    replay(vec![
        Step::Register {
            by: A,
            url: 0,
            keyed: false,
            tag: 1,
        },
        site(2),
        load(3),
        Step::Upload {
            by: A,
            load: 0,
            keyed: false,
            tag: 4,
        },
        Step::Deliver { by: A, load: 0 },
        recoveries(3, 5),
        Step::Dispatch,
        recoveries(4, 6),
        Step::Dispatch,
    ]);
}
