//! The steps a sequence is made of, as an integrator and an operator take
//! them, and how each prints in a failure's report.

use std::fmt;
use std::time::Duration;

use shared::http::idempotency::{LEASE, RETENTION};

/// Who sends a request: organization `org`'s key number `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct By {
    pub org: usize,
    pub key: usize,
}

/// A step of a sequence. Records are named by their place in the model
/// (the organization's n-th site, n-th load); `tag` makes a step's names
/// and bytes its own (a site's name, a waybill's image, an
/// `Idempotency-Key`).
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `POST /sites`, with an `Idempotency-Key` when `keyed`.
    CreateSite { by: By, keyed: bool, tag: u32 },
    /// `PATCH /sites/{id}` with a new name.
    RenameSite { by: By, site: usize, tag: u32 },
    /// `DELETE /sites/{id}`.
    ArchiveSite { by: By, site: usize },
    /// `POST /sites/{id}/restore`.
    RestoreSite { by: By, site: usize },
    /// `POST /surpluses` at the org's `site`-th site.
    CreateLoad {
        by: By,
        site: usize,
        keyed: bool,
        tag: u32,
    },
    /// `POST /surpluses/{id}/waybill`, multipart, image `tag`.
    Upload {
        by: By,
        load: usize,
        keyed: bool,
        tag: u32,
    },
    /// The direct upload: the form (`.../waybill/upload`), the image
    /// `tag` posted to S3, then `.../waybill/confirm` (keyed).
    UploadByForm { by: By, load: usize, tag: u32 },
    /// `PATCH /surpluses/{id}` `{status: delivered}`.
    Deliver { by: By, load: usize },
    /// `PATCH /surpluses/{id}` to another status (`in_progress`,
    /// `rejected`).
    SetStatus { by: By, load: usize, to: LoadStatus },
    /// `POST /webhooks` for `surplus.delivered` at the receiver's URL
    /// number `url` (of three) of the organization.
    Register {
        by: By,
        url: usize,
        keyed: bool,
        tag: u32,
    },
    /// `DELETE /webhooks/{id}`.
    Unregister { by: By, hook: usize },
    /// `POST /webhooks/{id}/deliveries/{deliveryId}/retry` of the hook's
    /// `nth` delivery.
    Retry {
        by: By,
        hook: usize,
        nth: usize,
        keyed: bool,
        tag: u32,
    },
    /// `POST /webhooks/{id}/ping`: a `webhook.ping` to that hook alone.
    Ping {
        by: By,
        hook: usize,
        keyed: bool,
        tag: u32,
    },
    /// `POST /webhooks/{id}/recover` since a day back: every delivery
    /// whose last attempt failed, once more (none is sent twice).
    Recover {
        by: By,
        hook: usize,
        keyed: bool,
        tag: u32,
    },
    /// `count` recoveries of the hook sent at once (no key), by `by`'s key
    /// and the organization's other key in turn.
    Recoveries {
        by: By,
        hook: usize,
        count: usize,
        tag: u32,
    },
    /// Two operators' commands (`a`, `b`: key rotations, drops, a whole
    /// reseal) started at the same moment; a command told to run again
    /// (it lost the keyring's compare-and-swap) is run again.
    Together { a: Box<Step>, b: Box<Step> },
    /// A webhook at `url` registered, `load`'s waybill uploaded, the load
    /// delivered and dispatched; then a `Retry` of the delivery with a
    /// key, and `others` more with keys of their own, each dispatched;
    /// then SQS delivers the first request's message again: no second
    /// attempt for it.
    Retries {
        by: By,
        load: usize,
        url: usize,
        others: usize,
        tag: u32,
    },
    /// The dispatcher drains the webhook queue (the event source mapping).
    Dispatch,
    /// `POST /support`.
    Ticket { by: By, keyed: bool, tag: u32 },
    /// `count` - 1 tickets in a row without a key, then one with one:
    /// the quota's boundary within a sequence's reach.
    Tickets { by: By, count: usize, tag: u32 },
    /// A keyed ticket the tracker refuses (502); a ticket of the same key
    /// whose description quotes the lines the service would write to name
    /// that request (its id read from the table, as an insider would);
    /// then the first ticket again: it opens an issue of its own, never
    /// taking the quote for one.
    Quoted { by: By, tag: u32 },
    /// `POST /geocode`.
    Geocode { by: By, keyed: bool, tag: u32 },
    /// The `nth` keyed request `by` made, sent again byte for byte.
    Replay { by: By, nth: usize },
    /// The `nth` keyed request's `Idempotency-Key` on another request (a
    /// new site named by `tag`).
    Reuse { by: By, nth: usize, tag: u32 },
    /// `POST /receiving-points` at the org's `site`-th site.
    CreatePoint {
        by: By,
        site: usize,
        keyed: bool,
        tag: u32,
    },
    /// The operator adds photo `tag` to the org's `point`-th receiving
    /// point (`admin add-photo`).
    AddPhoto { org: usize, point: usize, tag: u32 },
    /// `POST /org-access-grants`: `by`'s organization grants the other one
    /// `read` access to its sites.
    Grant { by: By, keyed: bool, tag: u32 },
    /// `DELETE /org-access-grants/{granteeOrgId}`: the grant revoked.
    Ungrant { by: By },
    /// `by`'s key reads and changes the `nth` record (site or load) of
    /// organization `of`.
    Peek { by: By, of: usize, nth: usize },
    /// The operator revokes the key (`admin keys revoke`).
    Revoke { by: By },
    /// The operator rotates a deployment key: `admin keys rotate --key
    /// <key>`, with `--overlap-hours <overlap>` and `--now` as given.
    RotateKey {
        key: KeyName,
        overlap: Option<u32>,
        now: bool,
    },
    /// `admin keys drop --key <key> --version <version>`: done or refused
    /// as the command decides; the invariants say whether it lost anything.
    DropKey { key: KeyName, version: u32 },
    /// `admin reseal`.
    Reseal(Resealing),
    /// `step` (keyed) sent to an instance that cannot read its keys and
    /// last read them more than `HELD_FOR` ago: refused (500, nothing
    /// done); then the client retries on an instance that can.
    Unreadable { step: Box<Step> },
    /// The operator switches the organization's entitlement.
    Entitle { org: usize, on: bool },
    /// The operator deactivates the organization, for good.
    Deactivate { org: usize },
    /// An operator's command (`step`: a photo added, a key rotated or
    /// dropped, a whole reseal) whose `at`-th call takes effect unheard
    /// and is sent again by the SDK (retries on, as deployed): it ends as
    /// the command would have.
    Unheard { at: usize, step: Box<Step> },
    /// `step` (a keyed ticket, or geocoding) that the provider answers
    /// after the service stopped waiting (the tracker opens the issue
    /// then), or, for a ticket, as `tracker` says; the client retries
    /// after the `Retry-After` it is given, if any.
    Late { step: Box<Step>, tracker: Misreport },
    /// A webhook at `url` registered, `load`'s waybill uploaded and the
    /// load delivered (as `Retries` sets up); then the dispatcher runs
    /// while every receiver acts on each delivery and answers after the
    /// dispatcher stopped waiting, and again once the attempts it
    /// scheduled again are due.
    LateReceivers {
        by: By,
        load: usize,
        url: usize,
        tag: u32,
    },
    /// `step` (a keyed waybill upload) paused right after its commit,
    /// before what follows it (its copy), while another upload (`tag`,
    /// no key) replaces the load's waybill; then thawed: it places no file
    /// the load does not name.
    CopyPaused { step: Box<Step>, tag: u32 },
    /// Time passes.
    Wait(Wait),
    /// `step` (keyed) with its `at`-th call (any service) broken by `fault`; the
    /// client retries with its key until it gets an answer.
    Faulted {
        fault: Fault,
        at: usize,
        step: Box<Step>,
    },
    /// `step` (keyed) paused at its `at`-th call past its claim's lease;
    /// when `overtaken`, a retry with its key runs whole before it thaws,
    /// else it thaws first and the client retries after its answer.
    Paused {
        at: usize,
        overtaken: bool,
        step: Box<Step>,
    },
    /// `step` (keyed) paused at its `at`-th call past its lease, thawed,
    /// then frozen right after its next call took effect, past a lease
    /// again, thawed; the client retries after its answer.
    PausedTwice { at: usize, step: Box<Step> },
}

