//! Every key shape of the single table, in one place. See docs/data-model.md.

use uuid::Uuid;

use crate::auth::key::KeyHash;

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const TTL: &str = "ttl";

/// Organization partition: the organization, its child summaries, its
/// memberships, trucks, grants and webhooks, and the records made before
/// they were spread (`record_pk`).
pub fn org_pk(org: Uuid) -> String {
    format!("ORG#{org}")
}

/// Partitions an organization's sites, receiving points, factories and
/// loads (with their logs) are spread over, so that no one partition
/// takes a busy organization's every write and read (`make capacity`).
pub const RECORD_SHARDS: u32 = 4;

/// The shard of a spread record (`model::id::spread_id`), by its id's
/// last byte (random); `None` for an id made before the spread.
pub fn record_shard(id: Uuid) -> Option<u32> {
    crate::model::id::is_spread(id).then(|| u32::from(id.as_bytes()[15]) % RECORD_SHARDS)
}

/// `base`, or its shard `shard` (`<base>#SHARD<n>`).
fn sharded(base: String, shard: Option<u32>) -> String {
    match shard {
        Some(shard) => format!("{base}#SHARD{shard}"),
        None => base,
    }
}

/// The partition of organization `org`'s record `id`: one of the
/// organization's `RECORD_SHARDS` for a spread id, the organization's own
/// partition for an id from before.
pub fn record_pk(org: Uuid, id: Uuid) -> String {
    org_shard_pk(org, record_shard(id))
}

/// The organization's partition (`None`) or one of its shards.
pub fn org_shard_pk(org: Uuid, shard: Option<u32>) -> String {
    sharded(org_pk(org), shard)
}

/// Where a kind's spread records may be, as `shard` arguments: the
/// unsharded key (records from before the spread) and every shard.
pub fn all_shards() -> impl Iterator<Item = Option<u32>> {
    std::iter::once(None).chain((0..RECORD_SHARDS).map(Some))
}
pub const ORG_SK: &str = "ORG";
/// `begins_with(sk, ORG_SK)` reads the organization with its children.
pub fn child_sk(child: Uuid) -> String {
    format!("ORG#CHILD#{child}")
}
pub const CHILD_SK_PREFIX: &str = "ORG#CHILD#";

/// Uniqueness item of an organization name (normalized) among the children
/// of `parent`. Top-level organizations' names are not unique: one
/// namespace across customers would tell each whether a name is taken.
pub fn org_name_pk(parent: Uuid, normalized: &str) -> String {
    format!("ORGNAME#{parent}#{normalized}")
}
pub const UNIQUE_SK: &str = "UNIQUE";

/// API key, looked up by the SHA-256 of the presented key. Only operators
/// write these items (the deployment refuses the API's roles every write to
/// a partition key with this prefix: Put, Update, Delete, in transactions
/// too).
pub fn api_key_pk(hash: &KeyHash) -> String {
    format!("{API_KEY_PK_PREFIX}{}", hash.to_hex())
}
pub const API_KEY_PK_PREFIX: &str = "APIKEY#";
pub const API_KEY_SK: &str = "APIKEY";
/// A key's rate-limit counters, in an item of their own that the API
/// writes (the key's item it only reads): an item here holds no authority,
/// so a function that writes anything it likes here mints no key.
pub fn rate_pk(hash: &KeyHash) -> String {
    format!("RATE#{}", hash.to_hex())
}
pub const RATE_SK: &str = "RATE";
/// The organization's keys as operators list, revoke and switch them: one
/// entry per key (its id, hash and record), in a partition only operators
/// write (like the keys' own items), so that what an operator's command
/// decides from is out of every API role's reach.
pub fn key_index_pk(org: Uuid) -> String {
    format!("{KEY_INDEX_PK_PREFIX}{org}")
}
pub fn key_index_sk(key_id: Uuid) -> String {
    format!("KEY#{key_id}")
}
pub const KEY_INDEX_PK_PREFIX: &str = "KEYS#";
pub const KEY_INDEX_SK_PREFIX: &str = "KEY#";
/// Where keys were summarized before the index (`ORG#<org>` /
/// `APIKEY#<keyId>`, a partition the API may write): no longer read or
/// written; `admin index-keys` builds the index of a table from before it.
pub const LEGACY_KEY_SUMMARY_PREFIX: &str = "APIKEY#";

