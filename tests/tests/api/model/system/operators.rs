//! Operators' key commands as steps, run as an operator runs them against
//! the model's table and secrets (`admin keys rotate|drop`, `admin reseal`
//! whole, paged and resumed, killed and run again), each answer read as an
//! operator reads it; and a keyed request sent to an instance that cannot
//! read its keys.

use admin::audit::Done;
use shared::deployment_key::KeySource;

use super::*;
use crate::model::steps::{KeyName, Resealing};

/// How many times the model resumes a paged reseal before it calls the
/// walk endless.
const MOST_PAGES: usize = 500;

impl System {
    /// `admin <args>` by the model's clock, through `sdk`.
    async fn admin_through(
        &self,
        sdk: &aws_config::SdkConfig,
        args: &[&str],
    ) -> anyhow::Result<Done> {
        let cli = <admin::cli::Cli as clap::Parser>::try_parse_from(
            std::iter::once("admin").chain(args.iter().copied()),
        )
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let command = admin::cli::run(cli.command, &self.state.config, sdk);
        self.clock.scope(Box::pin(command)).await
    }

    pub(super) async fn admin(&self, args: &[&str]) -> anyhow::Result<Done> {
        self.admin_through(&harness().await.sdk, args).await
    }

    /// The SDK a step's command runs through: when the step is
    /// `Step::Unheard`, one whose `at`-th call takes effect unheard and is
    /// sent again (retries on, as deployed); else the plain one.
    pub(super) async fn operator_sdk(&self) -> aws_config::SdkConfig {
        let sdk = &harness().await.sdk;
        match self.unheard_at.lock().unwrap().take() {
            Some(at) => {
                self.unheard.arm(Cut::Cut, at);
                self.unheard.sdk_retrying(sdk)
            }
            None => sdk.clone(),
        }
    }

    /// `admin <args>`, the step's command (`operator_sdk`).
    async fn command(&self, args: &[&str]) -> anyhow::Result<Done> {
        let sdk = self.operator_sdk().await;
        let done = self.admin_through(&sdk, args).await;
        self.unheard.disarm();
        done
    }

    /// The generations `admin keys show` lists for `key`.
    pub async fn generations(&self, key: KeyName) -> Vec<Value> {
        let shown = self
            .admin(&["keys", "show", "--key", key.as_str()])
            .await
            .expect("keys show");
        shown.lines[0]["generations"].as_array().unwrap().clone()
    }

    /// The secret that holds `key`'s ring.
    pub fn source(&self, key: KeyName) -> KeySource {
        let config = &self.state.config;
        match key {
            KeyName::Seal => config.webhooks.seal_key.clone(),
            KeyName::Cursor => config.http.cursor_key.clone(),
        }
        .expect("the model's keys are in Secrets Manager")
    }

    /// `admin keys rotate`, done or refused as the reference says; what
    /// it did, read back from its own answer.
    pub(super) async fn rotate(
        &self,
        model: &Model,
        step: &Step,
        key: KeyName,
        overlap: Option<u32>,
        now: bool,
    ) {
        let hours = overlap.map(|h| h.to_string());
        let mut args = vec!["keys", "rotate", "--key", key.as_str()];
        if let Some(hours) = &hours {
            args.extend(["--overlap-hours", hours]);
        }
        if now {
            args.push("--now");
        }
        let before = self.generations(key).await;
        let done = self.command(&args).await;
        let must = model.command.expect("the reference's verdict");
        assert_eq!(done.is_ok(), must, "{step}: {done:?}");
        let Ok(done) = done else {
            assert_eq!(
                self.generations(key).await,
                before,
                "{step}: refused, yet changed"
            );
            return;
        };
        let generations = done.lines[0]["generations"].as_array().unwrap().clone();
        assert_eq!(
            generations,
            self.generations(key).await,
            "{step}: read back"
        );
        let newest = &generations[0];
        assert_eq!(newest["version"], model.versions[key.index()], "{step}");
        assert_eq!(
            newest["signs"], now,
            "{step}: signs at once only with --now"
        );
        assert!(newest["until"].is_null(), "{step}: the newest has no end");
        let older = &generations[1..];
        assert!(
            now || older.iter().any(|g| g["signs"] == true),
            "{step}: nothing signs until the rollout"
        );
        // The cursor key's generations before stop verifying at once with
        // --now and no overlap; the seal key's stay, opening.
        let ended_now = key == KeyName::Cursor && now && overlap.unwrap_or(0) == 0;
        for (was, is) in before.iter().zip(older) {
            assert_eq!(
                was["version"], is["version"],
                "{step}: kept every generation"
            );
            if was["held"] == true {
                assert_eq!(is["held"], !ended_now, "{step}: {is}");
            }
        }
    }