/// A deployment key that rotates (`admin keys --key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyName {
    Seal,
    Cursor,
}

/// How a tracker misreports a ticket's issue (`Step::Late`): when the
/// issue lands, against the retry that follows the answer's
/// `Retry-After`, and what it answers the call that opened it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misreport {
    /// Answers after the service's timeout; the issue lands before the
    /// retry (which finds it).
    Slow,
    /// Answers after the timeout; the issue lands only after the retry
    /// opened its own and answered it (the sweep closes the late one).
    SlowPastTheAnswer,
    /// Answers 502 and opens the issue a moment later, before the retry.
    FailsThenOpens,
    /// Answers 502 and opens the issue only after the retry's answer.
    FailsThenOpensPastTheAnswer,
}

impl Misreport {
    /// The first answer is a 502, not a timeout.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Misreport::FailsThenOpens | Misreport::FailsThenOpensPastTheAnswer
        )
    }

    /// The issue lands after the retry's answer.
    pub fn past_the_answer(self) -> bool {
        matches!(
            self,
            Misreport::SlowPastTheAnswer | Misreport::FailsThenOpensPastTheAnswer
        )
    }
}

impl std::fmt::Display for Misreport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let answered = match self.fails() {
            true => "answered 502 by the tracker, which opens the issue",
            false => "answered by the tracker after its timeout, the issue landing",
        };
        let when = match self.past_the_answer() {
            true => "after the retry's answer (then the sweep)",
            false => "before the retry",
        };
        write!(f, "{answered} {when}")
    }
}

