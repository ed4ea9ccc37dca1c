//! A receiver's health, kept per organization and receiver
//! (`webhook::receiver`: its URL less query and fragment): consecutive
//! failed attempts, since when it has been failing, and when its next
//! attempt may start. A receiver that keeps failing is slowed (one attempt
//! a minute), then parked (one an hour, its probe); a 2xx, a ping's too,
//! brings it back. The attempts it is not given are recorded as failed
//! without a request and follow the retry schedule, so a slowed receiver
//! holds none of the dispatcher's time and no delivery is lost (a
//! recovery sends them again). docs/webhooks.md, "When a receiver keeps
//! failing"; docs/decisions/webhooks-delivery.md.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// Consecutive failed attempts after which a receiver is slowed.
pub const SLOW_AFTER: u32 = 5;
/// While slowed: one attempt at a time, this far apart.
pub const SLOW_GAP: Duration = Duration::from_secs(60);
/// Failing this long (and slowed): parked.
pub const PARK_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);
/// While parked: one attempt an hour (its probe).
pub const PARK_GAP: Duration = Duration::from_secs(3600);

/// When a receiver is slowed and parked, and how far apart its attempts
/// then go: the constants above in service; the local stack's quick
/// schedules shorten them (`tools/local`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub slow_after: u32,
    pub slow_gap: Duration,
    pub park_after: Duration,
    pub park_gap: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            slow_after: SLOW_AFTER,
            slow_gap: SLOW_GAP,
            park_after: PARK_AFTER,
            park_gap: PARK_GAP,
        }
    }
}

/// The wait before a held attempt's delivery is tried again: the retry
/// schedule's (`scheduled`), or until the receiver's next turn starts at
/// `free_at` (Unix ms), and `spread` after it, when that is later. An
/// attempt before the turn would only be held again: a failing receiver's
/// deliveries thus come back about once a turn, not at the schedule's
/// first waits of seconds, and spread over the turn (`spread`, a share of
/// a gap each delivery has of its own: `spread_of`) rather than all at its
/// start. The schedule's later waits are longer than a turn, so a delivery
/// keeps its attempts for as long. Whole seconds, rounded up (a queue
/// hides a message for whole seconds: one back a moment before the turn
/// would be held again).
pub fn retry_wait(scheduled: Duration, free_at: i64, now: i64, spread: Duration) -> Duration {
    let until_turn = u64::try_from(free_at.saturating_sub(now)).unwrap_or(0);
    if until_turn == 0 {
        return scheduled;
    }
    let until = Duration::from_millis(until_turn).saturating_add(spread);
    scheduled.max(Duration::from_secs(until.as_millis().div_ceil(1000) as u64))
}

/// A delivery's own share of `gap` (from its id): where in a turn's gap
/// its held attempt comes back.
pub fn spread_of(delivery: uuid::Uuid, gap: Duration) -> Duration {
    let share = u32::try_from(delivery.as_u128() % 1000).unwrap_or(0);
    gap * share / 1000
}

/// What an owner sees of a receiver (a webhook's `receiver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Healthy,
    Slowed,
    Parked,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Healthy => "healthy",
            State::Slowed => "slowed",
            State::Parked => "parked",
        }
    }
}

/// The stored health (none stored: healthy).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// Failed attempts since its last 2xx.
    #[serde(default)]
    pub failures: u32,
    /// Unix ms of the first failure of the streak.
    #[serde(default)]
    pub failing_since: Option<i64>,
    /// Unix ms before which no attempt starts while slowed or parked.
    #[serde(default)]
    pub next_try: Option<i64>,
    /// Unix ms it was first found parked in this streak (its metric once).
    #[serde(default)]
    pub parked_at: Option<i64>,
}

/// What an attempt may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Healthy: go.
    Open,
    /// Slowed or parked, and its turn is free: take it (the next one
    /// starts at the given Unix ms), then go.
    Turn(i64),
    /// Slowed or parked, and its turn is taken until the given Unix ms:
    /// no request now.
    Wait(i64),
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Health {
    pub fn state(&self, now: i64, limits: &Limits) -> State {
        if self.failures < limits.slow_after {
            return State::Healthy;
        }
        match self.failing_since {
            Some(since) if now.saturating_sub(since) >= ms(limits.park_after) => State::Parked,
            _ => State::Slowed,
        }
    }

    pub fn gate(&self, now: i64, limits: &Limits) -> Gate {
        let gap = match self.state(now, limits) {
            State::Healthy => return Gate::Open,
            State::Slowed => limits.slow_gap,
            State::Parked => limits.park_gap,
        };
        match self.next_try {
            Some(next) if next > now => Gate::Wait(next),
            _ => Gate::Turn(now.saturating_add(ms(gap))),
        }
    }

    /// As the webhook list shows it at `now` (by the service's limits).
    pub fn view(&self, now: i64) -> ReceiverView {
        let state = self.state(now, &Limits::default());
        let at = |ms: Option<i64>| ms.and_then(Timestamp::from_unix_millis);
        ReceiverView {
            state,
            consecutive_failures: self.failures,
            failing_since: at(self.failing_since),
            next_attempt_at: match state {
                State::Healthy => None,
                _ => at(self.next_try.filter(|next| *next > now)),
            },
        }
    }
}

