//! The reference: what should exist after each step, and what each step
//! must answer. It knows the contract's rules (admission, archive states,
//! the waybill lock, the support quota, `Idempotency-Key` replays and
//! retention), not the service's code.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest_state_machine::ReferenceStateMachine;
use shared::http::idempotency::RETENTION;

use super::steps::{By, Fault, KeyName, LoadStatus, Misreport, Resealing, Step, Wait};

pub const ORGS: usize = 2;
pub const KEYS: usize = 2;
/// Receiver URLs an organization registers webhooks at.
pub const URLS: usize = 3;
/// Support tickets a key may open in any hour.
pub const TICKETS_AN_HOUR: usize = 5;
const HOUR_MS: u64 = 3_600_000;

/// What a step must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    pub status: u16,
    pub code: Option<&'static str>,
    /// The kept answer, replayed (`Idempotent-Replayed: true`).
    pub replayed: bool,
    /// Refused (the key, the quota, a reused key) or replayed: nothing
    /// may leave for S3, SQS or a provider.
    pub quiet: bool,
}

impl Expect {
    fn ok(status: u16) -> Expect {
        Expect {
            status,
            code: None,
            replayed: false,
            quiet: false,
        }
    }

    fn error(status: u16, code: &'static str) -> Expect {
        Expect {
            status,
            code: Some(code),
            replayed: false,
            quiet: false,
        }
    }

    fn refused(status: u16, code: &'static str) -> Expect {
        Expect {
            quiet: true,
            ..Expect::error(status, code)
        }
    }

    /// Whether the answer is kept for replays (5xx and 429 are not).
    fn kept(self) -> bool {
        self.status < 500 && self.status != 429
    }
}

#[derive(Clone, Debug, Default)]
pub struct Model {
    pub orgs: Vec<Org>,
    /// Milliseconds since the sequence began, by the service's clock.
    pub now: u64,
    /// The next step's tag.
    pub tag: u32,
    /// What the last step must answer (none for operators' steps and
    /// waits).
    pub expect: Option<Expect>,
    /// What the requests a step sends before its last must answer
    /// (`Tickets`).
    pub before: Vec<Expect>,
    /// Whether every committed waybill is in its place: false after a
    /// request broke (a copy after its commit may be left to the sweep),
    /// true again after a wait the sweep runs in.
    pub swept: bool,
    /// The newest version of each rotating key (`KeyName::index`).
    pub versions: [u32; 2],
    /// Whether the last operator's key command must be done (true) or
    /// refused (false); None when the command decides (a drop, whose
    /// rules the invariants check by what it leaves).
    pub command: Option<bool>,
    /// The delivery `Retries` retries (hook, nth), when there is one.
    pub target: Option<(usize, usize)>,
}

#[derive(Clone, Debug)]
pub struct Org {
    pub active: bool,
    pub entitled: bool,
    pub keys: Vec<Key>,
    pub sites: Vec<Site>,
    pub loads: Vec<Load>,
    /// Issues opened in the tracker.
    pub tickets: usize,
    /// Calls to the geocoding provider.
    pub geocodes: usize,
    /// Its webhooks, in the order registered.
    pub hooks: Vec<Hook>,
    /// Loads delivered since the dispatcher last ran: it announces each
    /// to the webhooks registered when it runs.
    pub announced: Vec<usize>,
    /// Whether it granted the other organization read access to its sites.
    pub granted: bool,
    /// Its receiving points: the photos of each, in the order added.
    pub points: Vec<Vec<u32>>,
}

#[derive(Clone, Debug)]
pub struct Hook {
    pub url: usize,
    pub deleted: bool,
    /// One per load delivered and announced while it was registered.
    pub deliveries: Vec<Delivery>,
    /// Its pings, in the order asked for.
    pub pings: Vec<Ping>,
    /// Recoveries asked of it (not of a deleted webhook).
    pub recoveries: usize,
}

#[derive(Clone, Debug)]
pub struct Ping {
    /// Attempts the receiver got.
    pub sent: usize,
    /// Whether the dispatcher's next run sends it.
    pub queued: bool,
}

/// Pings and recoveries a sequence asks of one receiver (a webhook's URL,
/// whichever of the organization's webhooks names it): a faulted
/// request's client retries spend the receiver's quota (10 a clock hour
/// each) more than once, so the sequence stays below it (the quotas have
/// tests of their own).
pub const PINGS_A_RECEIVER: usize = 3;
pub const RECOVERIES_A_RECEIVER: usize = 3;

impl Org {
    /// What the organization's webhooks at `hook`'s receiver asked of it.
    fn at_receiver(&self, hook: &Hook, asked: fn(&Hook) -> usize) -> usize {
        self.hooks
            .iter()
            .filter(|h| h.url == hook.url)
            .map(asked)
            .sum()
    }
}

