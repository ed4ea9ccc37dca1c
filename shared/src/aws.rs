//! The one place the AWS SDK's retries and timeouts are set. Every client
//! (DynamoDB, S3, SQS, Secrets Manager) is built from the configuration
//! `sdk_config` loads, so a call to AWS is bounded the same way everywhere:
//! an answer that does not come is given up after `attempt`, a throttled
//! or failed attempt is tried again at most `max_attempts` times in all
//! with a short jittered backoff, and the whole call ends within
//! `operation`. A call that still fails is the request's 500
//! `internal_error`, well inside the function's own timeout (10 s and up).
//! The local stack (DynamoDB Local, moto for S3, SQS and Secrets Manager)
//! answers within the same limits; `AWS_SDK_ATTEMPT_TIMEOUT_MS` lengthens
//! the attempts there only (`endpoints`), for a developer who needs it.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};

/// How long and how often a call to AWS may try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdkLimits {
    /// Establishing a connection.
    pub connect: Duration,
    /// One attempt, from sending to the whole answer.
    pub attempt: Duration,
    /// The whole call, retries and backoff included.
    pub operation: Duration,
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff; each further one doubles, up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for SdkLimits {
    /// In AWS a DynamoDB call answers in milliseconds and a few MB reach
    /// S3 well under a second; the local engines, under a parallel test
    /// run or a load test, stay inside these too.
    fn default() -> Self {
        SdkLimits {
            connect: Duration::from_secs(3),
            attempt: Duration::from_secs(3),
            operation: Duration::from_secs(7),
            max_attempts: 3,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(500),
        }
    }
}

impl SdkLimits {
    /// These limits with attempts of `attempt`, the whole call as long as
    /// its attempts and backoffs can take.
    pub fn with_attempt(self, attempt: Duration) -> Self {
        SdkLimits {
            attempt,
            operation: attempt * self.max_attempts + self.max_backoff * self.max_attempts,
            ..self
        }
    }

    pub fn timeouts(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect)
            .operation_attempt_timeout(self.attempt)
            .operation_timeout(self.operation)
            .build()
    }

    pub fn retries(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts)
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }
}

/// The standard configuration chain (region, credentials, and on the local
/// stack `AWS_ENDPOINT_URL` for moto and `AWS_ENDPOINT_URL_DYNAMODB` for
/// DynamoDB Local, which each service's client resolves) with `limits`.
pub async fn sdk_config(limits: SdkLimits) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .timeout_config(limits.timeouts())
        .retry_config(limits.retries())
        .load()
        .await
}
