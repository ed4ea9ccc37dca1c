//! Steps that run at once: recoveries of one receiver sent together, and
//! two operators' key commands started at the same moment.

use admin::audit::Done;

use super::*;
use crate::model::reference::verdict;
use crate::model::steps::{KeyName, Resealing};

/// What a command that lost the keyring's compare-and-swap says
/// (`admin keys`): nothing written, run it again.
const RUN_AGAIN: &str = "run it again";

impl System {
    /// `Step::Recoveries`: each recovery answered as the reference says,
    /// whichever ran first; the invariants then hold the receiver's
    /// requests to what the deliveries allow.
    pub(super) async fn recoveries(&mut self, model: &Model, step: &Step) {
        let Step::Recoveries {
            by,
            hook,
            count,
            tag,
        } = *step
        else {
            unreachable!("recoveries at once")
        };
        let mut sent = Vec::new();
        for (i, expect) in model.before.iter().enumerate().take(count) {
            let one = Step::Recover {
                by: By {
                    org: by.org,
                    key: (by.key + i) % self.orgs[by.org].keys.len(),
                },
                hook,
                keyed: false,
                tag,
            };
            let request = self
                .prepare(model, &one)
                .await
                .expect("a recovery's request");
            sent.push((one, request, *expect));
        }
        let marks = self.mark();
        let replies =
            futures::future::join_all(sent.iter().map(|(_, request, _)| self.send(request, false)))
                .await;
        for ((one, request, expect), reply) in sent.iter().zip(&replies) {
            self.check(one, reply, *expect, Some(request), marks);
            if reply.status == 202 {
                // Every delivery of the model ends succeeded in the step
                // that attempted it: nothing to queue, whoever asks.
                assert_eq!(reply.body["data"]["queued"], 0, "{step}: {}", reply.text);
            }
        }
    }

    /// `Step::Together`: both commands at once; one told to run again runs
    /// again. Each ends done or refused as the reference says, the rings'
    /// newest versions are the two one after the other's, and a reseal
    /// leaves nothing unopenable.
    pub(super) async fn together(&self, model: &Model, step: &Step, a: &Step, b: &Step) {
        let (args_a, args_b) = (arguments(a), arguments(b));
        let (words_a, words_b) = (words(&args_a), words(&args_b));
        let (first, second) = tokio::join!(self.admin(&words_a), self.admin(&words_b));
        let mut raced = 0;
        for (one, args, done) in [(a, &words_a, first), (b, &words_b, second)] {
            let done = match done {
                Err(error) if format!("{error:#}").contains(RUN_AGAIN) => {
                    raced += 1;
                    self.admin(args).await
                }
                done => done,
            };
            if let Some(must) = verdict(one) {
                assert_eq!(done.is_ok(), must, "{step}: {one}: {done:?}");
            }
            if let (Step::Reseal(_), Ok(done)) = (one, &done) {
                opened(step, done);
            }
        }
        assert!(raced < 2, "{step}: both told to run again");
        for key in [KeyName::Seal, KeyName::Cursor] {
            let generations = self.generations(key).await;
            assert_eq!(
                generations[0]["version"],
                model.versions[key.index()],
                "{step}: {}'s newest generation",
                key.as_str()
            );
        }
    }
}

fn words(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn opened(step: &Step, done: &Done) {
    assert_eq!(done.lines[0]["unopenable"], 0, "{step}: {:?}", done.lines);
}

/// The command line of an operator's step.
fn arguments(step: &Step) -> Vec<String> {
    let words = |w: &[&str]| w.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    match step {
        Step::RotateKey { key, overlap, now } => {
            let mut args = words(&["keys", "rotate", "--key", key.as_str()]);
            if let Some(hours) = overlap {
                args.extend(["--overlap-hours".to_owned(), hours.to_string()]);
            }
            if *now {
                args.push("--now".to_owned());
            }
            args
        }
        Step::DropKey { key, version } => {
            let mut args = words(&["keys", "drop", "--key", key.as_str(), "--version"]);
            args.push(version.to_string());
            args
        }
        Step::Reseal(Resealing::Whole) => words(&["reseal"]),
        other => unreachable!("{other} is no command that runs beside another"),
    }
}