/// Membership of a profile in an organization (organization partition).
pub fn member_sk(profile: Uuid) -> String {
    format!("MEMBER#{profile}")
}
pub const MEMBER_PREFIX: &str = "MEMBER#";
pub fn profile_pk(profile: Uuid) -> String {
    format!("PROFILE#{profile}")
}
pub const PROFILE_SK: &str = "PROFILE";
/// Uniqueness item of a phone number (E.164) among the members `org` made.
/// Per organization: a platform-wide item would tell any organization
/// whether a number belongs to another's member, and let it squat one.
pub fn phone_pk(org: Uuid, phone: &str) -> String {
    format!("PHONE#{org}#{phone}")
}
/// Uniqueness item of an e-mail address (compared in lowercase) among the
/// members `org` made (per organization, as phones).
pub fn email_pk(org: Uuid, email: &str) -> String {
    format!("EMAIL#{org}#{}", email.to_lowercase())
}

/// Truck (organization partition).
pub fn truck_sk(truck: Uuid) -> String {
    format!("{TRUCK_PREFIX}{truck}")
}
pub const TRUCK_PREFIX: &str = "TRUCK#";
/// Uniqueness item of a plate in `org`'s fleet: its country and normalized
/// form. Per organization: a platform-wide item would tell any
/// organization whether a plate is another's, and let it squat a rival's.
pub fn plate_pk(org: Uuid, country: &str, normalized: &str) -> String {
    format!("PLATE#{org}#{country}#{normalized}")
}

/// Support ticket quota of one API key (see `store/exactly_once/quotas.rs`).
pub fn support_quota_pk(key_id: Uuid) -> String {
    format!("SUPPORT#{key_id}")
}
pub const QUOTA_SK: &str = "QUOTA";
/// A fixed-window quota of one subject, an API key or a webhook
/// (`store/exactly_once/quotas.rs`, `WindowQuota`): `kind` names what it
/// counts (`geocode`, `password`, `ping`); one item per window
/// (`W#<window>`).
pub fn key_quota_pk(kind: &str, subject: Uuid) -> String {
    format!("QUOTA#{kind}#{subject}")
}

/// Idempotency records of one API key (see `store/exactly_once/idempotency.rs`), one
/// per `Idempotency-Key`, named by the key's SHA-256 so any printable key
/// fits.
pub fn idempotency_pk(key_id: Uuid) -> String {
    format!("IDEM#{key_id}")
}
pub fn idempotency_sk(idempotency_key: &str) -> String {
    use sha2::Digest;
    format!(
        "IDEM#{}",
        hex::encode(sha2::Sha256::digest(idempotency_key))
    )
}

/// `gsi1` partition of a receiving point, to find it by id alone.
pub fn receiving_point_lookup_pk(point: Uuid) -> String {
    format!("RP#{point}")
}

