//! The local stand-in for the SQS event source mapping: takes the messages
//! visible on the local webhook queue (moto), hands them to the dispatcher
//! as one batch, and deletes those it did not return (a returned message
//! keeps the visibility the dispatcher gave it). Short polls once a second:
//! a long poll would outlast the SDK's 3 s attempt (`shared::aws`). Also
//! runs the sweeper.

use std::time::Duration;

use webhook_dispatcher::policy::Policy;

/// How the local dispatcher runs, from the environment: whether it runs
/// at all (`LOCAL_DISPATCHER`, default `on` when a queue is set), its
/// policy with the waits between attempts (`WEBHOOK_SCHEDULE_SECONDS`, a
/// comma-separated list), the lease and the sweeper's settle time
/// (`WEBHOOK_LEASE_SECONDS`, `WEBHOOK_SWEEP_SETTLE_SECONDS`, a slowed
/// receiver's gap `WEBHOOK_SLOWED_GAP_SECONDS`) replaced, and
/// how often it sweeps (`LOCAL_SWEEP_SECONDS`, 60) and how many batches it
/// handles at once (`LOCAL_POLLERS`, 1). For runs that must see retries
/// and sweeps within minutes (`make soak`); production's policy is the
/// dispatcher's own.
pub struct Setup {
    pub enabled: bool,
    pub policy: Policy,
    pub sweep_every: Duration,
    pub pollers: usize,
}

impl Setup {
    pub fn from_env() -> anyhow::Result<Setup> {
        Setup::from_vars(|name| std::env::var(name).ok())
    }

    /// The setup the variables `get` gives say (an empty one is unset).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> anyhow::Result<Setup> {
        let var = |name: &str| get(name).filter(|v| !v.is_empty());
        let seconds = |name: &str| -> anyhow::Result<Option<Duration>> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| anyhow::anyhow!("{name} must be a number of seconds"))
                })
                .transpose()
        };
        let mut policy = Policy::default();
        if let Some(list) = var("WEBHOOK_SCHEDULE_SECONDS") {
            policy.schedule = list
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64)
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    anyhow::anyhow!("WEBHOOK_SCHEDULE_SECONDS must be seconds, comma-separated")
                })?;
        }
        if let Some(lease) = seconds("WEBHOOK_LEASE_SECONDS")? {
            policy.lease = lease;
        }
        if let Some(settle) = seconds("WEBHOOK_SWEEP_SETTLE_SECONDS")? {
            policy.sweep_settle = settle;
        }
        // A schedule of seconds keeps a slowed receiver's minute out of
        // scale: its attempts then go this far apart instead.
        if let Some(gap) = seconds("WEBHOOK_SLOWED_GAP_SECONDS")? {
            policy.receivers.slow_gap = gap;
        }
        let sweep_every = seconds("LOCAL_SWEEP_SECONDS")?
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_millis(100));
        let enabled = var("LOCAL_DISPATCHER").is_none_or(|v| v != "off");
        let pollers = match var("LOCAL_POLLERS") {
            None => 1,
            Some(n) => n
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| anyhow::anyhow!("LOCAL_POLLERS must be 1 to 64"))?,
        };
        Ok(Setup {
            enabled,
            policy,
            sweep_every,
            pollers,
        })
    }
}

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use shared::queue::WebhookQueue;
use shared::{ApiError, ApiResult};
use webhook_dispatcher::{Dispatcher, Invocation};

/// Hands one batch of visible messages to `dispatcher`. Returns how many
/// messages it took.
pub async fn poll_once(dispatcher: &Dispatcher, queue: &WebhookQueue) -> ApiResult<usize> {
    poll_once_in(dispatcher, queue, Invocation::default()).await
}

