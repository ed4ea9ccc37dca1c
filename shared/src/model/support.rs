//! Support tickets: the body of `POST /api/v1/support`, its answer, and the
//! quota. Contract: api-v1.md, "Support" and "Limits"; the answer and the
//! bounds: docs/decisions/support-tickets.md, "Support tickets".

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::time::Timestamp;
use super::validate;
use crate::error::ApiError;

pub const MAX_TITLE: usize = 200;
pub const MAX_DESCRIPTION: usize = 10_000;

/// Tickets one API key may open per `QUOTA_PERIOD` (a sliding hour).
pub const QUOTA_TICKETS: u32 = 5;
pub const QUOTA_PERIOD: Duration = Duration::from_secs(3600);

#[derive(Debug, Deserialize)]
pub struct CreateTicket {
    pub title: String,
    pub description: String,
}

/// A ticket to open, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTicket {
    pub title: String,
    pub description: String,
}

impl CreateTicket {
    pub fn validate(self) -> Result<NewTicket, ApiError> {
        Ok(NewTicket {
            title: validate::required_text("title", &self.title, MAX_TITLE)?,
            description: validate::required_text(
                "description",
                &self.description,
                MAX_DESCRIPTION,
            )?,
        })
    }
}

/// The answer: the tracker's reference of the new ticket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ticket {
    /// The tracker's number of the ticket, to quote when asking about it.
    pub reference: String,
    pub title: String,
    pub created_at: Timestamp,
    /// Tickets this key may still open in the current hour.
    pub quota_remaining: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_and_description_are_required_and_bounded() {
        let ticket = |title: &str, description: &str| {
            CreateTicket {
                title: title.into(),
                description: description.into(),
            }
            .validate()
        };
        assert_eq!(
            ticket(" Webhook 500s ", "Since 9:00 every delivery fails.\n").unwrap(),
            NewTicket {
                title: "Webhook 500s".into(),
                description: "Since 9:00 every delivery fails.".into()
            }
        );
        for (title, description, field) in [
            ("", "d", "title"),
            (" ", "d", "title"),
            ("t", "\n\t", "description"),
            (&"t".repeat(MAX_TITLE + 1), "d", "title"),
            ("t", &"d".repeat(MAX_DESCRIPTION + 1), "description"),
        ] {
            let e = ticket(title, description).unwrap_err();
            assert!(e.to_string().starts_with(field), "{e}");
        }
        assert!(ticket(&"t".repeat(MAX_TITLE), &"d".repeat(MAX_DESCRIPTION)).is_ok());
    }
}
