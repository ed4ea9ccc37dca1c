//! Key scopes, fixed when a key is created.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "read:orgs")]
    ReadOrgs,
    #[serde(rename = "read:data")]
    ReadData,
    #[serde(rename = "write:orgs:self")]
    WriteOrgsSelf,
    #[serde(rename = "write:data")]
    WriteData,
    #[serde(rename = "*")]
    All,
}

impl Scope {
    pub const EVERY: [Scope; 5] = [
        Scope::ReadOrgs,
        Scope::ReadData,
        Scope::WriteOrgsSelf,
        Scope::WriteData,
        Scope::All,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::ReadOrgs => "read:orgs",
            Scope::ReadData => "read:data",
            Scope::WriteOrgsSelf => "write:orgs:self",
            Scope::WriteData => "write:data",
            Scope::All => "*",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Self::EVERY.into_iter().find(|s| s.as_str() == text.trim())
    }
}

/// A scope a route requires (a marker type per scope, for `Ctx<S>`).
pub trait RequiredScope: 'static {
    const SCOPE: Scope;
    /// A deactivated organization's key gets 404 `org_not_found` here,
    /// where every other route answers 403 `org_inactive`.
    const INACTIVE_ORG_IS_NOT_FOUND: bool = false;
}

/// Marker: `read:orgs`, for `GET /api/v1/orgs`, whose answer to a
/// deactivated organization's key the contract gives as 404
/// `org_not_found` ("missing or soft-deleted").
pub struct ReadOwnOrg;

impl RequiredScope for ReadOwnOrg {
    const SCOPE: Scope = Scope::ReadOrgs;
    const INACTIVE_ORG_IS_NOT_FOUND: bool = true;
}

macro_rules! scopes {
    ($($name:ident => $scope:expr;)*) => {
        $(
            #[doc = concat!("Marker: the route needs `", stringify!($scope), "`.")]
            pub struct $name;
            impl RequiredScope for $name {
                const SCOPE: Scope = $scope;
            }
        )*
    };
}

scopes! {
    ReadOrgs => Scope::ReadOrgs;
    ReadData => Scope::ReadData;
    WriteOrgsSelf => Scope::WriteOrgsSelf;
    WriteData => Scope::WriteData;
}

/// True when `granted` includes `needed` or `*`.
pub fn allows(granted: &[Scope], needed: Scope) -> bool {
    granted.iter().any(|s| *s == needed || *s == Scope::All)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_grants_everything() {
        for needed in Scope::EVERY {
            assert!(allows(&[Scope::All], needed));
        }
        assert!(allows(&[Scope::ReadOrgs], Scope::ReadOrgs));
        assert!(!allows(&[Scope::ReadOrgs], Scope::WriteOrgsSelf));
        assert!(!allows(&[], Scope::ReadData));
    }

    #[test]
    fn scopes_round_trip_as_text() {
        for scope in Scope::EVERY {
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
            assert_eq!(serde_json::to_value(scope).unwrap(), scope.as_str());
        }
        assert_eq!(Scope::parse("write:everything"), None);
    }
}