/// Surplus load (organization partition of the origin site's organization).
pub fn surplus_sk(surplus: Uuid) -> String {
    format!("{SURPLUS_PREFIX}{surplus}")
}
pub const SURPLUS_PREFIX: &str = "SURPLUS#";
/// `gsi1`: the organization's loads of one status group, by creation, in
/// the shard of the load's id (`record_shard`; all of them:
/// `record_partitions`).
pub fn surplus_group_pk(org: Uuid, group: &str, shard: Option<u32>) -> String {
    sharded(format!("ORG#{org}#SURPLUS#{group}"), shard)
}
/// `gsi2`: the loads of one origin site, by creation, in the shard of the
/// load's id.
pub fn surplus_site_pk(org: Uuid, site: Uuid, shard: Option<u32>) -> String {
    sharded(format!("ORG#{org}#SITE#{site}#SURPLUS"), shard)
}
/// `gsi2`: the active members who work at one site.
pub fn site_members_pk(org: Uuid, site: Uuid) -> String {
    format!("ORG#{org}#SITE#{site}#MEMBER")
}
/// Log entry of a load, ordered by the entry id (time-ordered).
pub fn surplus_log_sk(surplus: Uuid, entry: Uuid) -> String {
    format!("{}{entry}", surplus_log_prefix(surplus))
}
pub fn surplus_log_prefix(surplus: Uuid) -> String {
    format!("LOG#{surplus}#")
}
/// `gsi3`: the loads whose additive organization `org` is billed for, by
/// billing time (`delivered_at`, else `created_at`).
pub fn billing_pk(org: Uuid) -> String {
    format!("ORG#{org}#BILLING")
}
/// Partition of an organization's daily figures: their own, so reading a
/// window touches nothing but them.
pub fn rollup_pk(org: Uuid) -> String {
    format!("ROLLUP#{org}")
}
/// Daily figures of an organization's delivered loads (UTC day of
/// `created_at`).
pub fn day_rollup_sk(day: chrono::NaiveDate) -> String {
    format!("{DAY_PREFIX}{}", day.format("%Y-%m-%d"))
}
/// One of a day's `DAY_SHARDS` rollup items: the one a load's figures go
/// to, by the load's id (so that what it added is taken back there).
pub fn day_rollup_shard_sk(day: chrono::NaiveDate, shard: u32) -> String {
    format!("{}#S{shard}", day_rollup_sk(day))
}
pub const DAY_PREFIX: &str = "DAY#";
/// Rollup items a day's figures are spread over: deliveries of one
/// organization on one day meet in a transaction on one item in
/// `DAY_SHARDS` only (docs/decisions/reports-and-billing.md, "Reports").
pub const DAY_SHARDS: u32 = 8;
/// Webhook of an organization (organization partition).
pub fn webhook_sk(webhook: Uuid) -> String {
    format!("{WEBHOOK_PREFIX}{webhook}")
}
pub const WEBHOOK_PREFIX: &str = "WEBHOOK#";
/// Uniqueness of an organization's webhook for one event and URL (the
/// URL's SHA-256, so any length fits a key).
pub fn webhook_unique_pk(org: Uuid, event: &str, url: &str) -> String {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(url.as_bytes()));
    format!("WEBHOOK#{org}#{event}#{digest}")
}
/// Outbox record of an announced change.
pub fn outbox_pk(outbox: Uuid) -> String {
    format!("OUTBOX#{outbox}")
}
pub const OUTBOX_SK: &str = "OUTBOX";
/// `gsi1` partition of the outbox records written in one hour and not yet
/// dispatched (the sweeper reads it): one of the hour's `HOUR_SHARDS`
/// (`store::exactly_once::hourly`), or, for a record from before the hours were
/// sharded, the hour's one partition (`None`).
pub fn outbox_hour_pk(at: chrono::DateTime<chrono::Utc>, shard: Option<u32>) -> String {
    hour_pk("OUTBOX", at, shard)
}

/// Partitions an hour's sparse `gsi1` index is spread over, so that no one
/// partition takes every write of the hour (`make capacity`).
pub const HOUR_SHARDS: u32 = 16;

