//! The catalogue: every code the API answers, once, with its status and
//! what it means. Errors are built from these (`Code::with`), never from a
//! string of their own; `tests/tests/api/contract.rs` checks that this
//! set, the description's codes and the codes the code builds are one set.
//! A code may answer at two statuses (a record missing in the path is 404,
//! named in a body 422): each is its own entry.

/// One code of the catalogue.
#[derive(Debug, PartialEq, Eq)]
pub struct Code {
    pub code: &'static str,
    pub status: u16,
    pub meaning: &'static str,
}

macro_rules! catalogue {
    ($($name:ident = $status:literal $code:literal: $meaning:literal;)*) => {
        $(
            #[doc = $meaning]
            pub static $name: Code = Code { code: $code, status: $status, meaning: $meaning };
        )*
        /// Every code the API answers.
        pub static ALL: &[&Code] = &[$(&$name),*];
    };
}

catalogue! {
    // 400: the request's form.
    INVALID_ORG_ID = 400 "invalid_org_id": "a path organization id is not a UUID";
    INVALID_SITE_ID = 400 "invalid_site_id": "the path siteId is not a UUID";
    INVALID_RECEIVING_POINT_ID = 400 "invalid_receiving_point_id": "the path rpId is not a UUID";
    INVALID_FACTORY_ID = 400 "invalid_factory_id": "the path factoryId is not a UUID";
    INVALID_TRUCK_ID = 400 "invalid_truck_id": "the path truckId is not a UUID";
    INVALID_MEMBER_ID = 400 "invalid_member_id": "the path memberId is not a UUID";
    INVALID_SURPLUS_ID = 400 "invalid_surplus_id": "the path surplusId is not a UUID";
    INVALID_WEBHOOK_ID = 400 "invalid_webhook_id": "the path webhookId is not a UUID";
    INVALID_DELIVERY_ID = 400 "invalid_delivery_id": "the path deliveryId is not a UUID";
    INVALID_JSON = 400 "invalid_json": "the body is not JSON, or nests too deep";
    INVALID_MULTIPART = 400 "invalid_multipart": "the upload is not a well-formed multipart form";
    INVALID_IDEMPOTENCY_KEY = 400 "invalid_idempotency_key": "Idempotency-Key is not 1 to 255 printable ASCII characters";
    // 401: the key.
    MISSING_API_KEY = 401 "missing_api_key": "no key, or a malformed one";
    INVALID_API_KEY = 401 "invalid_api_key": "no key has this value";
    API_KEY_REVOKED = 401 "api_key_revoked": "the key was revoked";
    API_KEY_EXPIRED = 401 "api_key_expired": "the key expired";
    CONFLICTING_API_KEYS = 401 "conflicting_api_keys": "Authorization and X-Api-Key carry different keys";
    // 403: what the key may do.
    ORG_INACTIVE = 403 "org_inactive": "the key's organization was deactivated";
    INSUFFICIENT_SCOPE = 403 "insufficient_scope": "the key lacks the route's scope";
    FEATURE_NOT_ENABLED = 403 "feature_not_enabled": "the organization has no public API entitlement";
    PUBLIC_API_DISABLED = 403 "public_api_disabled": "the versioned API is off in this deployment";
    ORG_ID_MISMATCH = 403 "org_id_mismatch": "a path or body organization id is not the key's";
    ORG_ADMIN_MANAGED = 403 "org_admin_managed": "org admins are managed in the admin application";
    // 404: a record named in the path, or a route.
    NOT_FOUND = 404 "not_found": "no route matches the path";
    ORG_NOT_FOUND = 404 "org_not_found": "no such organization for this key (missing, deactivated, or not its own or a direct child)";
    SITE_NOT_FOUND = 404 "site_not_found": "no such site of this organization (or of a granter)";
    RECEIVING_POINT_NOT_FOUND = 404 "receiving_point_not_found": "no such receiving point of this organization";
    FACTORY_NOT_FOUND = 404 "factory_not_found": "no such factory of this organization";
    GRANT_NOT_FOUND = 404 "grant_not_found": "this organization issued no grant to that organization";
    TRUCK_NOT_FOUND = 404 "truck_not_found": "no truck in service of this organization has this id";
    MEMBER_NOT_FOUND = 404 "member_not_found": "the profile is not in this organization";
    SURPLUS_NOT_FOUND = 404 "surplus_not_found": "no load of this organization has this id (or it is archived)";
    WEBHOOK_NOT_FOUND = 404 "webhook_not_found": "no webhook of this organization has this id";
    DELIVERY_NOT_FOUND = 404 "delivery_not_found": "no delivery of this webhook has this id";
    GEOCODE_NOT_FOUND = 404 "geocode_not_found": "the provider found nothing for the address";
    // 405
    METHOD_NOT_ALLOWED = 405 "method_not_allowed": "the path does not take this method";
    // 409: the stored state.
    ORG_NAME_CONFLICT = 409 "org_name_conflict": "a sibling organization has this name";
    CHILD_LIMIT_REACHED = 409 "child_limit_reached": "the organization has 100 active sub-organizations";
    TOO_MANY_ORG_ADMINS = 409 "too_many_org_admins": "the parent has more org admins than one child's creation can copy";
    LICENSE_CONFLICT = 409 "license_conflict": "a truck in service of the fleet has this plate in this country";
    PHONE_CONFLICT = 409 "phone_conflict": "a member of the organization has this phone";
    EMAIL_CONFLICT = 409 "email_conflict": "a member of the organization has this e-mail";
    ALREADY_INACTIVE = 409 "already_inactive": "the member already left";
    ALREADY_ARCHIVED = 409 "already_archived": "DELETE on an archived record";
    NOT_ARCHIVED = 409 "not_archived": "restore of a record that is not archived";
    RECORD_ARCHIVED = 409 "record_archived": "PATCH of an archived site or receiving point";
    INVALID_STATUS_TRANSITION = 409 "invalid_status_transition": "the load's status cannot move this way";
    WAYBILL_REQUIRED = 409 "waybill_required": "delivered needs a stored waybill";
    WAYBILL_LOCKED = 409 "waybill_locked": "the load is delivered: its waybill is final";
    CONCURRENT_UPDATE = 409 "concurrent_update": "the record kept changing under three attempts";
    WEBHOOK_ALREADY_EXISTS = 409 "webhook_already_exists": "the organization has a webhook for this event and URL";
    WEBHOOK_LIMIT_REACHED = 409 "webhook_limit_reached": "the organization has 20 webhooks";
    PUBLIC_PLACE_LIMIT_REACHED = 409 "public_place_limit_reached": "the organization has 200 public receiving points with coordinates";
    IDEMPOTENCY_KEY_IN_FLIGHT = 409 "idempotency_key_in_flight": "a request with this Idempotency-Key is still running";
    // 413
    PAYLOAD_TOO_LARGE = 413 "payload_too_large": "the JSON body is larger than the limit";
    FILE_TOO_LARGE = 413 "file_too_large": "the file is larger than 10 MiB";
    // 422: the body, against the rules or the stored records.
    VALIDATION_ERROR = 422 "validation_error": "a field is missing or breaks a rule; the message names it";
    SITE_NOT_FOUND_IN_BODY = 422 "site_not_found": "site_id names no site of this organization";
    SITE_ARCHIVED = 422 "site_archived": "site_id names an archived site";
    IMMUTABLE_FIELD = 422 "immutable_field": "a field that cannot change was given another value";
    GRANT_TO_SELF = 422 "grant_to_self": "an organization cannot grant access to itself";
    GRANTEE_NOT_FOUND = 422 "grantee_not_found": "grantee_org_id names no active organization";
    DRIVER_NOT_FOUND = 422 "driver_not_found": "the driver is no active member of the organization";
    FACTORY_NOT_FOUND_IN_BODY = 422 "factory_not_found": "factoryId names no factory of the organization";
    FACTORY_ARCHIVED = 422 "factory_archived": "factoryId names an archived factory";
    RECEIVING_POINT_NOT_FOUND_IN_BODY = 422 "receiving_point_not_found": "to_receiving_point_id names no receiving point of the organization and no public one";
    RECEIVING_POINT_ARCHIVED = 422 "receiving_point_archived": "the destination is archived";
    TRUCK_NOT_FOUND_IN_BODY = 422 "truck_not_found": "truck_id names no truck of the organization or of a partner that granted it full access";
    TRUCK_NOT_GRANTED = 422 "truck_not_granted": "the change would bill a truck's organization that no longer grants full access";
    ROUTE_LOCKED = 422 "route_locked": "the load is delivered: its route cannot change";
    INVALID_CURSOR = 422 "invalid_cursor": "the cursor is not this listing's";
    FILE_MISSING = 422 "file_missing": "the upload has no file field";
    FILE_EMPTY = 422 "file_empty": "the file is empty";
    UNSUPPORTED_FILE_TYPE = 422 "unsupported_file_type": "the file is no JPEG, PNG or WebP";
    UPLOAD_NOT_FOUND = 422 "upload_not_found": "storage_path names no upload of this load's forms";
    EVENT_DEPRECATED = 422 "event_deprecated": "surplus.created is no longer sent";
    IDEMPOTENCY_KEY_REUSED = 422 "idempotency_key_reused": "the Idempotency-Key was used for another request";
    // 429: budgets and quotas.
    RATE_LIMITED = 429 "rate_limited": "the key's budget, or its ceiling of failed requests, is used up";
    SUPPORT_RATE_LIMITED = 429 "support_rate_limited": "the key opened 5 tickets in the last hour";
    GEOCODE_RATE_LIMITED = 429 "geocode_rate_limited": "the key made 200 geocoding requests this hour";
    PASSWORD_RATE_LIMITED = 429 "password_rate_limited": "the key created 100 members with a password this hour";
    // 5xx
    INTERNAL_ERROR = 500 "internal_error": "an unexpected error; the log has it under the request id";
    GEOCODE_PROVIDER_ERROR = 502 "geocode_provider_error": "the geocoding provider failed or refused";
    SUPPORT_TRACKER_ERROR = 502 "support_tracker_error": "the issue tracker refused the ticket or could not be reached";
    GEOCODE_NOT_CONFIGURED = 503 "geocode_not_configured": "geocoding is not configured in the deployment";
    SUPPORT_NOT_CONFIGURED = 503 "support_not_configured": "support tickets are not configured in the deployment";
    GEOCODE_TIMEOUT = 504 "geocode_timeout": "the geocoding provider did not answer in time";
    SUPPORT_TRACKER_TIMEOUT = 504 "support_tracker_timeout": "the issue tracker did not answer in time";
}

/// Codes only the operator CLI answers (it shares the store's errors).
pub mod operators {
    use super::Code;

    pub static API_KEY_NOT_FOUND: Code = Code {
        code: "api_key_not_found",
        status: 404,
        meaning: "no such key in this organization",
    };
    pub static ALREADY_REVOKED: Code = Code {
        code: "already_revoked",
        status: 409,
        meaning: "the key is already revoked",
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_and_status_is_declared_once() {
        let mut seen = std::collections::HashSet::new();
        for code in ALL {
            assert!(seen.insert((code.code, code.status)), "{code:?} twice");
            assert!((400..600).contains(&code.status), "{code:?}");
            assert!(!code.meaning.is_empty());
        }
    }
}
