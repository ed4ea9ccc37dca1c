//! A file upload (`multipart/form-data`, field `file`): one JPEG, PNG or
//! WebP image of at most 10 MB, its kind judged by its bytes (a PNG named
//! `.jpg` is the PNG it is; text sent as `image/png` is refused). Each
//! problem has its own answer: 400 `invalid_multipart` (not a multipart
//! body), 413 `file_too_large`, 422 `file_missing`, `file_empty`,
//! `unsupported_file_type`.

use axum::extract::{FromRequest, Request};
use bytes::Bytes;

use crate::error::ApiError;
use crate::error::codes;
use crate::files::{ImageKind, MAX_FILE_BYTES};

/// The multipart field that carries the file.
pub const FIELD: &str = "file";
/// Room for the form's boundaries and headers around the file.
const ENVELOPE_BYTES: usize = 64 * 1024;
/// The largest multipart request read.
pub const MAX_REQUEST_BYTES: usize = MAX_FILE_BYTES as usize + ENVELOPE_BYTES;

pub struct ImageUpload {
    pub bytes: Bytes,
    pub kind: ImageKind,
}

fn invalid(detail: impl std::fmt::Display) -> ApiError {
    codes::INVALID_MULTIPART.with(format!(
        "the body must be multipart/form-data with a `{FIELD}` field: {detail}"
    ))
}

fn too_large() -> ApiError {
    codes::FILE_TOO_LARGE.with(format!(
        "the file is larger than {MAX_FILE_BYTES} bytes (10 MiB)"
    ))
}

/// Checks a file's bytes: not empty, within the size, an accepted image.
pub fn image(bytes: &[u8]) -> Result<ImageKind, ApiError> {
    if bytes.is_empty() {
        return Err(codes::FILE_EMPTY.with("the file is empty"));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    ImageKind::sniff(bytes).ok_or_else(|| {
        codes::UNSUPPORTED_FILE_TYPE
            .with("the file is not a JPEG, PNG or WebP image (judged by its content)")
    })
}

impl<S: Send + Sync> FromRequest<S> for ImageUpload {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let boundary = multer::parse_boundary(&content_type).map_err(invalid)?;
        let body = axum::body::to_bytes(request.into_body(), MAX_REQUEST_BYTES)
            .await
            .map_err(|_| too_large())?;
        let stream = futures::stream::once(async move { Ok::<_, std::convert::Infallible>(body) });
        let mut form = multer::Multipart::new(stream, boundary);
        while let Some(field) = form.next_field().await.map_err(invalid)? {
            if field.name() != Some(FIELD) {
                continue;
            }
            let bytes = field.bytes().await.map_err(invalid)?;
            let kind = image(&bytes)?;
            return Ok(ImageUpload { bytes, kind });
        }
        Err(codes::FILE_MISSING
            .with("the form has no `file` field; send the image as field `file`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn form(boundary: &str, parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (name, bytes) in parts {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"x.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        body
    }

    async fn upload(content_type: &str, body: Vec<u8>) -> Result<ImageUpload, ApiError> {
        let request = Request::builder()
            .method("POST")
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap();
        ImageUpload::from_request(request, &()).await
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[tokio::test]
    async fn the_bytes_decide_the_kind() {
        let ok = upload(
            "multipart/form-data; boundary=b",
            form("b", &[("other", b"x"), ("file", PNG)]),
        )
        .await
        .unwrap();
        assert_eq!(ok.kind, ImageKind::Png, "a PNG named .jpg stays a PNG");
        assert_eq!(&ok.bytes[..], PNG);
    }

    #[tokio::test]
    async fn each_problem_has_its_code() {
        let mp = "multipart/form-data; boundary=b";
        for (content_type, body, code) in [
            ("application/json", b"{}".to_vec(), "invalid_multipart"),
            (mp, b"garbage".to_vec(), "invalid_multipart"),
            (mp, form("b", &[("other", PNG)]), "file_missing"),
            (mp, form("b", &[("file", b"")]), "file_empty"),
            (
                mp,
                form("b", &[("file", b"just some text")]),
                "unsupported_file_type",
            ),
        ] {
            let e = upload(content_type, body).await.err().unwrap();
            assert_eq!(e.code(), code);
        }
        let mut big = PNG.to_vec();
        big.resize(MAX_FILE_BYTES as usize + 1, 0);
        let e = upload(mp, form("b", &[("file", &big)]))
            .await
            .err()
            .unwrap();
        assert_eq!((e.code(), e.status().as_u16()), ("file_too_large", 413));
    }
}
