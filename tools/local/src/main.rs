//! Dev server: every function's routes in one process, under their real
//! paths, on loopback, and the webhook dispatcher fed from the local queue
//! (when `WEBHOOK_QUEUE_URL` is set). `LOCAL_ADDR` sets the address
//! (default 127.0.0.1:3000).

use anyhow::Context;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    shared::telemetry::init();
    let state = shared::AppState::from_env()
        .await
        .map_err(anyhow::Error::msg)?;
    if state.config.webhook_queue_url.is_some() {
        let dispatcher = webhook_dispatcher::Dispatcher::new(
            state.clone(),
            webhook_dispatcher::policy::Policy::default(),
        );
        tokio::spawn(local::poller::run(dispatcher, state.queue.clone()));
        tracing::info!("webhook dispatcher polling the local queue");
    }
    // Whole bodies, as API Gateway delivers them (`whole_body`).
    let app = shared::http::app(local::routes(), state)
        .layer(axum::middleware::from_fn(local::whole_body::whole_body));
    let addr = std::env::var("LOCAL_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!(%addr, "dev server listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