/// `poll_once` as the invocation Lambda would make it: the batch as its
/// event, through the entry `main` uses, with `invocation`'s context.
pub async fn poll_once_in(
    dispatcher: &Dispatcher,
    queue: &WebhookQueue,
    invocation: Invocation,
) -> ApiResult<usize> {
    let received = queue.receive(10).await?;
    if received.is_empty() {
        return Ok(0);
    }
    let mut batch = SqsEvent::default();
    batch.records = received
        .iter()
        .map(|message| {
            let mut record = SqsMessage::default();
            record.message_id = message.message_id.clone();
            record.receipt_handle = message.receipt_handle.clone();
            record.body = message.body.clone();
            record
        })
        .collect();
    let event = serde_json::to_value(batch).map_err(ApiError::internal)?;
    let answer = dispatcher
        .invoke(event, invocation)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let response: SqsBatchResponse = serde_json::from_value(answer).map_err(ApiError::internal)?;
    for message in &received {
        let returned = response
            .batch_item_failures
            .iter()
            .any(|failure| Some(&failure.item_identifier) == message.message_id.as_ref());
        if !returned {
            queue
                .delete(message.receipt_handle.as_deref().unwrap_or_default())
                .await?;
        }
    }
    Ok(received.len())
}

/// Polls with `setup.pollers` loops at once (as the event source mapping
/// runs several invocations when messages wait), each at once again after
/// a batch and a second after an empty poll, and sweeps every
/// `setup.sweep_every`, until the process ends.
pub async fn run(dispatcher: Dispatcher, queue: WebhookQueue, setup: &Setup) {
    let dispatcher = std::sync::Arc::new(dispatcher);
    for _ in 0..setup.pollers {
        let (dispatcher, queue) = (dispatcher.clone(), queue.clone());
        tokio::spawn(async move {
            loop {
                match poll_once(&dispatcher, &queue).await {
                    Ok(taken) if taken > 0 => continue,
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "webhook queue poll failed"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
    let mut sweep = tokio::time::interval(setup.sweep_every);
    loop {
        sweep.tick().await;
        if let Err(error) = dispatcher.scheduled().await {
            tracing::warn!(%error, "sweep failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(vars: &[(&str, &str)]) -> anyhow::Result<Setup> {
        Setup::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_defaults_are_the_dispatchers_own_one_poller_a_sweep_a_minute() {
        let s = setup(&[]).unwrap();
        assert!(s.enabled);
        assert_eq!(s.pollers, 1);
        assert_eq!(s.sweep_every, Duration::from_secs(60));
        assert_eq!(s.policy.schedule, Policy::default().schedule);
    }

    #[test]
    fn a_soak_shortens_the_schedule_and_polls_with_several() {
        let s = setup(&[
            ("LOCAL_DISPATCHER", "off"),
            ("LOCAL_POLLERS", "4"),
            ("WEBHOOK_SCHEDULE_SECONDS", "1, 2,0.5"),
            ("WEBHOOK_LEASE_SECONDS", "5"),
            ("WEBHOOK_SWEEP_SETTLE_SECONDS", "15"),
            ("WEBHOOK_SLOWED_GAP_SECONDS", "0.5"),
            ("LOCAL_SWEEP_SECONDS", "5"),
        ])
        .unwrap();
        assert!(!s.enabled);
        assert_eq!(s.pollers, 4);
        let secs = Duration::from_secs_f64;
        assert_eq!(s.policy.schedule, [secs(1.0), secs(2.0), secs(0.5)]);
        assert_eq!(s.policy.lease, secs(5.0));
        assert_eq!(s.policy.sweep_settle, secs(15.0));
        assert_eq!(s.sweep_every, secs(5.0));
        assert_eq!(s.policy.receivers.slow_gap, secs(0.5));
    }

    #[test]
    fn settings_that_make_no_sense_are_refused() {
        for bad in [
            ("LOCAL_POLLERS", "0"),
            ("LOCAL_POLLERS", "many"),
            ("WEBHOOK_SCHEDULE_SECONDS", "1,,2"),
            ("WEBHOOK_SCHEDULE_SECONDS", "-1"),
            ("WEBHOOK_LEASE_SECONDS", "soon"),
            ("WEBHOOK_SLOWED_GAP_SECONDS", "-1"),
        ] {
            assert!(setup(&[bad]).is_err(), "{bad:?}");
        }
    }
}
