//! The audit trail of the operator CLI. Every command that changes
//! something runs through `Auditor::run`: a `started` record in DynamoDB
//! before it acts, its outcome (`succeeded`, `refused`, `failed`) before it
//! answers. Who ran it is the caller's AWS identity as STS reports it
//! (`GetCallerIdentity`), with the source identity STS set on its role
//! session when the CLI assumed the role with one (`identity`). A secret
//! the command hands out is in its output only, never in a record.

use std::future::Future;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shared::ApiError;
use shared::model::Timestamp;
use shared::store::Store;
use shared::store::operators::audit::{AuditOutcome, AuditRecord};
use uuid::Uuid;

/// What a command is about to do, as its audit records say it.
#[derive(Clone, Debug)]
pub struct Action {
    /// The command as typed: `create-key`, `webhooks register`.
    pub command: &'static str,
    /// The organization it concerns, if any (yet).
    pub org: Option<Uuid>,
    /// What it acts on: ids and settings, never a secret.
    pub target: Value,
}

impl Action {
    pub fn new(command: &'static str, org: Option<Uuid>, target: Value) -> Self {
        Self {
            command,
            org,
            target,
        }
    }
}

/// What a command did: its output lines, and for its audit the
/// organization it made (if it made one) and the ids it made.
#[derive(Debug, Default)]
pub struct Done {
    pub lines: Vec<Value>,
    pub org: Option<Uuid>,
    pub made: Option<Value>,
}

impl Done {
    pub fn lines(lines: Vec<Value>) -> Self {
        Self {
            lines,
            ..Self::default()
        }
    }

    pub fn line(line: Value) -> Self {
        Self::lines(vec![line])
    }

    /// The ids the command made (`{"key_id": ...}`), for the audit.
    pub fn made(mut self, made: Value) -> Self {
        self.made = Some(made);
        self
    }

    /// The organization the command made.
    pub fn in_org(mut self, org: Uuid) -> Self {
        self.org = Some(org);
        self
    }
}

/// Writes the audit records of commands run by one operator.
pub struct Auditor {
    store: Store,
    operator: String,
    source_identity: Option<String>,
}

impl Auditor {
    /// The operator as STS names the caller (moto answers locally).
    pub async fn new(sdk: &aws_config::SdkConfig, store: Store) -> Result<Self> {
        Self::of(&crate::identity::Operator::as_configured(sdk), store).await
    }

    /// `operator` as STS names it, with its session's source identity.
    pub async fn of(operator: &crate::identity::Operator, store: Store) -> Result<Self> {
        let identity = aws_sdk_sts::Client::new(&operator.sdk)
            .get_caller_identity()
            .send()
            .await
            .map_err(|e| anyhow::anyhow!(aws_sdk_sts::error::DisplayErrorContext(e).to_string()))
            .context("who is calling (STS GetCallerIdentity); nothing was done")?;
        let arn = identity
            .arn
            .context("STS named no caller ARN; nothing was done")?;
        Ok(Self {
            store,
            operator: arn,
            source_identity: operator.source_identity.clone(),
        })
    }

    pub fn operator(&self) -> &str {
        &self.operator
    }

    /// Runs `work` between its `started` record and its outcome's. Nothing
    /// runs unless `started` is written; the outcome is written before the
    /// answer is returned (a failure to write it fails the command, its
    /// output printed all the same, so a secret it made is not lost).
    pub async fn run(
        &self,
        action: Action,
        work: impl Future<Output = Result<Done>>,
    ) -> Result<Done> {
        let id = Uuid::now_v7();
        let record = |outcome, org, target: Value, error: Option<&anyhow::Error>| {
            let (code, message) = error.map(describe).unzip();
            AuditRecord {
                id,
                at: Timestamp::now(),
                operator: self.operator.clone(),
                source_identity: self.source_identity.clone(),
                command: action.command.to_owned(),
                org_id: org,
                target,
                outcome,
                code,
                message,
            }
        };
        let started = record(
            AuditOutcome::Started,
            action.org,
            action.target.clone(),
            None,
        );
        self.store
            .audit()
            .append(&started)
            .await
            .context("writing the audit record; nothing was done")?;
        let result = work.await;
        let outcome = match &result {
            Ok(done) => {
                let mut target = action.target.clone();
                if let Some(made) = &done.made {
                    target["made"] = made.clone();
                }
                record(
                    AuditOutcome::Succeeded,
                    done.org.or(action.org),
                    target,
                    None,
                )
            }
            Err(error) => record(
                outcome_of(error),
                action.org,
                action.target.clone(),
                Some(error),
            ),
        };
        if let Err(error) = self.store.audit().append(&outcome).await {
            if let Ok(done) = &result {
                for line in &done.lines {
                    println!("{line}");
                }
            }
            return Err(anyhow::Error::from(error).context(format!(
                "the command ran, but its outcome's audit record (id {id}) was not written"
            )));
        }
        result
    }
}

/// A refusal (the rules or the store said no) or a failure.
fn outcome_of(error: &anyhow::Error) -> AuditOutcome {
    match error.downcast_ref::<ApiError>() {
        Some(api) if api.status().is_client_error() => AuditOutcome::Refused,
        _ => AuditOutcome::Failed,
    }
}

/// An error's code and message for its record.
fn describe(error: &anyhow::Error) -> (String, String) {
    let code = error
        .downcast_ref::<ApiError>()
        .map_or("error", ApiError::code);
    let mut message = format!("{error:#}");
    if message.len() > 500 {
        let mut end = 500;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    (code.to_owned(), message)
}

/// `url` without what may carry a credential: its scheme, host and port
/// only (Slack- and Discord-style addresses carry their token in the path,
/// others in the query or the user part).
pub fn shown_url(url: &str) -> Value {
    match url::Url::parse(url) {
        Ok(parsed) => json!(format!(
            "{}://{}",
            parsed.scheme(),
            &parsed[url::Position::BeforeHost..url::Position::AfterPort]
        )),
        Err(_) => json!("(not a URL)"),
    }
}