#[derive(Clone, Debug)]
pub struct Delivery {
    pub load: usize,
    /// Attempts the receiver got.
    pub sent: usize,
    /// Attempts queued for the dispatcher's next run.
    pub queued: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Key {
    pub revoked: bool,
    /// Its requests with an `Idempotency-Key` that were let in.
    pub keyed: Vec<Keyed>,
    /// When its tickets were opened (the quota's slots).
    pub tickets: Vec<u64>,
}

#[derive(Clone, Debug)]
pub struct Keyed {
    pub name: String,
    /// What the request does when it runs.
    pub step: Step,
    /// When its claim was first made (its retention counts from there).
    pub at: u64,
    /// Its answer, if kept.
    pub kept: Option<Expect>,
}

#[derive(Clone, Debug)]
pub struct Site {
    pub name: u32,
    pub archived: bool,
}

#[derive(Clone, Debug)]
pub struct Load {
    pub site: usize,
    pub status: LoadStatus,
    /// The committed waybill's image.
    pub waybill: Option<u32>,
}

impl Default for Org {
    fn default() -> Self {
        Org {
            active: true,
            entitled: true,
            keys: vec![Key::default(); KEYS],
            sites: Vec::new(),
            loads: Vec::new(),
            tickets: 0,
            geocodes: 0,
            hooks: Vec::new(),
            announced: Vec::new(),
            granted: false,
            points: Vec::new(),
        }
    }
}

impl Model {
    pub fn new() -> Model {
        Model {
            orgs: vec![Org::default(); ORGS],
            swept: true,
            versions: [1, 1],
            ..Model::default()
        }
    }

    fn key(&mut self, by: By) -> &mut Key {
        &mut self.orgs[by.org].keys[by.key]
    }

    /// The admission's refusal of `by`'s key, in the contract's order.
    fn refusal(&self, by: By) -> Option<Expect> {
        let org = &self.orgs[by.org];
        if org.keys[by.key].revoked {
            Some(Expect::refused(401, "api_key_revoked"))
        } else if !org.active {
            Some(Expect::refused(403, "org_inactive"))
        } else if !org.entitled {
            Some(Expect::refused(403, "feature_not_enabled"))
        } else {
            None
        }
    }

    /// A request step: admitted or refused, then run once.
    fn request(&mut self, step: &Step) -> Expect {
        let by = step.by().expect("a request");
        if let Some(refused) = self.refusal(by) {
            return refused;
        }
        match step {
            Step::Replay { nth, .. } => self.replay(by, *nth),
            Step::Reuse { nth, tag, .. } => self.reuse(by, *nth, *tag),
            _ => {
                // A burst's last request is the one with the key.
                let ran = match step {
                    Step::Tickets { by, count, tag } => {
                        for _ in 1..*count {
                            let plain = Step::Ticket {
                                by: *by,
                                keyed: false,
                                tag: *tag,
                            };
                            let expect = self.effect(&plain);
                            self.before.push(expect);
                        }
                        Step::Ticket {
                            by: *by,
                            keyed: true,
                            tag: *tag,
                        }
                    }
                    Step::Quoted { by, tag } => {
                        let ticket = |keyed| Step::Ticket {
                            by: *by,
                            keyed,
                            tag: *tag,
                        };
                        // Refused by the tracker, it gives its slot back.
                        let first = if self.tickets_left(*by) {
                            Expect::error(502, "support_tracker_error")
                        } else {
                            Expect::refused(429, "support_rate_limited")
                        };
                        self.before.push(first);
                        let quote = self.effect(&ticket(false));
                        self.before.push(quote);
                        ticket(true)
                    }
                    other => other.clone(),
                };
                let expect = self.effect(&ran);
                if let Some(name) = step.idempotency_key() {
                    let at = self.now;
                    self.key(by).keyed.push(Keyed {
                        name,
                        step: ran,
                        at,
                        kept: expect.kept().then_some(expect),
                    });
                }
                expect
            }
        }
    }

    fn within_retention(&self, keyed: &Keyed) -> bool {
        Duration::from_millis(self.now - keyed.at) < RETENTION
    }

    /// The `Idempotency-Key`s whose answers are kept now, of keys the
    /// admission lets in: sent again, each must be answered with its kept
    /// answer, whatever operators did to the deployment's keys.
    pub fn kept_now(&self) -> Vec<String> {
        let mut kept = Vec::new();
        for (org, keys) in self.orgs.iter().map(|o| &o.keys).enumerate() {
            for (key, of) in keys.iter().enumerate() {
                if self.refusal(By { org, key }).is_some() {
                    continue;
                }
                let now = of
                    .keyed
                    .iter()
                    .filter(|keyed| keyed.kept.is_some() && self.within_retention(keyed));
                kept.extend(now.map(|keyed| keyed.name.clone()));
            }
        }
        kept
    }

