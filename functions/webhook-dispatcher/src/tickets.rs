//! The schedule's sweep of support issues the tracker holds twice for one
//! request (`shared::tracker::duplicates`).

use crate::Dispatcher;

impl Dispatcher {
    /// Closes the support issues the tracker holds more than once for one
    /// request, opened in the policy's last `ticket_hours`, keeping the one
    /// its answer named (`shared::tracker::duplicates::sweep`); nothing
    /// where support tickets are not configured. A tracker that cannot be
    /// read is logged: the next sweep tries again.
    pub async fn tickets(&self) {
        let state = &self.state;
        if !state.config.support.is_configured() {
            return;
        }
        let since =
            shared::clock::now() - chrono::TimeDelta::hours(self.policy.ticket_hours.into());
        let swept =
            shared::tracker::duplicates::sweep(state, since, self.policy.ticket_closes, false);
        match swept.await {
            Ok(swept) if swept.found > 0 || swept.undecided > 0 => {
                tracing::warn!(
                    found = swept.found,
                    closed = swept.closed,
                    unclosed = swept.unclosed,
                    undecided = swept.undecided,
                    "swept support issues the tracker holds twice"
                );
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "support issues not swept: the tracker could not be read");
            }
        }
    }
}