impl KeyName {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyName::Seal => "seal",
            KeyName::Cursor => "cursor",
        }
    }

    pub fn index(self) -> usize {
        match self {
            KeyName::Seal => 0,
            KeyName::Cursor => 1,
        }
    }
}

/// How an operator runs `admin reseal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resealing {
    /// The whole table in one run.
    Whole,
    /// One page of ten items a run, each run resumed from where the one
    /// before stopped (`--resume`).
    Paged,
    /// Killed at its `at`-th call (any service), then run again whole.
    Killed { at: usize },
}

/// A load's status, as `PATCH` sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadStatus {
    New,
    InProgress,
    Delivered,
    Rejected,
}

impl LoadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LoadStatus::New => "new",
            LoadStatus::InProgress => "in_progress",
            LoadStatus::Delivered => "delivered",
            LoadStatus::Rejected => "rejected",
        }
    }

    /// The contract's status machine: new and in-progress loads move
    /// anywhere; delivered and rejected ones stay.
    pub fn may_become(self, to: LoadStatus) -> bool {
        matches!(self, LoadStatus::New | LoadStatus::InProgress) || self == to
    }
}

/// How far the clock moves: across each boundary the service keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// A few seconds: inside every boundary.
    Moment,
    /// Past a claim's lease (30 s).
    Lease,
    /// Past a key rotation's rollout and the time an old generation is
    /// kept after it (21 minutes): what an operator waits between the
    /// steps of a rotation.
    Rollout,
    /// Past the support quota's hour and a sweep of staged files.
    Hour,
    /// Past a kept answer's retention (24 h) and a sweep.
    Retention,
}

impl Wait {
    pub fn duration(self) -> Duration {
        match self {
            Wait::Moment => Duration::from_secs(5),
            Wait::Lease => LEASE + Duration::from_secs(1),
            Wait::Rollout => 2 * shared::keyring::ROLLOUT + Duration::from_secs(60),
            Wait::Hour => Duration::from_secs(3600),
            Wait::Retention => RETENTION + Duration::from_secs(1),
        }
    }

    /// Whether the schedule's sweep of staged files runs within it.
    pub fn sweeps(self) -> bool {
        matches!(self, Wait::Hour | Wait::Retention)
    }
}

/// How a call breaks (`api_tests::cuts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// It never leaves.
    Fail,
    /// It takes effect; its answer is lost.
    Cut,
    /// It takes effect; the function is killed right after.
    Die,
    /// It takes effect, its answer is lost, and the SDK sends it again
    /// (retries on, as deployed).
    CutResent,
    /// It takes effect and its answer is lost, and so for every attempt
    /// the SDK makes of it (retries on): the caller hears only errors.
    CutEvery,
}