/// A webhook's receiver as its owner sees it: `healthy`, `slowed` (one
/// attempt a minute) or `parked` (one an hour).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiverView {
    pub state: State,
    /// Failed attempts since its last 2xx.
    pub consecutive_failures: u32,
    /// The first failure of the streak; null when healthy.
    pub failing_since: Option<Timestamp>,
    /// When the next attempt may start, while slowed or parked and its
    /// turn is taken; else null (the next attempt goes when due).
    pub next_attempt_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 24 * 3600 * 1000;
    const L: Limits = Limits {
        slow_after: SLOW_AFTER,
        slow_gap: SLOW_GAP,
        park_after: PARK_AFTER,
        park_gap: PARK_GAP,
    };

    fn failing(failures: u32, since: i64, next_try: Option<i64>) -> Health {
        Health {
            failures,
            failing_since: Some(since),
            next_try,
            parked_at: None,
        }
    }

    #[test]
    fn a_held_delivery_waits_for_its_receivers_turn_or_the_schedule_whichever_is_later() {
        let now = 1_000_000;
        let secs = Duration::from_secs;
        let none = Duration::ZERO;
        assert_eq!(retry_wait(secs(5), now + 60_000, now, none), secs(60));
        assert_eq!(retry_wait(secs(5), now + 59_001, now, none), secs(60));
        assert_eq!(retry_wait(secs(300), now + 60_000, now, none), secs(300));
        assert_eq!(
            retry_wait(secs(0), now + 1, now, none),
            secs(1),
            "rounded up"
        );
        assert_eq!(
            retry_wait(secs(5), now - 1, now, secs(30)),
            secs(5),
            "a turn past"
        );
        assert_eq!(retry_wait(secs(5), now, now, secs(30)), secs(5));
        // Spread over the turn after it.
        assert_eq!(retry_wait(secs(5), now + 60_000, now, secs(30)), secs(90));
        assert_eq!(
            retry_wait(secs(5), now + 60_000, now, Duration::from_millis(1)),
            secs(61)
        );
    }

    #[test]
    fn each_delivery_has_its_own_share_of_a_gap() {
        let gap = Duration::from_secs(60);
        let at = |n: u128| spread_of(uuid::Uuid::from_u128(n), gap);
        assert_eq!(at(0), Duration::ZERO);
        assert_eq!(at(500), Duration::from_secs(30));
        assert_eq!(at(999), Duration::from_millis(59_940));
        assert_eq!(at(1000), Duration::ZERO);
        assert!(at(u128::MAX) < gap);
    }

    #[test]
    fn a_receiver_is_slowed_at_its_fifth_failure_and_parked_after_three_days() {
        assert_eq!(Health::default().state(0, &L), State::Healthy);
        assert_eq!(failing(4, 0, None).state(10 * DAY, &L), State::Healthy);
        assert_eq!(failing(5, 0, None).state(0, &L), State::Slowed);
        assert_eq!(failing(5, 0, None).state(3 * DAY - 1, &L), State::Slowed);
        assert_eq!(failing(5, 0, None).state(3 * DAY, &L), State::Parked);
    }

    #[test]
    fn a_slowed_receiver_gets_one_turn_a_minute_and_a_parked_one_an_hour() {
        let now = 1_000_000;
        assert_eq!(failing(4, 0, None).gate(now, &L), Gate::Open);
        assert_eq!(failing(5, 0, None).gate(now, &L), Gate::Turn(now + 60_000));
        assert_eq!(
            failing(5, 0, Some(now)).gate(now, &L),
            Gate::Turn(now + 60_000)
        );
        assert_eq!(
            failing(5, 0, Some(now + 1)).gate(now, &L),
            Gate::Wait(now + 1)
        );
        let later = 3 * DAY;
        assert_eq!(
            failing(9, 0, None).gate(later, &L),
            Gate::Turn(later + 3_600_000)
        );
    }

    #[test]
    fn the_owner_sees_the_state_and_when_the_next_attempt_may_start() {
        let now = 1_000_000;
        let view = failing(6, 500_000, Some(now + 30_000)).view(now);
        assert_eq!(view.state, State::Slowed);
        assert_eq!(view.consecutive_failures, 6);
        assert_eq!(view.failing_since.map(|t| t.unix_millis()), Some(500_000));
        assert_eq!(
            view.next_attempt_at.map(|t| t.unix_millis()),
            Some(now as u64 + 30_000)
        );
        let healthy = failing(2, 500_000, Some(now + 30_000)).view(now);
        assert_eq!(
            (healthy.state, healthy.next_attempt_at),
            (State::Healthy, None)
        );
        assert_eq!(failing(6, 0, Some(now - 1)).view(now).next_attempt_at, None);
    }
}
