//! Dev server: every function's routes in one process, under their real
//! paths, on loopback, and the webhook dispatcher fed from the local queue
//! (when `WEBHOOK_QUEUE_URL` is set, unless `LOCAL_DISPATCHER=off`; its
//! settings: `local::poller::Setup`). `LOCAL_ADDR` sets the address
//! (default 127.0.0.1:3000).

use anyhow::Context;

/// The workers' stacks: a debug build (the tests', the short soak's) polls
/// a request tens of futures deep, each frame large, past a thread's
/// default 2 MiB; the test runtimes have the same (`api_tests`).
const STACK_BYTES: usize = 16 * 1024 * 1024;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STACK_BYTES)
        .build()?
        .block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    shared::telemetry::init();
    let state = shared::state::AppState::from_env()
        .await
        .map_err(anyhow::Error::msg)?;
    let setup = local::poller::Setup::from_env()?;
    if state.config.webhooks.queue_url.is_some() && setup.enabled {
        let dispatcher = webhook_dispatcher::Dispatcher::new(state.clone(), setup.policy.clone());
        let queue = state.queue.clone();
        tokio::spawn(async move { local::poller::run(dispatcher, queue, &setup).await });
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
