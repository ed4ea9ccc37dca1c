use std::sync::Arc;

use lambda_runtime::{LambdaEvent, service_fn};
use webhook_dispatcher::policy::Policy;
use webhook_dispatcher::{Dispatcher, Invocation};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    shared::telemetry::init();
    let state = shared::state::AppState::load().await?;
    let dispatcher = Arc::new(Dispatcher::new(state, Policy::default()));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let dispatcher = Arc::clone(&dispatcher);
        async move {
            let invocation = Invocation::of(&event.context);
            dispatcher.invoke(event.payload, invocation).await
        }
    }))
    .await
}
