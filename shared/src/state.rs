//! Per-container state: configuration and SDK clients, built once.

use std::sync::Arc;

use crate::config::Config;
use crate::links::LinkSigner;
use crate::store::Store;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Clone, Debug)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub links: LinkSigner,
}

impl AppState {
    /// Reads the environment and the standard AWS configuration chain
    /// (including `AWS_ENDPOINT_URL` for the local emulator).
    pub async fn from_env() -> Result<Self, BoxError> {
        let config = Config::from_env()?;
        let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Ok(Self::new(config, &sdk))
    }

    pub fn new(config: Config, sdk: &aws_config::SdkConfig) -> Self {
        let store = Store::new(Store::client(sdk), config.table_name.as_str());
        let links = LinkSigner::new(
            sdk,
            &config.bucket_name,
            config.link_signer_secret_arn.clone(),
        );
        Self {
            config: Arc::new(config),
            store,
            links,
        }
    }
}