fn hour_pk(kind: &str, at: chrono::DateTime<chrono::Utc>, shard: Option<u32>) -> String {
    let hour = at.format("%Y-%m-%d-%H");
    match shard {
        Some(shard) => format!("{kind}#{hour}#SHARD{shard:02}"),
        None => format!("{kind}#{hour}"),
    }
}
/// A file its record names whose copy to that place is pending
/// (`store::exactly_once::staged`).
pub fn staged_file_pk(path: &str) -> String {
    format!("{STAGED_FILE_PK_PREFIX}{path}")
}
/// Only the functions that stage files and the sweeper that finishes them
/// may write under it (`StagedFilesByTheirStagers` in the template).
pub const STAGED_FILE_PK_PREFIX: &str = "FILE#";
pub const STAGED_SK: &str = "STAGED";
/// `gsi1` partition of the files staged in one hour and not yet in place
/// (the sweeper reads it): one of the hour's shards, as the outbox's.
pub fn staged_hour_pk(at: chrono::DateTime<chrono::Utc>, shard: Option<u32>) -> String {
    hour_pk("STAGED", at, shard)
}
/// A webhook delivery (one per outbox record and webhook).
pub fn delivery_pk(delivery: Uuid) -> String {
    format!("DELIVERY#{delivery}")
}
pub const DELIVERY_SK: &str = "DELIVERY";
/// The mark of an integrator's retry request whose attempt of the
/// delivery was made (one item per request, so none is ever forgotten
/// while its messages may come again).
pub fn manual_request_sk(request: Uuid) -> String {
    format!("MANUAL#{request}")
}
/// The delivery attempts of one webhook, in time order.
pub fn attempts_pk(webhook: Uuid) -> String {
    format!("ATTEMPTS#{webhook}")
}
/// The attempts of a webhook's pings: a log of their own, so the
/// deliveries list shows loads' deliveries only (its v1 schema's).
pub fn ping_attempts_pk(webhook: Uuid) -> String {
    format!("PINGS#{webhook}")
}
pub fn attempt_sk(at: crate::model::Timestamp, delivery: Uuid, attempt: u32) -> String {
    format!("{at}#{delivery}#{attempt:02}")
}

/// Audit record of an operator's command: in the partition of the
/// organization it concerned (`AUDIT#ORG#<org>`), or of the platform
/// (`AUDIT#PLATFORM`) when it concerned none, ordered by time. Only
/// operators write these items (the deployment refuses the API's roles
/// every write under `AUDIT#`, as under `APIKEY#`).
pub fn audit_pk(org: Option<Uuid>) -> String {
    match org {
        Some(org) => format!("{AUDIT_PK_PREFIX}ORG#{org}"),
        None => format!("{AUDIT_PK_PREFIX}PLATFORM"),
    }
}
pub const AUDIT_PK_PREFIX: &str = "AUDIT#";
pub fn audit_sk(at: crate::model::Timestamp, id: Uuid, phase: &str) -> String {
    format!("{at}#{id}#{phase}")
}
/// `gsi1` partition of every audit record, whatever its organization.
pub const AUDIT_ALL_PK: &str = "AUDIT";

/// The partitions only operators write: the deployment refuses the API's
/// roles every write under these prefixes (`ApiKeyIssuanceByOperators`).
pub const OPERATOR_ONLY_PK_PREFIXES: [&str; 3] =
    [API_KEY_PK_PREFIX, KEY_INDEX_PK_PREFIX, AUDIT_PK_PREFIX];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_where_its_id_says() {
        let org = Uuid::now_v7();
        // Made before the spread: the organization's partition.
        let old = Uuid::now_v7();
        assert_eq!(record_shard(old), None);
        assert_eq!(record_pk(org, old), org_pk(org));
        // Spread: one of the shards, the same each time, its list keys too.
        let new = crate::model::id::spread_id();
        let shard = record_shard(new).unwrap();
        assert!(shard < RECORD_SHARDS);
        assert_eq!(record_pk(org, new), format!("ORG#{org}#SHARD{shard}"));
        assert_eq!(record_pk(org, new), record_pk(org, new));
        assert_eq!(
            surplus_group_pk(org, "open", Some(shard)),
            format!("ORG#{org}#SURPLUS#open#SHARD{shard}")
        );
        assert_eq!(
            surplus_site_pk(org, old, None),
            format!("ORG#{org}#SITE#{old}#SURPLUS")
        );
    }

    #[test]
    fn new_records_spread_evenly_and_lists_read_every_partition() {
        let mut counts = [0u32; RECORD_SHARDS as usize];
        for _ in 0..4000 {
            counts[record_shard(crate::model::id::spread_id()).unwrap() as usize] += 1;
        }
        // 1,000 each on average; 900 is more than 6 standard deviations off.
        assert!(counts.iter().all(|n| *n > 900), "{counts:?}");
        let all: Vec<Option<u32>> = all_shards().collect();
        assert_eq!(all.len(), RECORD_SHARDS as usize + 1);
        assert_eq!(all[0], None);
    }
}
