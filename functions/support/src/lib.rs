//! Support tickets: one-way tickets in the configured issue tracker
//! (GitHub Issues, `github.rs`) for the key's organization, at most 5 an
//! hour per key. Contract: api-v1.md, "Support" and "Limits"; the answer
//! and the quota: docs/decisions.md, "Support tickets".

pub mod github;

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use shared::auth::WriteData;
use shared::error::codes;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::http::idempotency::RETENTION;
use shared::model::support::{CreateTicket, QUOTA_PERIOD, QUOTA_TICKETS, Ticket};
use shared::store::keys::support_quota_pk;
use shared::store::outcome;
use shared::store::quotas::{Quota, Reserved};
use shared::{ApiResult, AppState};

/// 201 with the ticket opened as issue `reference`.
fn opened_answer(
    reference: String,
    title: String,
    quota_remaining: u32,
) -> (StatusCode, Json<Data<Ticket>>) {
    (
        StatusCode::CREATED,
        Json(Data(Ticket {
            reference,
            title,
            created_at: shared::model::now(),
            quota_remaining,
        })),
    )
}

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/support", post(open))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// POST /api/v1/support — write:data — `title`, `description`; 201 with
/// the ticket; 429 `support_rate_limited` past 5 an hour per key; 503
/// `support_not_configured`; 502 `support_tracker_error`, 504
/// `support_tracker_timeout`.
async fn open(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateTicket>,
) -> ApiResult<(StatusCode, Json<Data<Ticket>>)> {
    let ticket = body.validate()?;
    if !ctx.config.support.is_configured() {
        return Err(codes::SUPPORT_NOT_CONFIGURED
            .with("support tickets are not configured in this deployment"));
    }
    let quota = Quota {
        pk: support_quota_pk(ctx.key_id),
        uses: QUOTA_TICKETS,
        period: QUOTA_PERIOD,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // The request, named in its issue and its quota slot when it has an
    // Idempotency-Key: a retry after an attempt that died finds both.
    let request = outcome::idempotent_id();
    let quotas = ctx.store.quotas();
    let mut held = None;
    if let Some(request) = request.filter(|_| outcome::retried()) {
        let since = chrono::Utc::now() - RETENTION;
        let (opened, standing) = tokio::join!(
            github::find(&ctx, request, since),
            quotas.held_by(&quota, request, now)
        );
        let standing = standing?;
        if let Some(reference) = opened.map_err(|failure| failure.error)? {
            // The earlier attempt opened it, on its own slot.
            let remaining = standing
                .as_ref()
                .map_or_else(|left| *left, |slot| slot.remaining);
            return Ok(opened_answer(reference, ticket.title, remaining));
        }
        held = standing.ok();
    }
    let slot = match held {
        Some(slot) => slot,
        None => match quotas.reserve(&quota, now, request).await? {
            Reserved::Held(slot) => slot,
            Reserved::Full { retry_after } => {
                return Err(codes::SUPPORT_RATE_LIMITED.retry_after(
                    "this key opened 5 support tickets in the last hour",
                    retry_after,
                ));
            }
        },
    };
    match github::open(&ctx, &ticket, ctx.org_id, ctx.key_id, request).await {
        Ok(reference) => Ok(opened_answer(reference, ticket.title, slot.remaining)),
        Err(failure) => {
            // A refused ticket uses no quota; after a timeout it may exist.
            if failure.refused {
                ctx.store.quotas().release(&slot).await?;
            }
            Err(failure.error)
        }
    }
}
