//! A staged file put in its place (`store::staged`): once the record that
//! names the file committed, the upload (exactly the version checked) is
//! copied to the name the record holds, and the staged item removed. The
//! request that committed does it right after its commit; the sweeper
//! (`webhook-dispatcher`'s schedule) finishes what a request that died in
//! between left, within the day the upload is kept.

use super::Files;
use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use crate::store::staged::StagedFile;

/// Copies `staged`'s upload to its place and removes its staged item. A
/// copy made twice (the request and the sweeper) writes the same bytes.
pub async fn promote(files: &Files, store: &Store, staged: &StagedFile) -> ApiResult<()> {
    let copied = files
        .copy_version(
            &staged.upload,
            staged.version.as_deref(),
            staged.etag.as_deref(),
            &staged.path,
            &staged.content_type,
        )
        .await?;
    if !copied {
        // Only in a bucket without versions, which no deployment has.
        return Err(ApiError::internal(format!(
            "the upload staged for {} changed before it was copied",
            staged.path
        )));
    }
    store.staged().done(&staged.path).await
}

/// What the sweeper did with the staged files it found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Copied to their place.
    pub promoted: usize,
    /// Named by no record any more (replaced before they were copied):
    /// dropped, nothing copied.
    pub dropped: usize,
    /// Could not be copied (logged; tried again on the next sweep).
    pub failed: usize,
}

/// Finishes the files staged in the last `hours` hours and at least
/// `settle` ago whose requests did not (they died between their commit and
/// the copy).
pub async fn sweep(
    files: &Files,
    store: &Store,
    hours: u32,
    settle: chrono::TimeDelta,
) -> ApiResult<Swept> {
    let mut swept = Swept::default();
    for staged in store.staged().waiting(hours, settle).await? {
        let finished = async {
            if store.staged().still_named(&staged).await? {
                promote(files, store, &staged).await?;
                Ok(true)
            } else {
                store.staged().done(&staged.path).await?;
                Ok::<_, ApiError>(false)
            }
        };
        match finished.await {
            Ok(true) => swept.promoted += 1,
            Ok(false) => swept.dropped += 1,
            Err(error) => {
                tracing::error!(%error, path = staged.path, "a staged file could not be put in place");
                swept.failed += 1;
            }
        }
    }
    Ok(swept)
}
