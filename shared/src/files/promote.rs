//! A staged file put in its place (`store::exactly_once::staged`): once the record that
//! names the file committed, the upload (exactly the version checked) is
//! copied to the name the record holds, and the staged item removed. The
//! request that committed does it right after its commit; the sweeper
//! (`webhook-dispatcher`'s schedule) finishes what a request that died in
//! between left, within the day the upload is kept, once the item has the
//! shape its owner's request gives it and the record names its file.

use super::paths::{self, Area};
use super::{Copied, Files};
use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use crate::store::exactly_once::staged::{Owner, StagedFile};

/// What `promote` did with a staged file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promoted {
    /// Copied to its place.
    InPlace,
    /// Its record names another file now (replaced while the copy waited:
    /// an attempt paused after its commit): nothing copied.
    Replaced,
}

/// Copies `staged`'s upload to its place and removes its staged item, if
/// the record still names the file (read right before the copy: an
/// attempt paused after its commit must not place a file its record was
/// given up for meanwhile). The copy never writes over an object: one
/// made twice (the request and the sweeper) finds the first one's in
/// place. The request that staged the file calls it right after its
/// commit, on a name it made afresh; the sweeper looks first (`sweep`).
pub async fn promote(files: &Files, store: &Store, staged: &StagedFile) -> ApiResult<Promoted> {
    if !store.staged().still_named(staged).await? {
        store.staged().done(&staged.path).await?;
        return Ok(Promoted::Replaced);
    }
    let copied = files
        .copy_new(
            &staged.upload,
            staged.version.as_deref(),
            staged.etag.as_deref(),
            &staged.path,
            &staged.content_type,
        )
        .await?;
    if copied == Copied::SourceChanged {
        // Only in a bucket without versions, which no deployment has.
        return Err(ApiError::internal(format!(
            "the upload staged for {} changed before it was copied",
            staged.path
        )));
    }
    store.staged().done(&staged.path).await?;
    Ok(Promoted::InPlace)
}

/// Why a staged item is not one its owner's request could have written
/// (every API role may write items of the table, so the sweeper takes
/// nothing on its word): its path is not a new file of its owner's area,
/// organization and record, its content type is not its file's kind, or
/// its upload is not under its owner's own uploads.
pub fn untrusted(staged: &StagedFile) -> Option<&'static str> {
    let (area, org, owner) = match staged.owner {
        Owner::Surplus { org_id, id } => (Area::Waybills, org_id, id),
        Owner::ReceivingPoint { org_id, id } => (Area::ReceivingPoints, org_id, id),
    };
    let Some(kept) = paths::parse(&staged.path).filter(|p| p.is(area, org, owner)) else {
        return Some("its path is not a file of its owner's");
    };
    if kept.kind.content_type() != staged.content_type {
        return Some("its content type is not its file's kind");
    }
    if !paths::parse(&staged.upload).is_some_and(|p| p.is(Area::Uploads, org, owner)) {
        return Some("its upload is not under its owner's uploads");
    }
    None
}

/// What the sweeper did with the staged files it found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Copied to their place.
    pub promoted: usize,
    /// Named by no record any more (replaced before they were copied):
    /// dropped, nothing copied.
    pub dropped: usize,
    /// Not an item their owner's request could have written
    /// (`untrusted`): dropped, nothing copied, logged as an error.
    pub refused: usize,
    /// Could not be copied (logged; tried again on the next sweep).
    pub failed: usize,
}

/// What the sweeper does with one staged file.
enum Verdict {
    Promoted,
    Dropped,
    Refused,
}

/// Finishes the files staged in the last `hours` hours and at least
/// `settle` ago whose requests did not (they died between their commit and
/// the copy): each only once its record vouches for it.
pub async fn sweep(
    files: &Files,
    store: &Store,
    hours: u32,
    settle: chrono::TimeDelta,
) -> ApiResult<Swept> {
    let mut swept = Swept::default();
    for staged in store.staged().waiting(hours, settle).await? {
        let finished = async {
            if let Some(why) = untrusted(&staged) {
                tracing::error!(
                    path = staged.path,
                    upload = staged.upload,
                    why,
                    "a staged file no request of its owner could have staged: not copied"
                );
                store.staged().done(&staged.path).await?;
                Ok(Verdict::Refused)
            } else if files.exists(&staged.path).await? {
                // Whatever made the item, a file in place is not written
                // over (on engines that ignore the copy's condition too):
                // only its item is done.
                store.staged().done(&staged.path).await?;
                Ok(Verdict::Promoted)
            } else {
                Ok::<_, ApiError>(match promote(files, store, &staged).await? {
                    Promoted::InPlace => Verdict::Promoted,
                    Promoted::Replaced => Verdict::Dropped,
                })
            }
        };
        match finished.await {
            Ok(Verdict::Promoted) => swept.promoted += 1,
            Ok(Verdict::Dropped) => swept.dropped += 1,
            Ok(Verdict::Refused) => swept.refused += 1,
            Err(error) => {
                tracing::error!(%error, path = staged.path, "a staged file could not be put in place");
                swept.failed += 1;
            }
        }
    }
    Ok(swept)
}
