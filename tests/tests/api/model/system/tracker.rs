//! The tracker's stand-in, and the step that quotes the lines naming a
//! request in a ticket of the customer's own (`Step::Quoted`): a later
//! attempt of that request looks for its issue by the lines the service
//! wrote, never by a customer's text.

use std::collections::HashMap;

use api_tests::providers::Gate;

use super::super::steps::By;
use super::*;

/// The service's wait for the providers in the model (`SUPPORT_TIMEOUT_MS`
/// and the geocoder's, the dispatcher's for a receiver): ample for a
/// loopback answer on a starved machine.
pub const TIMEOUT: Duration = api_tests::providers::PROVIDER_TIMEOUT;
/// A receiver's late answer: long after the dispatcher stopped waiting.
/// (A slow issue and a slow geocoding are held by a gate instead: they
/// answer when the model says so, or never.)
pub const SLOW: Duration = Duration::from_secs(30);

/// The providers' switches: while `refusing` is set, the tracker refuses
/// the next issue it is asked to open (422: a 4xx says nothing was
/// opened; a 5xx may have been, `support.rs`) and clears it; while `slow`
/// is set, the next issue it opens lands late (answered, and in its list,
/// once `land_late` is called) and it clears it; while `failing` is set,
/// the next issue it opens is answered 502 at once and lands (in its list)
/// once `land_late` is called, and it clears it; while `slow_geocoder` is
/// set, the geocoder never answers its next request and clears it.
pub(super) struct Temper {
    pub refusing: Arc<AtomicBool>,
    pub slow: Arc<AtomicBool>,
    pub failing: Arc<AtomicBool>,
    pub slow_geocoder: Arc<AtomicBool>,
    /// The gates of the issues opened late, not yet landed.
    landing: Arc<Mutex<Vec<Gate>>>,
}

impl Temper {
    /// Every issue opened late lands now.
    pub fn land_late(&self) {
        for gate in self.landing.lock().unwrap().drain(..) {
            gate.open();
        }
    }
}

/// A GitHub that keeps the issues it opens (dated by `clock`) and lists
/// those that have landed newest first, refusing or slow as `Temper`
/// says; a duplicate's comment and close are taken (the issue marked
/// `closed`), never read as an issue opened.
pub(super) async fn start(clock: Clock) -> (StandIn, Arc<Mutex<Vec<Value>>>, Temper) {
    let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
    let temper = Temper {
        refusing: Arc::new(AtomicBool::new(false)),
        slow: Arc::new(AtomicBool::new(false)),
        failing: Arc::new(AtomicBool::new(false)),
        slow_geocoder: Arc::new(AtomicBool::new(false)),
        landing: Arc::default(),
    };
    let (kept, refuse, slow) = (issues.clone(), temper.refusing.clone(), temper.slow.clone());
    let failing = temper.failing.clone();
    let landing = temper.landing.clone();
    let lands: Arc<Mutex<HashMap<u64, Gate>>> = Arc::default();
    let tracker = StandIn::start(move |seen, _| {
        let mut issues = kept.lock().unwrap();
        let mut lands = lands.lock().unwrap();
        if seen.method == Method::GET {
            let landed = |issue: &&Value| {
                let number = issue["number"].as_u64().unwrap_or(0);
                lands.get(&number).is_none_or(Gate::is_open)
            };
            let newest_first: Vec<Value> = issues.iter().rev().filter(landed).cloned().collect();
            return Canned::json(200, Value::Array(newest_first));
        }
        // A duplicate closed (`shared::tracker::duplicates`): its comment,
        // then its state.
        let path = seen.uri.path().to_owned();
        if path.ends_with("/comments") {
            return Canned::json(201, json!({"id": 1}));
        }
        if seen.method == Method::PATCH {
            let number = path.rsplit('/').next().and_then(|n| n.parse::<u64>().ok());
            for issue in issues.iter_mut().filter(|i| i["number"].as_u64() == number) {
                issue["state"] = json!("closed");
            }
            return Canned::json(200, json!({"state": "closed"}));
        }
        if refuse.swap(false, Ordering::SeqCst) {
            return api_tests::providers::github_error(422, "Validation Failed");
        }
        let sent = seen.json();
        let number = 1000 + issues.len() as u64;
        let issue = json!({
            "number": number,
            "title": sent["title"],
            "body": sent["body"],
            "created_at": clock.now().to_rfc3339(),
        });
        issues.push(issue.clone());
        let (late, fails) = (
            slow.swap(false, Ordering::SeqCst),
            failing.swap(false, Ordering::SeqCst),
        );
        if !late && !fails {
            return Canned::json(201, issue);
        }
        let gate = Gate::default();
        lands.insert(number, gate.clone());
        landing.lock().unwrap().push(gate.clone());
        match fails {
            true => api_tests::providers::github_error(502, "Server Error"),
            false => Canned::json(201, issue).held(&gate),
        }
    })
    .await;
    (tracker, issues, temper)
}

impl System {
    /// `Step::Quoted`'s first two requests (its last is sent as any
    /// step's): the keyed ticket, refused by the tracker, and the ticket
    /// that quotes the lines naming it. A refused key sends the last alone.
    pub(super) async fn quoted(&mut self, model: &Model, by: By, tag: u32) {
        let [first, quote] = model.before[..] else {
            return;
        };
        let keyed = Step::Ticket {
            by,
            keyed: true,
            tag,
        };
        let request = self.prepare(model, &keyed).await.expect("a ticket");
        let marks = self.mark();
        self.temper.refusing.store(true, Ordering::SeqCst);
        let reply = self.send(&request, false).await;
        self.temper.refusing.store(false, Ordering::SeqCst);
        self.check(&keyed, &reply, first, None, marks);

        // The request's id, from its record in the table (none after a 429).
        let (org, key_id) = (self.orgs[by.org].id, self.orgs[by.org].keys[by.key].1);
        let name = keyed.idempotency_key().expect("a keyed ticket");
        let item = self.state.store.idempotency().get(key_id, &name).await;
        let rid = item
            .expect("the idempotency record read")
            .and_then(|item| item.get("rid").and_then(|r| r.as_s().ok()).cloned())
            .unwrap_or_else(|| Uuid::now_v7().to_string());
        let lines = api_tests::providers::quoting_the_lines_of(org, key_id, rid);
        let plain = Step::Ticket {
            by,
            keyed: false,
            tag,
        };
        let mut quoting = self.prepare(model, &plain).await.expect("a ticket");
        let body = json!({"title": format!("Quote {tag}"), "description": lines});
        quoting.body = Some(("application/json".into(), body.to_string().into_bytes()));
        let marks = self.mark();
        let reply = self.send(&quoting, false).await;
        self.check(&plain, &reply, quote, None, marks);
    }
}

/// The geocoding provider: it finds every address, at once, or after the
/// service stopped waiting while `slow` is set (which it clears).
pub(super) async fn geocoder(slow: Arc<AtomicBool>) -> StandIn {
    StandIn::start(move |_, _| {
        let mut found = api_tests::providers::google_found(
            "Mannerheimintie 1, Helsinki",
            60.17,
            24.94,
            "ROOFTOP",
            false,
        );
        if slow.swap(false, Ordering::SeqCst) {
            found = found.held(&Gate::default());
        }
        found
    })
    .await
}