    fn replay(&mut self, by: By, nth: usize) -> Expect {
        let keyed = self.key(by).keyed[nth].clone();
        if let Some(kept) = keyed.kept.filter(|_| self.within_retention(&keyed)) {
            return Expect {
                replayed: true,
                quiet: true,
                ..kept
            };
        }
        // Never kept, or past its retention: a new request.
        let expect = self.effect(&keyed.step);
        let now = self.now;
        let entry = &mut self.key(by).keyed[nth];
        entry.at = now;
        entry.kept = expect.kept().then_some(expect);
        expect
    }

    fn reuse(&mut self, by: By, nth: usize, tag: u32) -> Expect {
        let keyed = self.key(by).keyed[nth].clone();
        if keyed.kept.is_some() && self.within_retention(&keyed) {
            return Expect::refused(422, "idempotency_key_reused");
        }
        let step = Step::CreateSite {
            by,
            keyed: true,
            tag,
        };
        let expect = self.effect(&step);
        let now = self.now;
        self.key(by).keyed[nth] = Keyed {
            name: keyed.name,
            step,
            at: now,
            kept: expect.kept().then_some(expect),
        };
        expect
    }

    /// What an admitted request does, and answers.
    fn effect(&mut self, step: &Step) -> Expect {
        let now = self.now;
        match step {
            Step::CreateSite { by, tag, .. } => {
                self.orgs[by.org].sites.push(Site {
                    name: *tag,
                    archived: false,
                });
                Expect::ok(201)
            }
            Step::RenameSite { by, site, tag } => {
                let site = &mut self.orgs[by.org].sites[*site];
                if site.archived {
                    return Expect::error(409, "record_archived");
                }
                site.name = *tag;
                Expect::ok(200)
            }
            Step::ArchiveSite { by, site } => {
                let site = &mut self.orgs[by.org].sites[*site];
                if site.archived {
                    return Expect::error(409, "already_archived");
                }
                site.archived = true;
                Expect::ok(200)
            }
            Step::RestoreSite { by, site } => {
                let site = &mut self.orgs[by.org].sites[*site];
                if !site.archived {
                    return Expect::error(409, "not_archived");
                }
                site.archived = false;
                Expect::ok(200)
            }
            Step::CreateLoad { by, site, .. } => {
                let org = &mut self.orgs[by.org];
                if org.sites[*site].archived {
                    return Expect::error(422, "site_archived");
                }
                org.loads.push(Load {
                    site: *site,
                    status: LoadStatus::New,
                    waybill: None,
                });
                Expect::ok(201)
            }
            Step::Upload { by, load, tag, .. } | Step::UploadByForm { by, load, tag } => {
                let by_form = matches!(step, Step::UploadByForm { .. });
                let load = &mut self.orgs[by.org].loads[*load];
                // Confirming the upload the waybill came from again answers
                // the load again, delivered or not (docs/decisions/surplus-loads.md).
                if by_form && load.waybill == Some(*tag) {
                    return Expect::ok(200);
                }
                if load.status == LoadStatus::Delivered {
                    return Expect::error(409, "waybill_locked");
                }
                load.waybill = Some(*tag);
                Expect::ok(200)
            }
            Step::Deliver { by, load } => self.set_status(*by, *load, LoadStatus::Delivered),
            Step::SetStatus { by, load, to } => self.set_status(*by, *load, *to),
            Step::Register { by, url, .. } => {
                let org = &mut self.orgs[by.org];
                if org.hooks.iter().any(|h| h.url == *url && !h.deleted) {
                    return Expect::error(409, "webhook_already_exists");
                }
                org.hooks.push(Hook {
                    url: *url,
                    deleted: false,
                    deliveries: Vec::new(),
                    pings: Vec::new(),
                    recoveries: 0,
                });
                Expect::ok(201)
            }
            Step::Unregister { by, hook } => {
                let hook = &mut self.orgs[by.org].hooks[*hook];
                if hook.deleted {
                    return Expect::error(404, "webhook_not_found");
                }
                hook.deleted = true;
                Expect::ok(200)
            }
            Step::Retry { by, hook, nth, .. } => {
                let hook = &mut self.orgs[by.org].hooks[*hook];
                if hook.deleted {
                    return Expect::error(404, "webhook_not_found");
                }
                hook.deliveries[*nth].queued += 1;
                Expect::ok(202)
            }
            Step::Ping { by, hook, .. } => {
                let hook = &mut self.orgs[by.org].hooks[*hook];
                if hook.deleted {
                    return Expect::error(404, "webhook_not_found");
                }
                hook.pings.push(Ping {
                    sent: 0,
                    queued: true,
                });
                Expect::ok(202)
            }
            // Every delivery here ends succeeded within the step that
            // attempted it (a late answer's retry included): nothing has
            // failed, so nothing is sent again.
            Step::Recover { by, hook, .. } => {
                let hook = &mut self.orgs[by.org].hooks[*hook];
                if hook.deleted {
                    return Expect::error(404, "webhook_not_found");
                }
                hook.recoveries += 1;
                Expect::ok(202)
            }
            Step::Ticket { by, .. } => {
                if !self.tickets_left(*by) {
                    return Expect::refused(429, "support_rate_limited");
                }
                self.key(*by).tickets.push(now);
                self.orgs[by.org].tickets += 1;
                Expect::ok(201)
            }
            Step::Geocode { by, .. } => {
                self.orgs[by.org].geocodes += 1;
                Expect::ok(200)
            }
            Step::CreatePoint { by, site, .. } => {
                let org = &mut self.orgs[by.org];
                if org.sites[*site].archived {
                    return Expect::error(422, "site_archived");
                }
                org.points.push(Vec::new());
                Expect::ok(201)
            }
            Step::Grant { by, .. } => {
                let other = (by.org + 1) % ORGS;
                if !self.orgs[other].active {
                    return Expect::error(422, "grantee_not_found");
                }
                let org = &mut self.orgs[by.org];
                let existed = std::mem::replace(&mut org.granted, true);
                Expect::ok(if existed { 200 } else { 201 })
            }
            Step::Ungrant { by } => {
                if !std::mem::replace(&mut self.orgs[by.org].granted, false) {
                    return Expect::error(404, "grant_not_found");
                }
                Expect::ok(204)
            }
            // The read; the change that follows is 404 whatever it reads.
            Step::Peek { of, nth, .. } => {
                let granter = &self.orgs[*of];
                if *nth >= granter.sites.len() {
                    return Expect::refused(404, "surplus_not_found");
                }
                if granter.granted && granter.active {
                    Expect {
                        quiet: true,
                        ..Expect::ok(200)
                    }
                } else {
                    Expect::refused(404, "site_not_found")
                }
            }
            other => unreachable!("not a request: {other:?}"),
        }
    }

