//! The waybill of a load: an image, stored under the load's own prefix
//! (`waybills/<org>/<surplus>/`). Two ways in: a multipart upload through
//! the API (up to what the API's payload limit lets through), or a
//! presigned form straight to S3 (up to 10 MB) followed by a confirmation
//! that checks the stored object before it counts. Forms write under
//! `uploads/<org>/<surplus>/`, a prefix the bucket expires after a day, so
//! an upload never confirmed does not stay; confirmation copies the object
//! to the same name under `waybills/` and removes the upload.

use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shared::auth::WriteData;
use shared::error::codes;
use shared::files::post_policy::UploadForm;
use shared::files::{ImageKind, MAX_FILE_BYTES, Peeked, SNIFF_BYTES};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::http::idempotency::SealAtRest;
use shared::http::multipart::{self, ImageUpload};
use shared::http::path::{PathId, SurplusId};
use shared::model::surplus::{StoredWaybill, SurplusRecord};
use shared::store::outcome;
use shared::{ApiError, ApiResult};
use uuid::Uuid;

/// How long a presigned upload form stays valid.
const FORM_LIFETIME: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Where kept waybills live, and where forms upload to before confirmation.
const KEPT: &str = "waybills";
const UPLOADS: &str = "uploads";

/// `<area>/<org>/<surplus>/<name>`: every file of a load is named by a
/// fresh id and its kind's extension.
fn path(area: &str, org: Uuid, surplus: Uuid, name: &str) -> String {
    format!("{area}/{org}/{surplus}/{name}")
}

/// A new file's name; the same for every retry of a request with the
/// same `Idempotency-Key`, so a retry after a failure writes over what the
/// failed attempt left instead of beside it.
fn new_name(kind: ImageKind) -> String {
    let id = outcome::idempotent_id().unwrap_or_else(Uuid::now_v7);
    format!("{id}.{}", kind.extension())
}

/// The name of one of this load's form uploads, when `storage_path` is one:
/// `uploads/<org>/<surplus>/<id>.<jpg|png|webp>` and nothing else.
fn upload_name(storage_path: &str, org: Uuid, surplus: Uuid) -> Option<&str> {
    let name = storage_path.strip_prefix(&path(UPLOADS, org, surplus, ""))?;
    let (id, extension) = name.split_once('.')?;
    let known = ImageKind::ALL
        .iter()
        .any(|kind| kind.extension() == extension);
    let canonical = Uuid::try_parse(id).is_ok_and(|parsed| parsed.to_string() == id);
    (known && canonical).then_some(name)
}

/// Records a stored object as the load's waybill (the answer, the load,
/// commits with it); the one it replaces is deleted afterwards.
async fn keep<S>(ctx: &Ctx<S>, id: Uuid, waybill: StoredWaybill) -> ApiResult<Response> {
    let surpluses = ctx.store.surpluses();
    let mut replaced = None;
    let stored = async {
        match surpluses.set_waybill(ctx.org_id, id, &waybill).await {
            Ok((load, old)) => {
                replaced.clone_from(&old);
                Ok((load, old))
            }
            // Refused (delivered meanwhile, gone): leave no orphan. Not
            // after a failure, which may have committed unheard: the
            // object may be the load's waybill.
            Err(error) if error.status().is_client_error() => {
                ctx.files.delete(&waybill.storage_path).await?;
                Err(error)
            }
            Err(error) => Err(error),
        }
    };
    let answer = ctx
        .commit(
            stored,
            async |state, (load, _): (SurplusRecord, Option<String>)| {
                Ok(Json(Data(crate::view(&state, &load).await?)))
            },
        )
        .await?;
    // The same object kept twice (two confirmations at once) is not
    // replaced. Committed already: a failure leaves the old object behind
    // (logged), not the request undone.
    if let Some(old) = replaced.filter(|old| *old != waybill.storage_path) {
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
    ctx.store.surpluses().require(ctx.org_id, id).await?;
    let path = path(KEPT, ctx.org_id, id, &new_name(upload.kind));
    let size = upload.bytes.len() as u64;
    ctx.files.put(&path, upload.bytes, upload.kind).await?;
    let waybill = StoredWaybill {
        storage_path: path,
        content_type: upload.kind.content_type().into(),
        size,
        uploaded_at: shared::model::now(),
    };
    keep(&ctx, id, waybill).await
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
    let path = path(UPLOADS, ctx.org_id, id, &new_name(kind));
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

/// Checks of an upload that keeps changing before confirmation gives up.
const CHECK_TRIES: usize = 3;

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
/// (size, image by content); one that does not is deleted (422). A retry
/// of a confirmation that succeeded answers the load again.
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
    let name = upload_name(&body.storage_path, ctx.org_id, id).ok_or_else(not_found)?;
    let upload = body.storage_path.as_str();
    let kept = path(KEPT, ctx.org_id, id, name);
    if load
        .waybill
        .as_ref()
        .is_some_and(|w| w.storage_path == kept)
    {
        // A retry of a confirmation that succeeded.
        ctx.files.delete(upload).await?;
        return Ok(Json(Data(crate::view(&ctx, &load).await?)).into_response());
    }
    // The object is checked, then exactly the version checked is copied:
    // an upload written over it in between (the form stays valid 15
    // minutes) is checked in its turn, never copied unchecked.
    let mut checked_copy = None;
    for _ in 0..CHECK_TRIES {
        let peeked = ctx.files.peek(upload).await?.ok_or_else(not_found)?;
        let kind = match check(&peeked) {
            Ok(kind) => kind,
            Err(error) => {
                ctx.files.delete(upload).await?;
                return Err(error);
            }
        };
        if ctx.files.copy_checked(upload, &peeked, &kept, kind).await? {
            checked_copy = Some((peeked.size, kind));
            break;
        }
    }
    let (size, kind) = checked_copy.ok_or_else(|| {
        codes::CONCURRENT_UPDATE
            .with("the upload kept changing while it was checked; confirm it again")
    })?;
    let waybill = StoredWaybill {
        storage_path: kept,
        content_type: kind.content_type().into(),
        size,
        uploaded_at: shared::model::now(),
    };
    let answer = keep(&ctx, id, waybill).await?;
    // Only once kept: until then a retry can still find the upload (the
    // bucket expires what is left under `uploads/` after a day).
    leave_behind(ctx.files.delete(upload).await, upload);
    Ok(answer)
}
