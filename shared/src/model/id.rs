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