    /// Whether `by`'s key may open a ticket now (the quota's hour).
    fn tickets_left(&self, by: By) -> bool {
        let tickets = &self.orgs[by.org].keys[by.key].tickets;
        let recent = tickets.iter().filter(|t| **t + HOUR_MS > self.now).count();
        recent < TICKETS_AN_HOUR
    }

    /// A load's status changed: delivered announces it to every webhook
    /// registered.
    fn set_status(&mut self, by: By, load: usize, to: LoadStatus) -> Expect {
        let org = &mut self.orgs[by.org];
        let current = org.loads[load].status;
        if !current.may_become(to) {
            return Expect::error(409, "invalid_status_transition");
        }
        if to == LoadStatus::Delivered && current != to {
            if org.loads[load].waybill.is_none() {
                return Expect::error(409, "waybill_required");
            }
            org.announced.push(load);
        }
        org.loads[load].status = to;
        Expect::ok(200)
    }

    /// The dispatcher's run: each load delivered since reaches every
    /// webhook registered now, and every queued attempt of a registered
    /// webhook its receiver; a deleted webhook's are dropped.
    fn dispatch(&mut self) {
        self.dispatch_tried(1);
    }

    /// The dispatcher's run, each load's delivery reaching its receiver
    /// `tries` times (a receiver that acted on it and answered after the
    /// dispatcher stopped waiting gets it again); a retry an integrator
    /// asked for is made once, answered or not.
    fn dispatch_tried(&mut self, tries: usize) {
        for org in &mut self.orgs {
            for hook in &mut org.hooks {
                for delivery in &mut hook.deliveries {
                    if !hook.deleted {
                        delivery.sent += delivery.queued;
                    }
                    delivery.queued = 0;
                }
                // A ping asked for is delivered as a new load's delivery
                // is (a late receiver gets it again); none to a webhook
                // deleted before the dispatcher ran.
                for ping in &mut hook.pings {
                    if !hook.deleted && ping.queued {
                        ping.sent += tries;
                    }
                    ping.queued = false;
                }
            }
            for load in std::mem::take(&mut org.announced) {
                for hook in org.hooks.iter_mut().filter(|h| !h.deleted) {
                    hook.deliveries.push(Delivery {
                        load,
                        sent: tries,
                        queued: 0,
                    });
                }
            }
        }
    }

