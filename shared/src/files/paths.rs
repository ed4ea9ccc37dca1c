//! Where files live in the bucket, in one place: `<area>/<org>/<owner>/
//! <id>.<extension>`, the owner being the record the file belongs to (a
//! load, a receiving point) and the id a fresh UUID for every file, so
//! that no two attempts ever name the same object. Uploads wait under
//! `uploads/` (which the bucket expires) until the record that names the
//! file's place commits (`promote`); kept files are under `waybills/` and
//! `receiving-points/`.

use uuid::Uuid;

use super::ImageKind;

/// A top-level prefix of the bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// Files not yet named by a committed record.
    Uploads,
    /// Loads' waybills.
    Waybills,
    /// Receiving points' photos.
    ReceivingPoints,
}

impl Area {
    const ALL: [Area; 3] = [Area::Uploads, Area::Waybills, Area::ReceivingPoints];

    pub fn prefix(self) -> &'static str {
        match self {
            Area::Uploads => "uploads",
            Area::Waybills => "waybills",
            Area::ReceivingPoints => "receiving-points",
        }
    }
}

/// What a file's path says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilePath {
    pub area: Area,
    pub org: Uuid,
    /// The record it belongs to.
    pub owner: Uuid,
    pub kind: ImageKind,
}

impl FilePath {
    /// Whether it is under `area`, of record `owner` of organization `org`.
    pub fn is(&self, area: Area, org: Uuid, owner: Uuid) -> bool {
        self.area == area && self.org == org && self.owner == owner
    }
}

/// A new file's path: a fresh id, `kind`'s extension.
pub fn new(area: Area, org: Uuid, owner: Uuid, kind: ImageKind) -> String {
    format!(
        "{}/{org}/{owner}/{}.{}",
        area.prefix(),
        Uuid::now_v7(),
        kind.extension()
    )
}

/// What `path` says, if it is exactly a path `new` makes (UUIDs in their
/// canonical form, a known extension, nothing more).
pub fn parse(path: &str) -> Option<FilePath> {
    let canonical = |text: &str| {
        Uuid::try_parse(text)
            .ok()
            .filter(|id| id.to_string() == text)
    };
    let mut parts = path.split('/');
    let (area, org, owner, name) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let area = Area::ALL.into_iter().find(|a| a.prefix() == area)?;
    let (id, extension) = name.split_once('.')?;
    canonical(id)?;
    let kind = ImageKind::ALL
        .into_iter()
        .find(|kind| kind.extension() == extension)?;
    Some(FilePath {
        area,
        org: canonical(org)?,
        owner: canonical(owner)?,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_path_reads_back_as_what_it_was_made_of() {
        let (org, owner) = (Uuid::new_v4(), Uuid::new_v4());
        for area in Area::ALL {
            for kind in ImageKind::ALL {
                let path = new(area, org, owner, kind);
                let parsed = parse(&path).unwrap();
                assert_eq!(
                    parsed,
                    FilePath {
                        area,
                        org,
                        owner,
                        kind
                    }
                );
                assert!(parsed.is(area, org, owner));
                assert!(!parsed.is(area, owner, org));
                assert_ne!(path, new(area, org, owner, kind), "fresh each time");
            }
        }
    }

    #[test]
    fn anything_else_reads_as_no_path() {
        let (org, owner, id) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        for path in [
            format!("waybills/{org}/{owner}/{id}.gif"),
            format!("waybills/{org}/{owner}/{id}.png/x"),
            format!("waybills/{org}/{owner}/{id}"),
            format!("waybills/{org}/{owner}/seeded.png"),
            format!(
                "waybills/{org}/{owner}/{}.png",
                id.to_string().to_uppercase()
            ),
            format!("other/{org}/{owner}/{id}.png"),
            format!("waybills/{org}/{id}.png"),
            format!("/waybills/{org}/{owner}/{id}.png"),
            format!("waybills/{org}/../{id}.png"),
            String::new(),
        ] {
            assert_eq!(parse(&path), None, "{path}");
        }
    }
}
