//! UUID path ids (the canonical hyphenated form). A malformed id answers
//! 400 with the id's own code.

use std::marker::PhantomData;

use axum::extract::{FromRequestParts, Path};
use http::request::Parts;
use uuid::Uuid;

use crate::error::{ApiError, Code, codes};

/// A kind of path id: its route parameter and its error code.
pub trait IdKind {
    const PARAM: &'static str;
    const INVALID: &'static Code;
}

/// The UUID of the route's path parameter `K::PARAM` (a route may have
/// several: `PathId<WebhookId>` and `PathId<DeliveryId>` side by side).
pub struct PathId<K>(pub Uuid, pub PhantomData<K>);

impl<K> PathId<K> {
    pub fn id(&self) -> Uuid {
        self.0
    }
}

impl<K: IdKind, S: Send + Sync> FromRequestParts<S> for PathId<K> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let invalid = || ApiError::InvalidId {
            code: K::INVALID,
            param: K::PARAM,
        };
        let Path(params) =
            Path::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await
                .map_err(|_| invalid())?;
        let raw = params.get(K::PARAM).ok_or_else(invalid)?;
        crate::model::id::parse(raw)
            .map(|id| PathId(id, PhantomData))
            .ok_or_else(invalid)
    }
}

macro_rules! id_kinds {
    ($($name:ident => $param:literal, $code:ident;)*) => {
        $(
            #[doc = concat!("Path parameter `", $param, "`.")]
            pub struct $name;
            impl IdKind for $name {
                const PARAM: &'static str = $param;
                const INVALID: &'static Code = &codes::$code;
            }
        )*
    };
}

id_kinds! {
    OrgId => "orgId", INVALID_ORG_ID;
    SiteId => "siteId", INVALID_SITE_ID;
    ReceivingPointId => "rpId", INVALID_RECEIVING_POINT_ID;
    FactoryId => "factoryId", INVALID_FACTORY_ID;
    GranteeOrgId => "granteeOrgId", INVALID_ORG_ID;
    TruckId => "truckId", INVALID_TRUCK_ID;
    MemberId => "memberId", INVALID_MEMBER_ID;
    SurplusId => "surplusId", INVALID_SURPLUS_ID;
    WebhookId => "webhookId", INVALID_WEBHOOK_ID;
    DeliveryId => "deliveryId", INVALID_DELIVERY_ID;
}