impl Step {
    /// `Step::Retries`' requests before its retries (and
    /// `Step::LateReceivers`' before its dispatch): a webhook at `url`,
    /// `load`'s waybill (image `tag`), and its delivery.
    pub fn retries_setup(by: By, load: usize, url: usize, tag: u32) -> [Step; 3] {
        [
            Step::Register {
                by,
                url,
                keyed: false,
                tag,
            },
            Step::Upload {
                by,
                load,
                keyed: false,
                tag,
            },
            Step::Deliver { by, load },
        ]
    }

    /// `Step::CopyPaused`'s other upload: image `tag`, no key, to the
    /// load `upload` sends to.
    pub fn replacing(upload: &Step, tag: u32) -> Step {
        let Step::Upload { by, load, .. } = *upload else {
            unreachable!("a paused copy is an upload's")
        };
        Step::Upload {
            by,
            load,
            keyed: false,
            tag,
        }
    }

    /// Who sends it, for a step that is a request.
    pub fn by(&self) -> Option<By> {
        match self {
            Step::CreateSite { by, .. }
            | Step::RenameSite { by, .. }
            | Step::ArchiveSite { by, .. }
            | Step::RestoreSite { by, .. }
            | Step::CreateLoad { by, .. }
            | Step::Upload { by, .. }
            | Step::UploadByForm { by, .. }
            | Step::Deliver { by, .. }
            | Step::SetStatus { by, .. }
            | Step::Register { by, .. }
            | Step::Unregister { by, .. }
            | Step::Retry { by, .. }
            | Step::Ping { by, .. }
            | Step::Recover { by, .. }
            | Step::Recoveries { by, .. }
            | Step::Retries { by, .. }
            | Step::LateReceivers { by, .. }
            | Step::Grant { by, .. }
            | Step::CreatePoint { by, .. }
            | Step::Ungrant { by }
            | Step::Ticket { by, .. }
            | Step::Tickets { by, .. }
            | Step::Quoted { by, .. }
            | Step::Geocode { by, .. }
            | Step::Replay { by, .. }
            | Step::Reuse { by, .. }
            | Step::Peek { by, .. } => Some(*by),
            Step::Faulted { step, .. }
            | Step::Paused { step, .. }
            | Step::PausedTwice { step, .. }
            | Step::Unreadable { step }
            | Step::Late { step, .. }
            | Step::CopyPaused { step, .. } => step.by(),
            _ => None,
        }
    }

    /// The `Idempotency-Key` it sends, if any: one of its own.
    pub fn idempotency_key(&self) -> Option<String> {
        match self {
            Step::CreateSite {
                keyed: true, tag, ..
            }
            | Step::CreateLoad {
                keyed: true, tag, ..
            }
            | Step::Upload {
                keyed: true, tag, ..
            }
            | Step::Ticket {
                keyed: true, tag, ..
            }
            | Step::Geocode {
                keyed: true, tag, ..
            }
            | Step::Register {
                keyed: true, tag, ..
            }
            | Step::Retry {
                keyed: true, tag, ..
            }
            | Step::Ping {
                keyed: true, tag, ..
            }
            | Step::Recover {
                keyed: true, tag, ..
            }
            | Step::Grant {
                keyed: true, tag, ..
            }
            | Step::CreatePoint {
                keyed: true, tag, ..
            }
            | Step::Tickets { tag, .. }
            | Step::Quoted { tag, .. }
            | Step::UploadByForm { tag, .. } => Some(format!("model-{tag}")),
            _ => None,
        }
    }

