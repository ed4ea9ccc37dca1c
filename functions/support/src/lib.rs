//! Support tickets: one-way tickets in the configured issue tracker
//! (GitHub Issues, `shared::tracker::github`) for the key's organization, at most 5 an
//! hour per key. Contract: api-v1.md, "Support" and "Limits"; the answer
//! and the quota: docs/decisions/support-tickets.md, "Support tickets".

use shared::tracker::{duplicates, github};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use shared::ApiResult;
use shared::auth::WriteData;
use shared::error::codes;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::http::idempotency::RETENTION;
use shared::model::support::{CreateTicket, QUOTA_PERIOD, QUOTA_TICKETS, Ticket};
use shared::state::AppState;
use shared::store::engine::keys::support_quota_pk;
use shared::store::exactly_once::outcome;
use shared::store::exactly_once::quotas::{Quota, Reserved};

/// How long after it gave up on the tracker a call may still open the
/// issue: GitHub ends a request that takes it more than 10 seconds (its
/// REST API's own timeout), and 10 more cover the network.
pub const LANDS_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

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
///
/// At most one issue per request with an `Idempotency-Key`, whatever
/// pauses or however late the tracker answers: the quota is decided first (no call to the tracker for a
/// request it refuses); an attempt records on its claim that it is about
/// to open the issue, and opens it only while the claim is its own, within
/// the claim's hold; a later attempt of a request whose earlier one got
/// that far looks for that issue (named by the request in the lines the
/// service writes) before opening one, on the slot the earlier attempt
/// took. An attempt whose call's outcome is unknown (it timed out) holds
/// the key until the call can no longer land (`LANDS_WITHIN`): a retry
/// meanwhile answers 409 `idempotency_key_in_flight` with `Retry-After`.
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
    let now = shared::clock::unix_ms();
    let request = outcome::request_id();
    let quotas = ctx.store.quotas();
    // A slot an earlier attempt of this request took is this request's.
    let held = match request {
        Some(request) => quotas.held_by(&quota, request, now).await?.ok(),
        None => None,
    };
    // An earlier attempt may have opened the issue.
    let earlier = request.filter(|_| outcome::acted());
    let (slot, taken_now) = match held {
        Some(slot) => (slot, false),
        None => match quotas.reserve(&quota, now, request).await? {
            Reserved::Held(slot) => (slot, true),
            Reserved::Earlier(slot) => (slot, false),
            Reserved::Full { retry_after } => {
                return Err(codes::SUPPORT_RATE_LIMITED.retry_after(
                    "this key opened 5 support tickets in the last hour",
                    retry_after,
                ));
            }
        },
    };
    if let Some(request) = earlier {
        let since = shared::clock::now() - RETENTION;
        let found = github::find(&ctx, ctx.org_id, ctx.key_id, request, since).await;
        if let Some((&first, duplicates)) = found.map_err(|failure| failure.error)?.split_first() {
            // An earlier attempt opened it, on its own slot; any more
            // are closed as duplicates of the first.
            duplicates::close(&ctx, request, first, duplicates, duplicates::By::Retry).await;
            let mut remaining = slot.remaining;
            if taken_now {
                quotas.release(&slot).await?;
                remaining += 1;
            }
            return Ok(opened_answer(first.to_string(), ticket.title, remaining));
        }
    }
    // Recorded before the call, which then goes only within the claim's
    // hold (409 `idempotency_key_in_flight` when another attempt holds the
    // key: the slot stays, for that attempt of the same request).
    outcome::fence(ctx.config.support.timeout, true).await?;
    match github::open(&ctx, &ticket, ctx.org_id, ctx.key_id, request).await {
        Ok(reference) => Ok(opened_answer(reference, ticket.title, slot.remaining)),
        Err(failure) => {
            // A refused ticket (a 4xx) uses no quota; after any other
            // failure (a timeout, a 5xx, a broken connection) it may exist,
            // and may still be opened: the key is held until the call can
            // no longer land, then a retry looks for the issue first.
            if failure.refused {
                ctx.store.quotas().release(&slot).await?;
            } else {
                outcome::uncertain_until(
                    shared::clock::unix_ms() + shared::clock::millis(LANDS_WITHIN),
                );
            }
            Err(failure.error)
        }
    }
}
