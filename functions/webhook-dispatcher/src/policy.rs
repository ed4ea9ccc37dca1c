//! The delivery policy, in one place: what counts as success, how long an
//! attempt may take, and when failed deliveries are tried again.

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Policy {
    /// Whole attempt (connect, send, answer headers and body).
    pub timeout: Duration,
    /// Waits before attempts 2, 3, ... (one attempt more than waits). SQS
    /// hides a message at most 12 hours, so no wait is longer.
    pub schedule: Vec<Duration>,
    /// How long an attempt holds its delivery against a second worker.
    pub lease: Duration,
    /// Hours of outbox records the sweeper looks back over.
    pub sweep_hours: u32,
    /// Age before the sweeper re-announces a record (the fast path's time).
    pub sweep_settle: Duration,
    /// When a failing receiver is slowed and parked (`model::receiver`).
    pub receivers: shared::model::receiver::Limits,
    /// Batches (invocations) that may make one organization's requests at
    /// once (`share`): of the 5 the queue's trigger runs, the others stay
    /// free for every other organization, whatever its receivers do.
    pub org_batches: u32,
    /// How long a batch's place in an organization's share lasts if the
    /// batch never gives it back (killed): the function's timeout.
    pub batch_lease: Duration,
    /// How long an attempt put off waits (plus its delivery's share of as
    /// much again, so that those put off together come back spread).
    pub put_off: Duration,
    /// Hours of support issues the sweep looks back over for duplicates
    /// (`shared::tracker::duplicates`), and the most it closes a sweep.
    pub ticket_hours: u32,
    pub ticket_closes: usize,
}

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;

impl Default for Policy {
    fn default() -> Self {
        let secs = Duration::from_secs;
        Policy {
            timeout: secs(10),
            schedule: vec![
                secs(5),
                secs(5 * MINUTE),
                secs(30 * MINUTE),
                secs(2 * HOUR),
                secs(5 * HOUR),
                secs(10 * HOUR),
                secs(10 * HOUR),
            ],
            lease: secs(30),
            sweep_hours: 48,
            sweep_settle: secs(2 * MINUTE),
            receivers: shared::model::receiver::Limits::default(),
            org_batches: 2,
            batch_lease: secs(60),
            put_off: secs(5),
            ticket_hours: 2,
            ticket_closes: 20,
        }
    }
}

impl Policy {
    /// Any 2xx acknowledges a delivery; a 3xx is not followed and fails.
    pub fn succeeded(status: u16) -> bool {
        (200..300).contains(&status)
    }

    /// Attempts a delivery gets from the schedule.
    pub fn attempts(&self) -> u32 {
        u32::try_from(self.schedule.len()).unwrap_or(u32::MAX - 1) + 1
    }

    /// The wait after failed attempt `attempt` (1-based); None when it was
    /// the last.
    pub fn wait_after(&self, attempt: u32) -> Option<Duration> {
        let index = usize::try_from(attempt).ok()?.checked_sub(1)?;
        self.schedule.get(index).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_grows_and_fits_sqs() {
        let policy = Policy::default();
        assert_eq!(policy.attempts(), 8);
        assert_eq!(policy.wait_after(1), Some(Duration::from_secs(5)));
        assert_eq!(policy.wait_after(7), Some(Duration::from_secs(10 * HOUR)));
        assert_eq!(policy.wait_after(8), None);
        assert_eq!(policy.wait_after(0), None);
        assert!(policy.schedule.windows(2).all(|w| w[0] <= w[1]));
        assert!(
            policy
                .schedule
                .iter()
                .all(|d| *d <= Duration::from_secs(12 * HOUR))
        );
        assert!(policy.lease > policy.timeout);
        // A batch's place outlasts its attempts; a put-off fits SQS's delay.
        assert!(policy.batch_lease > policy.timeout);
        assert!(policy.put_off * 2 <= Duration::from_secs(15 * MINUTE));
    }

    #[test]
    fn only_2xx_succeeds() {
        for status in [200, 201, 204, 299] {
            assert!(Policy::succeeded(status));
        }
        for status in [100, 301, 302, 304, 400, 404, 500, 503] {
            assert!(!Policy::succeeded(status));
        }
    }
}