    /// With an `Idempotency-Key` (a faulted or paused step's client
    /// retries with one).
    pub fn keyed(self) -> Step {
        match self {
            Step::CreateSite { by, tag, .. } => Step::CreateSite {
                by,
                keyed: true,
                tag,
            },
            Step::CreateLoad { by, site, tag, .. } => Step::CreateLoad {
                by,
                site,
                keyed: true,
                tag,
            },
            Step::Upload { by, load, tag, .. } => Step::Upload {
                by,
                load,
                keyed: true,
                tag,
            },
            Step::Ticket { by, tag, .. } => Step::Ticket {
                by,
                keyed: true,
                tag,
            },
            Step::Geocode { by, tag, .. } => Step::Geocode {
                by,
                keyed: true,
                tag,
            },
            Step::CreatePoint { by, site, tag, .. } => Step::CreatePoint {
                by,
                site,
                keyed: true,
                tag,
            },
            Step::Register { by, url, tag, .. } => Step::Register {
                by,
                url,
                keyed: true,
                tag,
            },
            Step::Retry {
                by, hook, nth, tag, ..
            } => Step::Retry {
                by,
                hook,
                nth,
                keyed: true,
                tag,
            },
            Step::Ping { by, hook, tag, .. } => Step::Ping {
                by,
                hook,
                keyed: true,
                tag,
            },
            Step::Recover { by, hook, tag, .. } => Step::Recover {
                by,
                hook,
                keyed: true,
                tag,
            },
            other => other,
        }
    }
}

