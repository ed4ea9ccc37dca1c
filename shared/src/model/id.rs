//! Ids as the API takes them in: UUIDs in the canonical hyphenated form
//! (8-4-4-4-12 hexadecimal digits, either case), the form every answer
//! uses and the description's pattern states. The braced, URN and
//! unhyphenated spellings the uuid crate would also read are refused, so
//! the description and the parser agree.

use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

/// The canonical form of `text`, if it is one.
pub fn parse(text: &str) -> Option<Uuid> {
    (text.len() == 36)
        .then(|| Uuid::try_parse(text).ok())
        .flatten()
}

/// A new id of a record the store spreads over its organization's
/// partitions (sites, receiving points, factories, loads:
/// `store::engine::keys::record_pk`): ordered by time like a version 7 id
/// (its first 48 bits are the Unix milliseconds), marked version 8, so a
/// record's partition follows from its id. Records made before the spread
/// keep their version 7 ids, and with them the organization's partition.
pub fn spread_id() -> Uuid {
    let mut bytes = *Uuid::now_v7().as_bytes();
    // Version 8 in the version nibble; the variant bits stay RFC 9562's.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    Uuid::from_bytes(bytes)
}

/// Whether `id` is one `spread_id` made.
pub fn is_spread(id: Uuid) -> bool {
    id.get_version_num() == 8
}

/// A UUID field of a request body or query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Id(pub Uuid);

impl From<Id> for Uuid {
    fn from(id: Id) -> Uuid {
        id.0
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        parse(&text).map(Id).ok_or_else(|| {
            serde::de::Error::custom("must be a UUID (8-4-4-4-12 hexadecimal digits)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_ids_are_version_8_and_ordered_by_time() {
        let before = Uuid::now_v7();
        let (a, b) = (spread_id(), spread_id());
        assert_eq!((a.get_version_num(), b.get_version_num()), (8, 8));
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert!(is_spread(a) && !is_spread(before));
        // Same milliseconds as a version 7 id of the moment, and in order.
        assert!(a.as_bytes()[..6] >= before.as_bytes()[..6]);
        assert!(a.as_bytes()[..6] <= b.as_bytes()[..6]);
        assert!(parse(&a.to_string()) == Some(a));
    }

    #[test]
    fn only_the_canonical_form() {
        let canonical = "67e55044-10b1-426f-9247-bb680e5fe0c8";
        assert!(parse(canonical).is_some());
        assert!(parse(&canonical.to_uppercase()).is_some());
        for other in [
            "67e5504410b1426f9247bb680e5fe0c8",
            "{67e55044-10b1-426f-9247-bb680e5fe0c8}",
            "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
            "",
            "67e55044-10b1-426f-9247-bb680e5fe0c",
        ] {
            assert!(parse(other).is_none(), "{other}");
            assert!(
                serde_json::from_value::<Id>(other.into()).is_err(),
                "{other}"
            );
        }
        assert_eq!(
            serde_json::from_value::<Id>(canonical.into())
                .unwrap()
                .0
                .to_string(),
            canonical
        );
    }
}
