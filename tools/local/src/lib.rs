//! Every resource group's routes merged, as the dev server and the
//! benchmarks serve them.

pub mod poller;
pub mod whole_body;

use axum::Router;
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(docs::routes())
        .merge(orgs::routes())
        .merge(sites::routes())
        .merge(factories::routes())
        .merge(grants::routes())
        .merge(receiving_points::routes())
        .merge(trucks::routes())
        .merge(members::routes())
        .merge(surpluses::routes())
        .merge(reports::routes())
        .merge(webhooks::routes())
        .merge(places::routes())
        .merge(geocode::routes())
        .merge(support::routes())
}
