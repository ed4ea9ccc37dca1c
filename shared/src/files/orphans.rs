//! Files in place that no record names (`admin files check`). A file is
//! copied to its place only after the record that names it committed, and
//! every name is fresh (`paths::new`), so a record that no longer names
//! one never will again: such a file is an orphan for good. Orphans come
//! from a replaced waybill or photo whose request died before deleting it,
//! a copy made by an attempt thawed after its record moved on (`promote`
//! reads the record first, but a pause can fall between the read and the
//! copy), or a record gone. An object is judged by its own record
//! (a consistent read of the owner its path names), once it is older than
//! a grace period; one whose name no request makes is never judged.

use chrono::{DateTime, TimeDelta, Utc};

use super::Listed;
use super::paths::{self, Area};
use crate::error::ApiResult;
use crate::store::Store;
use crate::store::exactly_once::staged::Owner;

/// The areas whose files records name.
pub const AREAS: [Area; 2] = [Area::Waybills, Area::ReceivingPoints];

/// What one object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Looked {
    /// Its record names it.
    Named,
    /// Written within the grace period: not judged yet.
    Young,
    /// Named by no record, and older than the grace period.
    Orphan,
    /// Not a name any request makes (put there by hand?): left alone.
    Unrecognised,
}

/// The record that would name the file at `path`, if its name is one a
/// request makes in a records' area.
pub fn owner(path: &str) -> Option<Owner> {
    let file = paths::parse(path)?;
    let (org_id, id) = (file.org, file.owner);
    match file.area {
        Area::Waybills => Some(Owner::Surplus { org_id, id }),
        Area::ReceivingPoints => Some(Owner::ReceivingPoint { org_id, id }),
        Area::Uploads => None,
    }
}

/// What `listed` is, `now`, leaving what is younger than `grace`: one
/// consistent read of its record (none for the young and unrecognised).
pub async fn look(
    store: &Store,
    listed: &Listed,
    now: DateTime<Utc>,
    grace: TimeDelta,
) -> ApiResult<Looked> {
    if listed.modified > now - grace {
        return Ok(Looked::Young);
    }
    let Some(owner) = owner(&listed.path) else {
        return Ok(Looked::Unrecognised);
    };
    Ok(
        match store.staged().names(owner, &listed.path, None).await? {
            true => Looked::Named,
            false => Looked::Orphan,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::ImageKind;
    use uuid::Uuid;

    #[test]
    fn a_file_s_owner_is_the_record_of_its_area() {
        let (org_id, id) = (Uuid::new_v4(), Uuid::new_v4());
        let waybill = paths::new(Area::Waybills, org_id, id, ImageKind::Png);
        let photo = paths::new(Area::ReceivingPoints, org_id, id, ImageKind::Jpeg);
        let upload = paths::new(Area::Uploads, org_id, id, ImageKind::Png);
        assert_eq!(owner(&waybill), Some(Owner::Surplus { org_id, id }));
        assert_eq!(owner(&photo), Some(Owner::ReceivingPoint { org_id, id }));
        assert_eq!(owner(&upload), None, "uploads belong to no record yet");
        assert_eq!(owner(&format!("waybills/{org_id}/{id}/seeded.png")), None);
    }
}
