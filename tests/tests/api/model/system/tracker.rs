//! The tracker's stand-in, and the step that quotes the lines naming a
//! request in a ticket of the customer's own (`Step::Quoted`): a later
//! attempt of that request looks for its issue by the lines the service
//! wrote, never by a customer's text.

use super::super::steps::By;
use super::*;

/// A GitHub that keeps the issues it opens (dated by `clock`) and lists
/// them newest first; while the flag returned is set, it refuses the next
/// issue it is asked to open (500) and clears the flag.
pub(super) async fn start(clock: Clock) -> (StandIn, Arc<Mutex<Vec<Value>>>, Arc<AtomicBool>) {
    let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
    let refusing = Arc::new(AtomicBool::new(false));
    let (kept, refuse) = (issues.clone(), refusing.clone());
    let tracker = StandIn::start(move |seen, _| {
        let mut issues = kept.lock().unwrap();
        if seen.method == Method::GET {
            let newest_first: Vec<Value> = issues.iter().rev().cloned().collect();
            return Canned::json(200, Value::Array(newest_first));
        }
        if refuse.swap(false, Ordering::SeqCst) {
            return api_tests::providers::github_error(500, "Server Error");
        }
        let sent = seen.json();
        let issue = json!({
            "number": 1000 + issues.len(),
            "title": sent["title"],
            "body": sent["body"],
            "created_at": clock.now().to_rfc3339(),
        });
        issues.push(issue.clone());
        Canned::json(201, issue)
    })
    .await;
    (tracker, issues, refusing)
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
        self.refusing.store(true, Ordering::SeqCst);
        let reply = self.send(&request, false).await;
        self.refusing.store(false, Ordering::SeqCst);
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
