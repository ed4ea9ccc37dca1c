use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use webhook_dispatcher::Dispatcher;
use webhook_dispatcher::policy::Policy;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::telemetry::init();
    let state = shared::AppState::load().await?;
    let dispatcher = Arc::new(Dispatcher::new(state, Policy::default()));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let dispatcher = Arc::clone(&dispatcher);
        async move { dispatcher.invoke(event.payload).await }
    }))
    .await
}
