//! Sites, receiving points and factories as an organization's records
//! (`<PREFIX><id>`, spread over its shards: `keys::record_pk`), each with
//! its geo index entry.

use crate::model::Timestamp;
use uuid::Uuid;

use crate::error::{ApiError, codes};
use crate::model::factory::FactoryRecord;
use crate::model::place::PlaceKind;
use crate::model::receiving_point::ReceivingPointRecord;
use crate::model::site::SiteRecord;
use crate::store::engine::keys;
use crate::store::records::geo::GeoEntry;
use crate::store::records::org_records::Record;

macro_rules! archivable {
    ($record:ty, prefix: $prefix:literal, geo: $kind:expr, not_found: $code:ident, $message:literal, public: |$r:ident| $public:expr, index: |$i:ident| $index:expr) => {
        impl Record for $record {
            const PREFIX: &'static str = $prefix;
            const SPREAD: bool = true;

            fn not_found() -> ApiError {
                codes::$code.with($message)
            }
            fn id(&self) -> Uuid {
                self.id
            }
            fn org_id(&self) -> Uuid {
                self.org_id
            }
            fn version(&self) -> u64 {
                self.version
            }
            fn set_version(&mut self, version: u64) {
                self.version = version;
            }
            fn archived_at(&self) -> Option<Timestamp> {
                self.archived_at
            }
            fn set_archived(&mut self, archived_at: Option<Timestamp>, now: Timestamp) {
                self.archived_at = archived_at;
                self.updated_at = now;
            }
            fn geo(&self) -> Vec<GeoEntry> {
                let $r = self;
                match (self.archived_at, self.coordinates) {
                    (None, Some(coordinates)) => vec![GeoEntry {
                        kind: $kind,
                        id: self.id,
                        org_id: self.org_id,
                        name: self.name.clone(),
                        coordinates,
                        public: $public,
                    }],
                    _ => Vec::new(),
                }
            }
            fn index(&self) -> Vec<(&'static str, String)> {
                let $i = self;
                $index
            }
        }
    };
}

archivable!(SiteRecord, prefix: "SITE#", geo: PlaceKind::Site, not_found: SITE_NOT_FOUND, "site not found", public: |_s| false, index: |_s| Vec::new());
archivable!(FactoryRecord, prefix: "FACTORY#", geo: PlaceKind::Factory, not_found: FACTORY_NOT_FOUND, "factory not found", public: |_f| false, index: |_f| Vec::new());
// Public receiving points are also indexed in the `PUBLIC` cells.
archivable!(
    ReceivingPointRecord,
    prefix: "RP#",
    geo: PlaceKind::ReceivingPoint,
    not_found: RECEIVING_POINT_NOT_FOUND,
    "receiving point not found",
    public: |point| point.is_public,
    // Found by id whatever its organization (`gsi1`): a load may go to
    // another organization's public receiving point.
    index: |point| vec![
        ("gsi1pk", keys::receiving_point_lookup_pk(point.id)),
        ("gsi1sk", "RP".to_owned()),
    ]
);
