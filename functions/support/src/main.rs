#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::telemetry::init();
    let state = shared::state::AppState::from_env().await?;
    lambda_http::run(support::router(state)).await
}
