//! Sequences the model test found or was shown to find, kept as plain
//! tests: each runs whole on every `make test`, with every answer and
//! invariant checked as in the search.

use super::replay;
use super::steps::{By, Fault, Step, Wait};

const A: By = By { org: 0, key: 0 };

/// Issue 40's first finding: a waybill upload's `Idempotency-Key` reused
/// after its retention, on a load delivered since, must not touch the
/// committed waybill.
#[test]
fn an_upload_reused_after_its_retention_leaves_the_delivered_waybill() {
    replay(vec![
        Step::CreateSite {
            by: A,
            keyed: false,
            tag: 0,
        },
        Step::CreateLoad {
            by: A,
            site: 0,
            keyed: false,
            tag: 1,
        },
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
    let ticket = |tag| Step::Ticket {
        by: A,
        keyed: true,
        tag,
    };
    replay(vec![
        Step::Faulted {
            fault: Fault::Die,
            at: 4,
            step: Box::new(ticket(0)),
        },
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
