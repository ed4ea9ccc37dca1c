//! The waybill of a load: an image, kept under the load's own prefix
//! (`waybills/<org>/<surplus>/`). Two ways in: a multipart upload through
//! the API (up to what the API's payload limit lets through), or a
//! presigned form straight to S3 (up to 10 MB) followed by a confirmation
//! that checks the stored object before it counts.
//!
//! Every file is uploaded under `uploads/<org>/<surplus>/` first, a prefix
//! the bucket expires after a day, and reaches `waybills/` only once the
//! load that names it committed (`store::exactly_once::staged`, `files::promote`): no
//! object is written where a record may point before its record commits,
//! and an upload whose record never commits (refused, or its request
//! died) expires. Every attempt names its file afresh, so no two attempts
//! (a retry, a request thawed past its lease, a key reused after its
//! retention) ever write or delete the same object; nothing deletes an
//! object a record names. A delivered load's waybill is locked before
//! anything is written.

use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shared::auth::WriteData;
use shared::error::codes;
use shared::files::paths::{self, Area};
use shared::files::post_policy::UploadForm;
use shared::files::{ImageKind, MAX_FILE_BYTES, Peeked, SNIFF_BYTES, promote};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::http::idempotency::SealAtRest;
use shared::http::multipart::{self, ImageUpload};
use shared::http::path::{PathId, SurplusId};
use shared::model::surplus::{StoredWaybill, SurplusRecord};
use shared::store::exactly_once::staged::{Owner, StagedFile};
use shared::{ApiError, ApiResult};
use uuid::Uuid;

/// How long a presigned upload form stays valid.
const FORM_LIFETIME: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// An upload checked to become load `id`'s waybill.
struct Checked {
    upload: String,
    version: Option<String>,
    etag: Option<String>,
    kind: ImageKind,
    size: u64,
    /// The form upload it came from, if it came from one.
    source: Option<String>,
}

/// Makes `checked` the load's waybill: the load (and the request's
/// answer) commits with the file staged under a new name in `waybills/`,
/// then the upload is copied there; the waybill it replaced is deleted
/// once the load no longer names it.
async fn keep<S>(ctx: &Ctx<S>, id: Uuid, checked: Checked) -> ApiResult<Response> {
    let kept = paths::new(Area::Waybills, ctx.org_id, id, checked.kind);
    let content_type = checked.kind.content_type().to_owned();
    let waybill = StoredWaybill {
        storage_path: kept.clone(),
        content_type: content_type.clone(),
        size: checked.size,
        uploaded_at: shared::model::now(),
        source: checked.source,
    };
    let staged = StagedFile {
        path: kept,
        upload: checked.upload,
        version: checked.version,
        etag: checked.etag,
        content_type,
        owner: Owner::Surplus {
            org_id: ctx.org_id,
            id,
        },
        created_at: shared::model::now(),
    };
    let mut replaced = None;
    let stored = async {
        let (load, old) = ctx
            .store
            .surpluses()
            .set_waybill(ctx.org_id, id, &waybill, &staged)
            .await?;
        replaced.clone_from(&old);
        Ok((load, old))
    };
    let answer = ctx
        .commit(
            stored,
            async |state, (load, _): (SurplusRecord, Option<String>)| {
                // The answer's link is signed for 24 hours: kept sealed.
                Ok(SealAtRest(Json(Data(crate::view(&state, &load).await?))))
            },
        )
        .await?;
    // Committed: the file goes to its place (the sweeper finishes it if
    // this fails or the function dies), then the replaced one goes.
    if let Err(error) = promote::promote(&ctx.files, &ctx.store, &staged).await {
        tracing::warn!(%error, path = staged.path, "a waybill left for the sweeper to put in place");
    }
    if let Some(old) = replaced {
        leave_behind(ctx.files.delete(&old).await, &old);
    }
    Ok(answer)
}

/// A file no longer needed that could not be deleted once the change that
/// freed it was committed: logged (its name holds no secret), the answer
/// stands.
fn leave_behind(deleted: ApiResult<()>, path: &str) {
    if let Err(error) = deleted {
        tracing::warn!(%error, path, "a file no longer needed was left behind");
    }
}