    /// `admin keys drop`: whatever it decides, the ring it leaves signs
    /// now and for good, a refusal changes nothing, and every answer kept
    /// for an `Idempotency-Key` is still answered, by an instance that
    /// reads the keys as they are now.
    pub(super) async fn drop_key(&self, model: &Model, step: &Step, key: KeyName, version: u32) {
        let before = self.generations(key).await;
        let version_arg = version.to_string();
        let done = self
            .command(&[
                "keys",
                "drop",
                "--key",
                key.as_str(),
                "--version",
                &version_arg,
            ])
            .await;
        let after = self.generations(key).await;
        match done {
            Err(error) => assert_eq!(after, before, "{step}: refused ({error}), yet changed"),
            Ok(_) => {
                // The others as they were, but for when each may be
                // dropped: the one before a dropped generation that had
                // yet to sign signs on until the next one does.
                let without = |g: &Value| {
                    let mut g = g.clone();
                    g.as_object_mut().map(|g| g.remove("droppable_from"));
                    g
                };
                let left: Vec<Value> = before
                    .iter()
                    .filter(|g| g["version"] != version)
                    .map(without)
                    .collect();
                let kept: Vec<Value> = after.iter().map(without).collect();
                assert_eq!(kept, left, "{step}: read back");
                let droppable = |g: &Value| {
                    let at = g["droppable_from"].as_str()?;
                    Some(chrono::DateTime::parse_from_rfc3339(at).expect("a time"))
                };
                for (was, is) in before
                    .iter()
                    .filter(|g| g["version"] != version)
                    .zip(&after)
                {
                    let (was, is) = (droppable(was), droppable(is));
                    assert!(
                        is.is_none() || was.is_some_and(|was| is.is_some_and(|is| is >= was)),
                        "{step}: a generation kept may be dropped sooner ({is:?}, was {was:?})"
                    );
                }
                assert_eq!(after[0], before[0], "{step}: the newest stays");
                self.kept_answers_replay(model, step).await;
            }
        }
    }

    /// Every answer kept now, asked for again through a new instance (one
    /// that reads the keys as the secrets hold them now): replayed as kept.
    async fn kept_answers_replay(&self, model: &Model, step: &Step) {
        let mut state = AppState::new((*self.state.config).clone(), &harness().await.sdk);
        state.clock = self.clock.clone();
        let fresh = shared::http::app(local::routes(), state);
        for name in model.kept_now() {
            let Some(Sent {
                request,
                answer: Some((status, text)),
            }) = self.sent.get(&name)
            else {
                continue;
            };
            let again = Self::send_to(request, &fresh).await;
            assert_eq!(
                (
                    again.status.as_u16(),
                    &again.text,
                    again.header("idempotent-replayed")
                ),
                (*status, text, "true"),
                "{step}: {name}'s kept answer, asked for again"
            );
        }
    }

    /// `admin reseal`, as `how` runs it: every run opens every value.
    pub(super) async fn reseal(&self, step: &Step, how: Resealing) {
        let opened = |done: &Done| {
            assert_eq!(done.lines[0]["unopenable"], 0, "{step}: {:?}", done.lines);
        };
        match how {
            Resealing::Whole => {}
            Resealing::Paged => {
                let mut done = self
                    .admin(&["reseal", "--page-items", "10", "--pages", "1"])
                    .await
                    .expect("reseal, one page");
                for _ in 0..MOST_PAGES {
                    opened(&done);
                    let Some(resume) = done.lines[0]["resume"].as_str().map(str::to_owned) else {
                        return;
                    };
                    done = self
                        .admin(&[
                            "reseal",
                            "--page-items",
                            "10",
                            "--pages",
                            "1",
                            "--resume",
                            &resume,
                        ])
                        .await
                        .expect("reseal, resumed");
                }
                panic!("{step}: the reseal never ended");
            }
            Resealing::Killed { at } => {
                let sdk = self.killing.sdk(&harness().await.sdk);
                self.killing.arm(Cut::Die, at);
                tokio::select! {
                    _ = self.admin_through(&sdk, &["reseal"]) => {}
                    () = self.killing.died() => {}
                }
                self.killing.disarm();
            }
        }
        let done = self.command(&["reseal"]).await.expect("reseal");
        opened(&done);
    }

    /// `step` sent to the faulty instance while it cannot read its keys
    /// and last read them more than `HELD_FOR` ago: refused, 500, nothing
    /// done; then the client retries on the plain instance.
    pub(super) async fn unreadable(&mut self, model: &Model, step: &Step, expect: Expect) {
        let marks = self.mark();
        let late = shared::keyring::HELD_FOR + Duration::from_secs(1);
        let Some(request) = self.prepared(model, step, expect, marks).await else {
            self.clock.advance(late);
            return;
        };
        self.cuts.arm_each(Cut::Fail, "secretsmanager", usize::MAX);
        self.clock.advance(late);
        let refused = self.send(&request, true).await;
        self.cuts.disarm();
        assert_eq!(
            (refused.status.as_u16(), refused.code()),
            (500, "internal_error"),
            "{step}: an instance that cannot read its keys answered {}",
            refused.text
        );
        let retry = self.retried(&request).await;
        self.conclude(model, step, &request, &retry, expect, marks);
    }
}