impl fmt::Display for By {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "org{}/key{}", self.org, self.key)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = |keyed: &bool, tag: &u32| {
            if *keyed {
                format!(" [Idempotency-Key model-{tag}]")
            } else {
                String::new()
            }
        };
        match self {
            Step::CreateSite { by, keyed, tag } => {
                write!(f, "{by}: POST /sites \"Site {tag}\"{}", key(keyed, tag))
            }
            Step::RenameSite { by, site, tag } => {
                write!(f, "{by}: PATCH /sites/<site {site}> \"Site {tag}\"")
            }
            Step::ArchiveSite { by, site } => write!(f, "{by}: DELETE /sites/<site {site}>"),
            Step::RestoreSite { by, site } => {
                write!(f, "{by}: POST /sites/<site {site}>/restore")
            }
            Step::CreateLoad {
                by,
                site,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /surpluses at <site {site}>{}",
                key(keyed, tag)
            ),
            Step::Upload {
                by,
                load,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /surpluses/<load {load}>/waybill image {tag}{}",
                key(keyed, tag)
            ),
            Step::UploadByForm { by, load, tag } => write!(
                f,
                "{by}: form, S3 POST image {tag}, POST /surpluses/<load {load}>/waybill/confirm [Idempotency-Key model-{tag}]"
            ),
            Step::Deliver { by, load } => {
                write!(f, "{by}: PATCH /surpluses/<load {load}> delivered")
            }
            Step::SetStatus { by, load, to } => {
                write!(f, "{by}: PATCH /surpluses/<load {load}> {}", to.as_str())
            }
            Step::Register {
                by,
                url,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /webhooks surplus.delivered at <url {url}>{}",
                key(keyed, tag)
            ),
            Step::Unregister { by, hook } => write!(f, "{by}: DELETE /webhooks/<hook {hook}>"),
            Step::Retry {
                by,
                hook,
                nth,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /webhooks/<hook {hook}>/deliveries/<delivery {nth}>/retry{}",
                key(keyed, tag)
            ),
            Step::Ping {
                by,
                hook,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /webhooks/<hook {hook}>/ping{}",
                key(keyed, tag)
            ),
            Step::Recover {
                by,
                hook,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /webhooks/<hook {hook}>/recover since a day back{}",
                key(keyed, tag)
            ),
            Step::Recoveries {
                by, hook, count, ..
            } => write!(
                f,
                "{by} and the org's other key in turn: POST /webhooks/<hook {hook}>/recover since a day back, {count} at once"
            ),
            Step::Together { a, b } => write!(f, "at once: {a}; {b}"),
            Step::Dispatch => write!(f, "dispatcher: drain the webhook queue"),
            Step::Grant { by, keyed, tag } => write!(
                f,
                "{by}: POST /org-access-grants to the other org{}",
                key(keyed, tag)
            ),
            Step::CreatePoint {
                by,
                site,
                keyed,
                tag,
            } => write!(
                f,
                "{by}: POST /receiving-points \"Point {tag}\" at <site {site}>{}",
                key(keyed, tag)
            ),
            Step::AddPhoto { org, point, tag } => write!(
                f,
                "operator: admin add-photo image {tag} to org{org}'s <point {point}>"
            ),
            Step::Ungrant { by } => {
                write!(f, "{by}: DELETE /org-access-grants/<the other org>")
            }
            Step::PausedTwice { at, step } => write!(
                f,
                "{step}, paused at call {at} and after the next past its lease, thawed, retried"
            ),
            Step::Tickets { by, count, tag } => write!(
                f,
                "{by}: POST /support {} times, the last \"Ticket {tag}\" [Idempotency-Key model-{tag}]",
                count
            ),
            Step::Ticket { by, keyed, tag } => {
                write!(f, "{by}: POST /support \"Ticket {tag}\"{}", key(keyed, tag))
            }
            Step::Quoted { by, tag } => write!(
                f,
                "{by}: POST /support \"Ticket {tag}\" [Idempotency-Key model-{tag}], the tracker refusing it; a ticket quoting the lines that name it; the first again"
            ),
            Step::Geocode { by, keyed, tag } => {
                write!(f, "{by}: POST /geocode{}", key(keyed, tag))
            }
            Step::Replay { by, nth } => write!(f, "{by}: its keyed request {nth} again"),
            Step::Reuse { by, nth, tag } => write!(
                f,
                "{by}: POST /sites \"Site {tag}\" with the key of its keyed request {nth}"
            ),
            Step::Peek { by, of, nth } => {
                write!(f, "{by}: GET and PATCH org{of}'s record {nth}")
            }
            Step::Revoke { by } => write!(f, "operator: revoke {by}"),
            Step::RotateKey { key, overlap, now } => {
                write!(f, "operator: admin keys rotate --key {}", key.as_str())?;
                if let Some(hours) = overlap {
                    write!(f, " --overlap-hours {hours}")?;
                }
                if *now {
                    write!(f, " --now")?;
                }
                Ok(())
            }
            Step::DropKey { key, version } => write!(
                f,
                "operator: admin keys drop --key {} --version {version}",
                key.as_str()
            ),
            Step::Reseal(Resealing::Whole) => write!(f, "operator: admin reseal"),
            Step::Reseal(Resealing::Paged) => write!(
                f,
                "operator: admin reseal --page-items 10 --pages 1, resumed a run at a time to the end"
            ),
            Step::Reseal(Resealing::Killed { at }) => write!(
                f,
                "operator: admin reseal, killed at its call {at}, then run again"
            ),
            Step::Unreadable { step } => write!(
                f,
                "{step}, to an instance that has not read its keys for 8 minutes and cannot, refused, retried"
            ),
            Step::Entitle { org, on } => write!(f, "operator: org{org} entitlement {on}"),
            Step::Deactivate { org } => write!(f, "operator: deactivate org{org}"),
            Step::Wait(wait) => write!(f, "wait {:?} ({:?})", wait, wait.duration()),
            Step::Unheard { at, step } => {
                write!(f, "{step}, its call {at} unheard and sent again")
            }
            Step::Retries {
                by,
                load,
                url,
                others,
                tag,
            } => write!(
                f,
                "{by}: a webhook at url{url}, <load {load}> delivered with image {tag}, its delivery retried with a key, {others} more with theirs, the first's message delivered again"
            ),
            Step::LateReceivers { by, load, url, tag } => write!(
                f,
                "{by}: a webhook at url{url}, <load {load}> delivered with image {tag}; dispatched, every receiver answering after the dispatcher's timeout; dispatched again once due"
            ),
            Step::Late {
                step,
                tracker: Misreport::Slow,
            } => write!(
                f,
                "{step}, answered by the provider after its timeout, retried"
            ),
            Step::Late { step, tracker } => write!(f, "{step}, {tracker}, retried"),
            Step::CopyPaused { step, tag } => write!(
                f,
                "{step}, paused after its commit while image {tag} replaces the waybill, thawed"
            ),
            Step::Faulted { fault, at, step } => {
                write!(f, "{step}, call {at} {fault:?}, retried")
            }
            Step::Paused {
                at,
                overtaken: true,
                step,
            } => {
                write!(
                    f,
                    "{step}, paused at call {at} past its lease, retried, thawed"
                )
            }
            Step::Paused {
                at,
                overtaken: false,
                step,
            } => {
                write!(
                    f,
                    "{step}, paused at call {at} past its lease, thawed, retried"
                )
            }
        }
    }
}

/// A sequence as a numbered list of steps.
pub fn listing(steps: &[Step]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| format!("  {:>2}. {step}\n", i + 1))
        .collect()
}
