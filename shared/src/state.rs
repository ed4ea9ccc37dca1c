//! Per-container state: configuration and SDK clients, built once.

use std::sync::Arc;

use crate::auth::memory::KeyMemory;
use crate::clock::Clock;
use crate::config::Config;
use crate::cursor::Cursors;
use crate::deployment_key::DeploymentKey;
use crate::files::Files;
use crate::keyring::Keyring;
use crate::links::LinkSigner;
use crate::outbound::Outbound;
use crate::queue::WebhookQueue;
use crate::sealed::Sealer;
use crate::store::Store;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The state every handler reaches through `Ctx`: one `Arc`, so that the
/// router's clones of it on each request cost a reference count (its
/// clients hold SDK configurations and keys that are dearer to copy).
/// Reads go through `Deref`; a change (tests only) copies the parts first.
#[derive(Clone, Debug)]
pub struct AppState(Arc<Parts>);

#[derive(Clone, Debug)]
pub struct Parts {
    pub config: Arc<Config>,
    pub store: Store,
    pub links: LinkSigner,
    /// List cursors, signed with the deployment's key.
    pub cursors: Cursors,
    /// The bucket, for uploads.
    pub files: Files,
    /// Seals webhook secrets at rest (the deployment's seal key, read
    /// when first needed: only the webhook functions have one).
    pub sealer: Sealer,
    /// The webhook queue (announcements, deliveries, retries).
    pub queue: WebhookQueue,
    /// Calls to the geocoding provider and the issue tracker.
    pub outbound: Outbound,
    /// The geocoding provider's API key, read when first needed.
    pub geocode_key: DeploymentKey,
    /// The issue tracker's token, read when first needed.
    pub support_token: DeploymentKey,
    /// The keys this instance admitted lately (`auth::memory`).
    pub key_memory: Arc<KeyMemory>,
    /// Rate-limit slots this instance counted ahead for busy keys.
    pub rate_leases: Arc<crate::ratelimit::Leases>,
    /// The clock every request runs by (`crate::clock`): the system's
    /// time, moved forward only by tests.
    pub clock: Clock,
}

impl AppState {
    /// Reads the environment and the standard AWS configuration chain
    /// (including the local stack's endpoints, `shared::endpoints`).
    /// A server refuses to start without a cursor key (outside the local
    /// stack, the development key is not used).
    pub async fn from_env() -> Result<Self, BoxError> {
        let state = Self::load().await?;
        if state.config.http.cursor_key.is_none() {
            return Err(
                "set CURSOR_SIGNING_KEY_SECRET_ARN (or CURSOR_SIGNING_KEY): the \
                        development cursor key is only used on the local stack"
                    .into(),
            );
        }
        Ok(state)
    }

    /// The state of a function that serves no lists (the dispatcher): no
    /// cursor key needed.
    pub async fn load() -> Result<Self, BoxError> {
        let config = Config::from_env()?;
        let sdk = crate::aws::sdk_config(config.sdk_limits).await;
        Ok(Self::new(config, &sdk))
    }

    pub fn new(config: Config, sdk: &aws_config::SdkConfig) -> Self {
        crate::aws_calls::record::named(config.named_resources());
        let store = Store::new(Store::client(sdk), config.store.table.as_str())
            .with_public_copies(config.store.public_cell_copies);
        let links = LinkSigner::new(
            sdk,
            &config.files.bucket,
            config.files.link_signer_secret_arn.clone(),
        );
        let cursors = Cursors::new(sdk, config.http.cursor_key.clone());
        let files = Files::new(sdk, &config.files.bucket);
        let sealer = Sealer::new(Keyring::new(
            "webhook seal key",
            sdk,
            config.webhooks.seal_key.clone(),
        ));
        let queue = WebhookQueue::new(
            sdk,
            config.webhooks.queue_url.clone(),
            config.webhooks.dlq_url.clone(),
        );
        let geocode_key =
            DeploymentKey::credential("geocoding API key", sdk, config.geocode.api_key.clone());
        let support_token =
            DeploymentKey::credential("issue tracker token", sdk, config.support.token.clone());
        Self(Arc::new(Parts {
            queue,
            outbound: Outbound::default(),
            geocode_key,
            support_token,
            key_memory: Arc::default(),
            rate_leases: Arc::default(),
            clock: Clock::default(),
            config: Arc::new(config),
            store,
            links,
            cursors,
            files,
            sealer,
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Parts;
    fn deref(&self) -> &Parts {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut Parts {
        Arc::make_mut(&mut self.0)
    }
}