    /// Records (sites, then loads) of `org`, for `Peek`.
    fn records(&self, org: usize) -> usize {
        self.orgs[org].sites.len() + self.orgs[org].loads.len()
    }
}

/// Whether an operator's command is done (`Some(true)`) or refused, as
/// its flags decide; None when the table and the ring decide (a drop).
pub fn verdict(step: &Step) -> Option<bool> {
    match step {
        // The seal key takes no overlap: an old generation ending while
        // values are sealed with it would lose them.
        Step::RotateKey { key, overlap, .. } => Some(!(*key == KeyName::Seal && overlap.is_some())),
        Step::Reseal(_) => Some(true),
        _ => None,
    }
}

/// Any organization's any key.
fn sender() -> impl Strategy<Value = By> + Clone {
    (0..ORGS, 0..KEYS).prop_map(|(org, key)| By { org, key })
}

/// Added to a step's tag for the upload that replaces a paused one's
/// waybill (`Step::CopyPaused`): an image of its own.
pub const REPLACING: u32 = 1_000_000;

/// Whether `step` can be taken in `model` (shrinking drops steps, so the
/// records a later step names may not exist any more).
fn possible(model: &Model, step: &Step) -> bool {
    let Some(by) = step.by() else {
        return match step {
            Step::Entitle { org, .. } | Step::Deactivate { org } => *org < model.orgs.len(),
            Step::AddPhoto { org, point, .. } => *point < model.orgs[*org].points.len(),
            Step::DropKey { key, version } => (1..=model.versions[key.index()]).contains(version),
            Step::Unheard { step, .. } => possible(model, step),
            Step::Together { a, b } => possible(model, a) && possible(model, b),
            _ => true,
        };
    };
    let org = &model.orgs[by.org];
    match step {
        Step::RenameSite { site, .. }
        | Step::ArchiveSite { site, .. }
        | Step::RestoreSite { site, .. }
        | Step::CreateLoad { site, .. }
        | Step::CreatePoint { site, .. } => *site < org.sites.len(),
        Step::Upload { load, .. }
        | Step::UploadByForm { load, .. }
        | Step::Deliver { load, .. }
        | Step::SetStatus { load, .. } => *load < org.loads.len(),
        Step::Unregister { hook, .. } => *hook < org.hooks.len(),
        Step::Recover { hook, .. } => org
            .hooks
            .get(*hook)
            .is_some_and(|h| org.at_receiver(h, |h| h.recoveries) < RECOVERIES_A_RECEIVER),
        Step::Recoveries { hook, count, .. } => org
            .hooks
            .get(*hook)
            .is_some_and(|h| org.at_receiver(h, |h| h.recoveries) + count <= RECOVERIES_A_RECEIVER),
        Step::Ping { hook, .. } => org
            .hooks
            .get(*hook)
            .is_some_and(|h| org.at_receiver(h, |h| h.pings.len()) < PINGS_A_RECEIVER),
        // A delivery the receiver got once (its id is known).
        Step::Retries { load, .. } | Step::LateReceivers { load, .. } => *load < org.loads.len(),
        Step::Retry { hook, nth, .. } => org
            .hooks
            .get(*hook)
            .and_then(|h| h.deliveries.get(*nth))
            .is_some_and(|d| d.sent > 0),
        Step::Replay { nth, .. } | Step::Reuse { nth, .. } => *nth < org.keys[by.key].keyed.len(),
        Step::Peek { of, nth, .. } => *of != by.org && *nth < model.records(*of),
        Step::Faulted { step, .. }
        | Step::Paused { step, .. }
        | Step::PausedTwice { step, .. }
        | Step::Unreadable { step }
        | Step::Late { step, .. }
        | Step::CopyPaused { step, .. } => possible(model, step),
        _ => true,
    }
}

impl ReferenceStateMachine for Model {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::new()).boxed()
    }

    fn transitions(model: &Model) -> BoxedStrategy<Step> {
        let tag = model.tag;
        let model = Arc::new(model.clone());
        // A sender and an index below `count` of theirs (0 when there is
        // none: `possible` drops the step).
        let pick = |count: fn(&Model, By) -> usize| {
            let model = model.clone();
            sender().prop_flat_map(move |by| (Just(by), 0..count(&model, by).max(1)))
        };
        let sites = |m: &Model, by: By| m.orgs[by.org].sites.len();
        let loads = |m: &Model, by: By| m.orgs[by.org].loads.len();
        let hooks = |m: &Model, by: By| m.orgs[by.org].hooks.len();
        let keyed_requests = |m: &Model, by: By| m.orgs[by.org].keys[by.key].keyed.len();
        let others = |m: &Model, by: By| m.records((by.org + 1) % ORGS);
        let deliveries = |m: &Model, by: By| {
            let hooks = &m.orgs[by.org].hooks;
            hooks.iter().map(|h| h.deliveries.len()).max().unwrap_or(0) * hooks.len()
        };
        let keyed = || prop::bool::weighted(0.7);

        let create_site =
            (sender(), keyed()).prop_map(move |(by, keyed)| Step::CreateSite { by, keyed, tag });
        let create_load =
            (pick(sites), keyed()).prop_map(move |((by, site), keyed)| Step::CreateLoad {
                by,
                site,
                keyed,
                tag,
            });
        let site_step = (pick(sites), 0..3).prop_map(move |((by, site), which)| match which {
            0 => Step::RenameSite { by, site, tag },
            1 => Step::ArchiveSite { by, site },
            _ => Step::RestoreSite { by, site },
        });
        let upload = (pick(loads), keyed()).prop_map(move |((by, load), keyed)| Step::Upload {
            by,
            load,
            keyed,
            tag,
        });
        let by_form = pick(loads).prop_map(move |(by, load)| Step::UploadByForm { by, load, tag });
        let copy_paused = pick(loads).prop_map(move |(by, load)| Step::CopyPaused {
            step: Box::new(Step::Upload {
                by,
                load,
                keyed: true,
                tag,
            }),
            tag: tag + REPLACING,
        });
        let deliver = pick(loads).prop_map(|(by, load)| Step::Deliver { by, load });
        let statuses = prop_oneof![
            3 => Just(LoadStatus::InProgress),
            1 => Just(LoadStatus::Rejected),
            1 => Just(LoadStatus::New),
        ];
        let set_status =
            (pick(loads), statuses).prop_map(|((by, load), to)| Step::SetStatus { by, load, to });
        let register =
            (sender(), 0..URLS, keyed()).prop_map(move |(by, url, keyed)| Step::Register {
                by,
                url,
                keyed,
                tag,
            });
        let unregister = pick(hooks).prop_map(|(by, hook)| Step::Unregister { by, hook });
        let recover = (pick(hooks), keyed()).prop_map(move |((by, hook), keyed)| Step::Recover {
            by,
            hook,
            keyed,
            tag,
        });
        let recoveries =
            (pick(hooks), 2..=4usize).prop_map(move |((by, hook), count)| Step::Recoveries {
                by,
                hook,
                count,
                tag,
            });
        let ping = (pick(hooks), keyed()).prop_map(move |((by, hook), keyed)| Step::Ping {
            by,
            hook,
            keyed,
            tag,
        });
        // The n-th delivery of all the sender's hooks, row by row.
        let retry = {
            let model = model.clone();
            (pick(deliveries), keyed()).prop_map(move |((by, n), keyed)| {
                let most = deliveries(&model, by) / hooks(&model, by).max(1);
                let (hook, nth) = (n / most.max(1), n % most.max(1));
                Step::Retry {
                    by,
                    hook,
                    nth,
                    keyed,
                    tag,
                }
            })
        };
        // More retries of one delivery than a list of the last few holds.
        let retries =
            (pick(loads), 0..URLS, 20..=22usize).prop_map(move |((by, load), url, others)| {
                Step::Retries {
                    by,
                    load,
                    url,
                    others,
                    tag,
                }
            });
        let ticket =
            (sender(), keyed()).prop_map(move |(by, keyed)| Step::Ticket { by, keyed, tag });
        let misreport = prop_oneof![
            Just(Misreport::Slow),
            Just(Misreport::SlowPastTheAnswer),
            Just(Misreport::FailsThenOpens),
            Just(Misreport::FailsThenOpensPastTheAnswer),
        ];
        let late = (sender(), any::<bool>(), misreport).prop_map(move |(by, ticket, tracker)| {
            Step::Late {
                tracker,
                step: Box::new(match ticket {
                    true => Step::Ticket {
                        by,
                        keyed: true,
                        tag,
                    },
                    false => Step::Geocode {
                        by,
                        keyed: true,
                        tag,
                    },
                }),
            }
        });
        let late_receivers = (pick(loads), 0..URLS)
            .prop_map(move |((by, load), url)| Step::LateReceivers { by, load, url, tag });
        let tickets =
            (sender(), 2..=7usize).prop_map(move |(by, count)| Step::Tickets { by, count, tag });
        let quoted = sender().prop_map(move |by| Step::Quoted { by, tag });
        let geocode =
            (sender(), keyed()).prop_map(move |(by, keyed)| Step::Geocode { by, keyed, tag });
        let replay = pick(keyed_requests).prop_map(|(by, nth)| Step::Replay { by, nth });
        let reuse = pick(keyed_requests).prop_map(move |(by, nth)| Step::Reuse { by, nth, tag });
        let create_point =
            (pick(sites), keyed()).prop_map(move |((by, site), keyed)| Step::CreatePoint {
                by,
                site,
                keyed,
                tag,
            });
        let add_photo = {
            let model = model.clone();
            (0..ORGS).prop_flat_map(move |org| {
                let points = model.orgs[org].points.len().max(1);
                (0..points).prop_map(move |point| Step::AddPhoto { org, point, tag })
            })
        };
        let grant = (sender(), keyed(), any::<bool>()).prop_map(move |(by, keyed, on)| {
            if on {
                Step::Grant { by, keyed, tag }
            } else {
                Step::Ungrant { by }
            }
        });
        let peek = pick(others).prop_map(|(by, nth)| Step::Peek {
            by,
            of: (by.org + 1) % ORGS,
            nth,
        });
        let wait = prop_oneof![
            3 => Just(Wait::Moment),
            3 => Just(Wait::Lease),
            2 => Just(Wait::Rollout),
            2 => Just(Wait::Hour),
            2 => Just(Wait::Retention),
        ]
        .prop_map(Step::Wait);
        let operator = prop_oneof![
            3 => sender().prop_map(|by| Step::Revoke { by }),
            3 => (0..ORGS, any::<bool>()).prop_map(|(org, on)| Step::Entitle { org, on }),
            1 => (0..ORGS).prop_map(|org| Step::Deactivate { org }),
        ];
        // Operators' key commands, with any flags.
        let key_name = prop_oneof![Just(KeyName::Seal), Just(KeyName::Cursor)];
        let overlap = prop_oneof![Just(None), Just(Some(0)), Just(Some(1)), Just(Some(24))];
        let rotate = (key_name.clone(), overlap, prop::bool::weighted(0.4))
            .prop_map(|(key, overlap, now)| Step::RotateKey { key, overlap, now });
        // Mostly the generation the last rotation replaced, as operators
        // drop; any version at times.
        let newest = model.versions;
        let drop_key = (key_name, prop::bool::weighted(0.7)).prop_flat_map(move |(key, last)| {
            let newest = newest[key.index()];
            let versions = if last && newest > 1 {
                newest - 1..=newest - 1
            } else {
                1..=newest
            };
            versions.prop_map(move |version| Step::DropKey { key, version })
        });
        let reseal = prop_oneof![
            Just(Resealing::Whole),
            Just(Resealing::Paged),
            (1..=8usize).prop_map(|at| Resealing::Killed { at }),
        ]
        .prop_map(Step::Reseal);
        // A command whose call takes effect unheard and is sent again.
        let unheard_command = prop_oneof![
            add_photo.clone(),
            rotate.clone(),
            drop_key.clone(),
            Just(Step::Reseal(Resealing::Whole)),
        ];
        let unheard = (1..=6usize, unheard_command).prop_map(|(at, step)| Step::Unheard {
            at,
            step: Box::new(step),
        });
        // Two at once, as two operators may run them.
        let one_of_two = prop_oneof![
            rotate.clone(),
            drop_key.clone(),
            Just(Step::Reseal(Resealing::Whole))
        ];
        let together = (one_of_two.clone(), one_of_two).prop_map(|(a, b)| Step::Together {
            a: Box::new(a),
            b: Box::new(b),
        });
        let keys = prop_oneof![3 => rotate, 4 => drop_key, 2 => reseal, 2 => together];
        // The requests a client retries with its key.
        let retried = prop_oneof![
            2 => create_site.clone(),
            2 => create_load.clone(),
            4 => upload.clone(),
            3 => by_form.clone(),
            3 => ticket.clone(),
            1 => geocode.clone(),
            2 => register.clone(),
            3 => retry.clone(),
            1 => recover.clone(),
            1 => create_point.clone(),
        ]
        .prop_map(Step::keyed);
        // (Not a ping: one whose announcement a fault lost waits for the
        // outbox's sweeper, which no step here runs; the crash tests of
        // exactly_once.rs break it at every call.)
        let faults = prop_oneof![
            Just(Fault::Fail),
            Just(Fault::Cut),
            Just(Fault::Die),
            Just(Fault::CutResent),
            Just(Fault::CutEvery),
        ];
        let faulted =
            (faults, 1..=9usize, retried.clone()).prop_map(|(fault, at, step)| Step::Faulted {
                fault,
                at,
                step: Box::new(step),
            });
        let twice = (3..=7usize, retried.clone()).prop_map(|(at, step)| Step::PausedTwice {
            at,
            step: Box::new(step),
        });
        let unreadable = retried.clone().prop_map(|step| Step::Unreadable {
            step: Box::new(step),
        });
        let paused =
            (3..=9usize, any::<bool>(), retried).prop_map(|(at, overtaken, step)| Step::Paused {
                at,
                overtaken,
                step: Box::new(step),
            });
        prop_oneof![
            4 => create_site,
            4 => create_load,
            5 => upload,
            3 => by_form,
            4 => deliver,
            2 => set_status,
            3 => register,
            1 => unregister,
            4 => retry,
            2 => ping,
            2 => recover,
            1 => recoveries,
            4 => Just(Step::Dispatch),
            3 => site_step,
            3 => ticket,
            2 => tickets,
            1 => quoted,
            1 => geocode,
            4 => replay,
            2 => reuse,
            3 => peek,
            2 => grant,
            2 => create_point,
            2 => add_photo,
            5 => wait,
            2 => operator,
            5 => keys,
            2 => unheard,
            1 => retries,
            1 => late_receivers,
            2 => late,
            2 => copy_paused,
            1 => unreadable,
            5 => faulted,
            4 => paused,
            2 => twice,
        ]
        .prop_filter("the records it names exist", move |step| {
            possible(&model, step)
        })
        .boxed()
    }

    fn preconditions(model: &Model, step: &Step) -> bool {
        possible(model, step)
    }

    fn apply(mut model: Model, step: &Step) -> Model {
        model.tag += 1;
        model.expect = None;
        model.command = None;
        model.target = None;
        model.before.clear();
        match step {
            Step::Revoke { by } => model.key(*by).revoked = true,
            Step::RotateKey { key, .. } => {
                let done = verdict(step) == Some(true);
                if done {
                    model.versions[key.index()] += 1;
                }
                model.command = Some(done);
            }
            // As one after the other: the loser of a race runs again.
            Step::Together { a, b } => return Self::apply(Self::apply(model, a), b),
            Step::Recoveries {
                by,
                hook,
                count,
                tag,
            } => {
                for i in 0..*count {
                    let one = Step::Recover {
                        by: By {
                            org: by.org,
                            key: (by.key + i) % KEYS,
                        },
                        hook: *hook,
                        keyed: false,
                        tag: *tag,
                    };
                    let expect = model.request(&one);
                    model.before.push(expect);
                }
            }
            Step::DropKey { .. } => {}
            Step::Reseal(_) => model.command = Some(true),
            Step::Unheard { step, .. } => return Self::apply(model, step),
            Step::Unreadable { step } => {
                model.now += shared::clock::millis(shared::keyring::HELD_FOR) + 1000;
                model.expect = Some(model.request(step));
            }
            Step::Entitle { org, on } => model.orgs[*org].entitled = *on,
            Step::Deactivate { org } => model.orgs[*org].active = false,
            Step::AddPhoto { org, point, tag } => model.orgs[*org].points[*point].push(*tag),
            Step::Dispatch => model.dispatch(),
            Step::Wait(wait) => {
                model.now += shared::clock::millis(wait.duration());
                if wait.sweeps() {
                    model.swept = true;
                }
            }
            Step::Faulted { step, .. } => {
                model.expect = Some(model.request(step));
                // A broken copy after the commit is left to the sweep.
                model.swept = false;
            }
            Step::Retries {
                by,
                load,
                url,
                others,
                tag,
            } => {
                let (by, load, tag) = (*by, *load, *tag);
                for before in Step::retries_setup(by, load, *url, tag) {
                    let expect = model.request(&before);
                    model.before.push(expect);
                }
                model.dispatch();
                // A delivery of the load to a live webhook, if any.
                let hooks = model.orgs[by.org].hooks.iter().enumerate();
                model.target = hooks.filter(|(_, h)| !h.deleted).find_map(|(i, h)| {
                    let nth = h
                        .deliveries
                        .iter()
                        .position(|d| d.load == load && d.sent > 0);
                    nth.map(|nth| (i, nth))
                });
                // Each retry request, dispatched; the message delivered
                // again adds nothing.
                if let Some((hook, nth)) = model.target {
                    for _ in 0..=*others {
                        let retry = Step::Retry {
                            by,
                            hook,
                            nth,
                            keyed: false,
                            tag,
                        };
                        let expect = model.request(&retry);
                        model.before.push(expect);
                        model.dispatch();
                    }
                }
            }
            Step::LateReceivers { by, load, url, tag } => {
                for before in Step::retries_setup(*by, *load, *url, *tag) {
                    let expect = model.request(&before);
                    model.before.push(expect);
                }
                model.dispatch_tried(2);
            }
            Step::Late { step, .. } => {
                let expect = model.request(step);
                // A ticket is held until the late call can no longer land,
                // then retried.
                if expect.status == 201 && matches!(**step, Step::Ticket { .. }) {
                    model.now += shared::clock::millis(support::LANDS_WITHIN);
                }
                model.expect = Some(expect);
            }
            Step::CopyPaused { step, tag } => {
                let expect = model.request(step);
                let second = model.request(&Step::replacing(step, *tag));
                model.before.push(second);
                model.expect = Some(expect);
            }
            Step::Paused { step, .. } => {
                model.expect = Some(model.request(step));
                model.now += shared::clock::millis(Wait::Lease.duration());
            }
            Step::PausedTwice { step, .. } => {
                model.expect = Some(model.request(step));
                model.now += 2 * shared::clock::millis(Wait::Lease.duration());
            }
            request => model.expect = Some(model.request(request)),
        }
        model
    }
}
