//! Reports and billing over delivered loads: the summary (from the daily
//! figures), the month-end rows (keyset pages, JSON or CSV) and the monthly
//! additive usage billed to the organization. Contract: api-v1.md, "Report
//! summary", "Reports and billing".

mod csv_rows;
mod listing;

use axum::Router;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use shared::auth::ReadData;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::envelope::{Data, Page};
use shared::http::query::QueryParams;
use shared::model::report::{AdditiveUsage, BilledLoad, Summary, Window, WindowQuery};
use shared::state::AppState;
use shared::{ApiError, ApiResult};

use listing::ReportListing;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/reports/summary", get(summary))
        .route("/api/v1/reports/loads", get(loads))
        .route("/api/v1/billing/additive-usage", get(additive_usage))
        .route("/api/v1/billing/additive-usage/loads", get(billed_loads))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/reports/summary — read:data — delivered loads of the
/// organization's sites created in the window (`from`, `to`: UTC days,
/// default the last 30); 422 `validation_error`.
async fn summary(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<WindowQuery>,
) -> ApiResult<Json<Data<Summary>>> {
    let window = query.window()?;
    let (loads, litres) = ctx.store.reports().delivered(ctx.org_id, window).await?;
    Ok(Json(Data(Summary::new(window, loads, litres))))
}

/// Rows per page of the month-end report.
const DEFAULT_ROWS: u32 = 100;
const MAX_ROWS: u32 = 1000;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoadsQuery {
    from: Option<String>,
    to: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

impl LoadsQuery {
    fn window(&self) -> ApiResult<Window> {
        WindowQuery {
            from: self.from.clone(),
            to: self.to.clone(),
        }
        .window()
    }

    fn limit(&self) -> ApiResult<usize> {
        match self.limit.unwrap_or(DEFAULT_ROWS) {
            n @ 1..=MAX_ROWS => Ok(n as usize),
            _ => Err(ApiError::validation(
                "limit",
                format!("must be an integer from 1 to {MAX_ROWS}"),
            )),
        }
    }
}

/// GET /api/v1/reports/loads — read:data — month-end rows: the summary's
/// loads, oldest first, keyset pages (`limit` 1..1000, `cursor`; fewer
/// rows, with a cursor, when `limit` rows would not fit in Lambda's
/// answer); CSV for
/// `Accept: text/csv` (the next page in a `Link` header); 422
/// `validation_error`, `invalid_cursor`.
async fn loads(
    ctx: Ctx<ReadData>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<LoadsQuery>,
) -> ApiResult<Response> {
    let limit = query.limit()?;
    let mut report = ReportListing::start(&ctx, "loads", &query).await?;
    let reports = ctx.store.reports();
    let mut page = reports
        .delivered_page(ctx.org_id, report.window, report.take_start(), limit)
        .await?;
    let mut rows = reports.rows(&page.rows).await?;
    // A page that Lambda could not return (its rows' texts at their
    // bounds) ends at the last row that fits; its cursor goes on from there.
    let csv = csv_rows::wanted(&headers);
    let fit = if csv {
        csv_rows::fitting(&rows)
    } else {
        shared::http::payload::fitting_json(&rows)
    };
    rows.truncate(fit);
    page.cut(fit);
    let next_cursor = report.next(page.next);
    if csv {
        let window = report.window;
        let next = next_cursor.map(|cursor| {
            format!(
                "/api/v1/reports/loads?from={}&to={}&limit={limit}&cursor={cursor}",
                window.from, window.to
            )
        });
        return csv_rows::response(window, &rows, next.as_deref());
    }
    Ok(Json(Page { rows, next_cursor }).into_response())
}

/// GET /api/v1/billing/additive-usage — read:data — per UTC month of the
/// window, the additive m³ billed to this organization, each load rounded
/// up to a whole m³; 422 `validation_error`.
async fn additive_usage(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<WindowQuery>,
) -> ApiResult<Json<Data<AdditiveUsage>>> {
    let window = query.window()?;
    let billed = ctx.store.reports().billed(ctx.org_id, window).await?;
    Ok(Json(Data(AdditiveUsage::new(window, billed))))
}

/// GET /api/v1/billing/additive-usage/loads — read:data — the loads behind
/// the additive-usage figures: every load whose additive this organization
/// is billed for (its own, or a partner's that named its truck under its
/// `full` grant), billed in the window, oldest first, keyset pages
/// (`limit` 1..1000, `cursor`); 422 `validation_error`, `invalid_cursor`.
async fn billed_loads(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<LoadsQuery>,
) -> ApiResult<Json<Page<BilledLoad>>> {
    let limit = query.limit()?;
    let mut report = ReportListing::start(&ctx, "billed", &query).await?;
    let page = ctx
        .store
        .reports()
        .billed_page(ctx.org_id, report.window, report.take_start(), limit)
        .await?;
    let rows = page.rows.iter().map(BilledLoad::new).collect();
    let next_cursor = report.next(page.next);
    Ok(Json(Page { rows, next_cursor }))
}
