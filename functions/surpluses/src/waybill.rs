//! The waybill of a load: an image, stored under the load's own prefix
//! (`waybills/<org>/<surplus>/`). Two ways in: a multipart upload through
//! the API (up to what the API's payload limit lets through), or a
//! presigned form straight to S3 (up to 10 MB) followed by a confirmation
//! that checks the stored object before it counts.

use axum::Json;
use serde::{Deserialize, Serialize};
use shared::auth::WriteData;
use shared::files::post_policy::UploadForm;
use shared::files::{ImageKind, MAX_FILE_BYTES, SNIFF_BYTES};
use shared::http::Ctx;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::http::multipart::{self, ImageUpload};
use shared::http::path::{PathId, SurplusId};
use shared::model::surplus::{StoredWaybill, Surplus};
use shared::{ApiError, ApiResult};
use uuid::Uuid;

/// How long a presigned upload form stays valid.
const FORM_LIFETIME: std::time::Duration = std::time::Duration::from_secs(15 * 60);

fn prefix(org: Uuid, surplus: Uuid) -> String {
    format!("waybills/{org}/{surplus}/")
}

fn new_path(org: Uuid, surplus: Uuid, kind: ImageKind) -> String {
    format!(
        "{}{}.{}",
        prefix(org, surplus),
        Uuid::now_v7(),
        kind.extension()
    )
}

/// Records a stored object as the load's waybill; the one it replaces is
/// deleted.
async fn keep<S>(ctx: &Ctx<S>, id: Uuid, waybill: StoredWaybill) -> ApiResult<Json<Data<Surplus>>> {
    let stored = ctx
        .store
        .surpluses()
        .set_waybill(ctx.org_id, id, &waybill)
        .await;
    let (load, replaced) = match stored {
        Ok(done) => done,
        Err(error) => {
            // Not kept (delivered meanwhile, gone): leave no orphan.
            ctx.files.delete(&waybill.storage_path).await?;
            return Err(error);
        }
    };
    if let Some(old) = replaced {
        ctx.files.delete(&old).await?;
    }
    Ok(Json(Data(crate::view(ctx, &load).await?)))
}

/// POST /api/v1/surpluses/{surplusId}/waybill — write:data — multipart
/// field `file`: JPEG, PNG or WebP by content, at most 10 MB; 409
/// `waybill_locked` once delivered.
pub async fn upload(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    upload: ImageUpload,
) -> ApiResult<Json<Data<Surplus>>> {
    ctx.store.surpluses().require(ctx.org_id, id).await?;
    let path = new_path(ctx.org_id, id, upload.kind);
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
) -> ApiResult<Json<Data<UploadGrant>>> {
    let kind = ImageKind::from_content_type(&body.content_type).ok_or_else(|| {
        ApiError::validation(
            "content_type",
            "must be image/jpeg, image/png or image/webp",
        )
    })?;
    ctx.store.surpluses().require(ctx.org_id, id).await?;
    let path = new_path(ctx.org_id, id, kind);
    let form = ctx.files.upload_form(&path, kind, FORM_LIFETIME).await?;
    Ok(Json(Data(UploadGrant {
        storage_path: path,
        form,
    })))
}

#[derive(Debug, Deserialize)]
pub struct Confirm {
    storage_path: String,
}

/// POST /api/v1/surpluses/{surplusId}/waybill/confirm — write:data — the
/// object uploaded with a form becomes the waybill once it checks out
/// (size, image by content); one that does not is deleted (422).
pub async fn confirm(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    JsonBody(body): JsonBody<Confirm>,
) -> ApiResult<Json<Data<Surplus>>> {
    let path = body.storage_path;
    ctx.store.surpluses().require(ctx.org_id, id).await?;
    let not_found = || {
        ApiError::Unprocessable {
        code: "upload_not_found",
        message: "storage_path names no upload of this load's forms (nothing uploaded yet, or another load's)".into(),
    }
    };
    if !path.starts_with(&prefix(ctx.org_id, id)) || path.contains("..") {
        return Err(not_found());
    }
    let (size, head) = ctx.files.peek(&path).await?.ok_or_else(not_found)?;
    let checked = if size > MAX_FILE_BYTES {
        Err(ApiError::TooLarge {
            code: "file_too_large",
            message: format!("the file is larger than {MAX_FILE_BYTES} bytes (10 MB)"),
        })
    } else if size == 0 {
        multipart::image(&[])
    } else {
        multipart::image(&head[..head.len().min(SNIFF_BYTES)])
    };
    let kind = match checked {
        Ok(kind) => kind,
        Err(error) => {
            ctx.files.delete(&path).await?;
            return Err(error);
        }
    };
    let waybill = StoredWaybill {
        storage_path: path,
        content_type: kind.content_type().into(),
        size,
        uploaded_at: shared::model::now(),
    };
    keep(&ctx, id, waybill).await
}
