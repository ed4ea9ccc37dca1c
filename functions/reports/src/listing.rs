//! A report's keyset listing (the month-end rows, the billed loads): its
//! cursors are bound to the query as asked, and carry the window the
//! listing began with. A default window ends today (UTC): a client paging
//! on past midnight keeps the window of its first page, instead of a
//! cursor of yesterday's window refused as another listing's.

use serde::{Deserialize, Serialize};
use shared::ApiResult;
use shared::cursor::Listing;
use shared::http::Ctx;
use shared::model::report::Window;

use crate::LoadsQuery;

/// A keyset position: the last row's key attributes.
type Position = std::collections::BTreeMap<String, String>;

/// Where a report's next page starts: its window and the last row read.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Resume {
    report_from: chrono::NaiveDate,
    report_to: chrono::NaiveDate,
    #[serde(flatten)]
    after: Position,
}

pub(crate) struct ReportListing {
    listing: Listing,
    /// The window of the listing: the query's, or its first page's.
    pub(crate) window: Window,
    start: Option<Position>,
}

impl ReportListing {
    /// Report `name`'s page for `query`: its window (422
    /// `validation_error` for a window the query cannot have, whatever
    /// the cursor) and where it starts (422 `invalid_cursor` for a cursor
    /// of another listing).
    pub(crate) async fn start<S>(ctx: &Ctx<S>, name: &str, query: &LoadsQuery) -> ApiResult<Self> {
        let asked = query.window()?;
        let filters = format!(
            "report={name}&from={}&to={}",
            query.from.as_deref().unwrap_or_default(),
            query.to.as_deref().unwrap_or_default()
        );
        let mut listing = ctx.cursors.listing(ctx.org_id, filters).await?;
        let resume: Option<Resume> = listing.start(query.cursor.as_deref()).await?;
        let (window, start) = match resume {
            Some(resume) => (
                Window {
                    from: resume.report_from,
                    to: resume.report_to,
                },
                Some(resume.after),
            ),
            None => (asked, None),
        };
        Ok(ReportListing {
            listing,
            window,
            start,
        })
    }

    /// The row the page starts after (once).
    pub(crate) fn take_start(&mut self) -> Option<Position> {
        self.start.take()
    }

    /// The cursor of the page after the last row read (None: the last page).
    pub(crate) fn next(&self, after: Option<Position>) -> Option<String> {
        self.listing.next(after.map(|after| Resume {
            report_from: self.window.from,
            report_to: self.window.to,
            after,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_keeps_its_window_beside_the_position() {
        let resume = Resume {
            report_from: "2026-11-02".parse().unwrap(),
            report_to: "2026-12-01".parse().unwrap(),
            after: Position::from([("pk".into(), "ORG#1".into()), ("gsi1sk".into(), "x".into())]),
        };
        let text = serde_json::to_string(&resume).unwrap();
        assert_eq!(serde_json::from_str::<Resume>(&text).unwrap(), resume);
        // A position of before (no window) is not a resume.
        assert!(serde_json::from_str::<Resume>(r#"{"pk":"ORG#1"}"#).is_err());
    }
}