/// POST /api/v1/surpluses/{surplusId}/waybill — write:data — multipart
/// field `file`: JPEG, PNG or WebP by content, at most 10 MB; 409
/// `waybill_locked` once delivered.
pub async fn upload(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    upload: ImageUpload,
) -> ApiResult<Response> {
    let load = ctx.store.surpluses().require(ctx.org_id, id).await?;
    load.waybill_open()?;
    let staged = paths::new(Area::Uploads, ctx.org_id, id, upload.kind);
    let size = upload.bytes.len() as u64;
    let version = ctx.files.put(&staged, upload.bytes, upload.kind).await?;
    let checked = Checked {
        upload: staged,
        version,
        etag: None,
        kind: upload.kind,
        size,
        source: None,
    };
    keep(&ctx, id, checked).await
}

#[derive(Debug, Deserialize)]
pub struct UploadRequest {
    /// `image/jpeg`, `image/png` or `image/webp`: the form only takes that type.
    content_type: String,
}

#[derive(Serialize)]
pub struct UploadGrant {
    /// The object the form writes; confirm it afterwards.
    storage_path: String,
    #[serde(flatten)]
    form: UploadForm,
}

/// POST /api/v1/surpluses/{surplusId}/waybill/upload — write:data — a
/// presigned form for one object of this load, 1 byte to 10 MB, of the
/// given type, valid 15 minutes.
pub async fn upload_form(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    JsonBody(body): JsonBody<UploadRequest>,
) -> ApiResult<SealAtRest<Json<Data<UploadGrant>>>> {
    let kind = ImageKind::from_content_type(&body.content_type).ok_or_else(|| {
        ApiError::validation(
            "content_type",
            "must be image/jpeg, image/png or image/webp",
        )
    })?;
    ctx.store.surpluses().require(ctx.org_id, id).await?;
    let path = paths::new(Area::Uploads, ctx.org_id, id, kind);
    let form = ctx.files.upload_form(&path, kind, FORM_LIFETIME).await?;
    // The form carries signed temporary credentials: kept for a retry
    // only sealed.
    Ok(SealAtRest(Json(Data(UploadGrant {
        storage_path: path,
        form,
    }))))
}

#[derive(Debug, Deserialize)]
pub struct Confirm {
    storage_path: String,
}

/// An upload that is no waybill: too large, empty, or not an image.
fn check(peeked: &Peeked) -> ApiResult<ImageKind> {
    if peeked.size > MAX_FILE_BYTES {
        Err(codes::FILE_TOO_LARGE.with(format!(
            "the file is larger than {MAX_FILE_BYTES} bytes (10 MiB)"
        )))
    } else if peeked.size == 0 {
        multipart::image(&[])
    } else {
        multipart::image(&peeked.head[..peeked.head.len().min(SNIFF_BYTES)])
    }
}

/// Longer than any form's `storage_path` (about 125 characters).
const MAX_STORAGE_PATH: usize = 200;

/// POST /api/v1/surpluses/{surplusId}/waybill/confirm — write:data — the
/// object uploaded with a form becomes the waybill once it checks out
/// (size, image by content); one that does not is deleted (422). A
/// confirmation of the upload the load's waybill came from answers the
/// load again.
pub async fn confirm(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    JsonBody(body): JsonBody<Confirm>,
) -> ApiResult<Response> {
    shared::model::validate::max_len("storage_path", &body.storage_path, MAX_STORAGE_PATH)?;
    let load = ctx.store.surpluses().require(ctx.org_id, id).await?;
    let not_found = || {
        codes::UPLOAD_NOT_FOUND.with("storage_path names no upload of this load's forms (nothing uploaded yet, or another load's)")
    };
    paths::parse(&body.storage_path)
        .filter(|upload| upload.is(Area::Uploads, ctx.org_id, id))
        .ok_or_else(not_found)?;
    let upload = body.storage_path;
    let confirmed = load.waybill.as_ref().and_then(|w| w.source.as_deref());
    if confirmed == Some(upload.as_str()) {
        // This upload is the waybill already (a confirmation sent again).
        let view = crate::view(&ctx, &load).await?;
        return Ok(SealAtRest(Json(Data(view))).into_response());
    }
    load.waybill_open()?;
    // Exactly the version checked here is what the load keeps: the copy
    // names it (the form stays valid 15 minutes, and an upload written
    // over it afterwards is never copied unchecked).
    let peeked = ctx.files.peek(&upload).await?.ok_or_else(not_found)?;
    let kind = match check(&peeked) {
        Ok(kind) => kind,
        Err(error) => {
            ctx.files.delete(&upload).await?;
            return Err(error);
        }
    };
    let checked = Checked {
        source: Some(upload.clone()),
        upload,
        version: peeked.version,
        etag: peeked.etag,
        kind,
        size: peeked.size,
    };
    keep(&ctx, id, checked).await
}
