//! `Idempotency-Key` on `POST /api/v1/*`: a retry of a request with the
//! same key and the same request gets the first answer again instead of
//! running again. Three steps, each taken by its stage of the request's
//! lifecycle (`lifecycle`):
//!
//! 1. `read` (on arrival, before routing): buffers the body and takes the
//!    request's fingerprint, an HMAC-SHA256 under the deployment's key over
//!    method, path and query, and body (a multipart body without its
//!    boundary, which clients regenerate): kept 24 h beside the answer, it
//!    tells nothing of a body (a member's password) to whoever reads the
//!    table or a backup without the key.
//! 2. `claim` (once the key is admitted): checks the header (400
//!    `invalid_idempotency_key`) and claims the key for this API key with
//!    one conditional write: this request runs, or it gets 422
//!    `idempotency_key_reused`, 409 `idempotency_key_in_flight`, or the
//!    first answer with `Idempotent-Replayed: true`.
//! 3. `commit` (the route's write): a route that writes renders its
//!    answer from what its write is about to commit, and the answer goes
//!    into the write's own transaction (`store::exactly_once::outcome`), so a request
//!    that dies after its commit still leaves its answer for the retry.
//! 4. `settle` (after the handler): an answer not kept by a transaction
//!    (a refusal, a route that commits nothing) is kept for 24 h from the
//!    claim, or the key is freed when the answer is a 5xx or a 429
//!    (transient: a retry should run; a committed answer stays).
//!
//! An answer that carries a secret (`SealAtRest`: a webhook's secret, an
//! upload form's credentials) is kept sealed with the deployment's seal
//! key, bound to its item, and opened only to be replayed. A claim whose
//! request died holds the key for `LEASE` at most.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode, header};

use super::body;
use crate::clock::millis;
use crate::cursor::Cursors;
use crate::error::codes;
use crate::error::{ApiError, ErrorCode};
use crate::keyring::Keys;
use crate::sealed::Sealer;
use crate::store::Store;
use crate::store::exactly_once::idempotency::{
    Answer, Claim, Claimed, Fingerprints, Lost, item_of,
};
use crate::store::exactly_once::outcome::{self, Kept};

mod fingerprint;

pub use fingerprint::{fingerprint, fingerprint_of, fingerprints};

pub const HEADER: &str = "idempotency-key";
/// Set on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";
/// How long an answer is kept, from the first request.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
pub use crate::store::exactly_once::idempotency::LEASE;
/// Larger answers are not kept (the key is freed); no answer of the API's
/// POST routes comes near it, and an item holds 400 KB.
pub const MAX_KEPT_BODY: usize = 256 * 1024;
const MAX_KEY_LEN: usize = 255;
/// The headers kept with an answer.
const KEPT_HEADERS: [HeaderName; 2] = [header::CONTENT_TYPE, header::LOCATION];

/// An answer that carries a secret (a webhook's secret, an upload form's
/// temporary credentials): kept for an `Idempotency-Key` only sealed. A
/// handler wraps such an answer in it; the marker rides in the response's
/// extensions to `settle`.
pub struct SealAtRest<R>(pub R);

/// The marker `SealAtRest` leaves on the response.
#[derive(Clone, Copy, Debug)]
struct Sealed;

/// The marker of an answer its write's transaction kept already.
#[derive(Clone, Copy, Debug)]
struct Committed;

/// The marker of an answer given while an effect of the request may still
/// land, until then (Unix ms; `outcome::uncertain_until`): the key is held
/// until then, not freed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Uncertain(pub(crate) u64);

impl<R: IntoResponse> IntoResponse for SealAtRest<R> {
    fn into_response(self) -> Response {
        let mut response = self.0.into_response();
        response.extensions_mut().insert(Sealed);
        response
    }
}

/// An `Idempotency-Key` a request came with.
#[derive(Clone, Debug)]
pub enum Presented {
    Valid {
        key: String,
        fingerprint: Fingerprints,
        /// What the fingerprint was taken of: taken again when the key's
        /// item names a generation of the cursor key this instance has not
        /// read yet.
        taken: Taken,
    },
    /// Empty, too long, or not printable ASCII: 400 once the API key is
    /// admitted.
    Malformed,
}

/// What a request's fingerprint is taken of: its method, target, content
/// type and body.
#[derive(Clone, Debug)]
pub struct Taken {
    head: Arc<http::request::Parts>,
    body: bytes::Bytes,
}

impl Taken {
    fn of(parts: &http::request::Parts, body: &bytes::Bytes) -> Self {
        let mut head = http::Request::builder()
            .method(parts.method.clone())
            .uri(parts.uri.clone());
        if let Some(content_type) = parts.headers.get(header::CONTENT_TYPE) {
            head = head.header(header::CONTENT_TYPE, content_type.clone());
        }
        let (head, ()) = head
            .body(())
            .expect("a request's own method and URI")
            .into_parts();
        Self {
            head: Arc::new(head),
            body: body.clone(),
        }
    }

    fn fingerprints(&self, keys: &Keys) -> Result<Fingerprints, ApiError> {
        fingerprints(keys, &self.head, &self.body)
    }
}

/// The generation of the cursor key a stored fingerprint names (`k<n>:`;
/// none: version 1).
fn version_named(fingerprint: &str) -> u32 {
    fingerprint
        .strip_prefix('k')
        .and_then(|rest| rest.split_once(':'))
        .and_then(|(version, _)| version.parse().ok())
        .unwrap_or(1)
}

/// Step 1: a POST with the header has its body buffered (up to `limit`
/// bytes, the largest body any route takes) and its fingerprint taken;
/// the request comes back with what it presented. A body declared larger
/// than `limit` is left alone: the route's own extractor refuses it, and
/// there is nothing to replay.
pub async fn read(
    request: Request,
    limit: usize,
    cursors: &Cursors,
) -> Result<(Request, Option<Presented>), ApiError> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let Some(value) = request.headers().get(HEADER) else {
        return Ok((request, None));
    };
    let Some(key) = well_formed(value) else {
        return Ok((request, Some(Presented::Malformed)));
    };
    if body::declared_length(&request).is_some_and(|length| length > limit) {
        return Ok((request, None));
    }
    let (parts, sent) = request.into_parts();
    let bytes = body::at_most(sent, limit).await?;
    let taken = Taken::of(&parts, &bytes);
    let fingerprint = taken.fingerprints(&*cursors.keys().await?)?;
    let presented = Presented::Valid {
        key,
        fingerprint,
        taken,
    };
    Ok((
        Request::from_parts(parts, Body::from(bytes)),
        Some(presented),
    ))
}

/// The key, if it is 1 to 255 printable ASCII characters.
fn well_formed(value: &HeaderValue) -> Option<String> {
    // Spaces only inside: HTTP trims them at either end.
    let bytes = value.as_bytes();
    let visible = |b: &u8| (b'!'..=b'~').contains(b);
    let ends = bytes.first().is_some_and(visible) && bytes.last().is_some_and(visible);
    let printable = bytes.iter().all(|b| (b' '..=b'~').contains(b));
    (ends && printable && bytes.len() <= MAX_KEY_LEN)
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// Why an admitted request does not run: a contract error, or the first
/// answer to the same request.
#[derive(Debug)]
pub enum NotRun {
    Refused(ApiError),
    Replayed(Answer),
}

impl From<ApiError> for NotRun {
    fn from(error: ApiError) -> Self {
        NotRun::Refused(error)
    }
}

impl IntoResponse for NotRun {
    fn into_response(self) -> Response {
        match self {
            NotRun::Refused(error) => error.into_response(),
            NotRun::Replayed(answer) => replay(answer),
        }
    }
}

/// Step 2, for an admitted request of API key `key_id`: claims the key the
/// request came with (`presented`), if any: the claim this request holds.
/// A key whose item holds a fingerprint of a generation of the cursor key
/// newer than this instance's ring lists (one that began at once, on an
/// instance that read the ring since) has the ring read again and is
/// claimed once more under it before it counts as reused.
pub async fn claim(
    store: &Store,
    sealer: &Sealer,
    cursors: &Cursors,
    presented: Option<Presented>,
    key_id: uuid::Uuid,
) -> Result<Option<Claim>, NotRun> {
    let (key, mut fingerprint, taken) = match presented {
        None => return Ok(None),
        Some(Presented::Malformed) => {
            return Err(codes::INVALID_IDEMPOTENCY_KEY
                .with(format!(
                    "Idempotency-Key must be 1 to {MAX_KEY_LEN} printable ASCII characters"
                ))
                .into());
        }
        Some(Presented::Valid {
            key,
            fingerprint,
            taken,
        }) => (key, fingerprint, taken),
    };
    let now = crate::clock::unix_ms();
    let (lease_until, keep_until) = (now + millis(LEASE), now + millis(RETENTION));
    let mut read_again = true;
    loop {
        let claimed = store
            .idempotency()
            .claim(key_id, &key, &fingerprint, now, lease_until, keep_until)
            .await?;
        return match claimed {
            Claimed::Ours(claim) => {
                outcome::claimed(claim.clone(), store);
                Ok(Some(claim))
            }
            Claimed::Reused {
                fingerprint: stored,
            } => {
                let newer = stored.as_deref().map(version_named);
                let known = cursors.keys().await?.newest();
                if let Some(newer) = newer.filter(|v| *v > known && read_again) {
                    read_again = false;
                    fingerprint = taken.fingerprints(&*cursors.holding(newer).await?)?;
                    continue;
                }
                Err(codes::IDEMPOTENCY_KEY_REUSED
                    .with("this Idempotency-Key was used for another request; use a new key")
                    .into())
            }
            Claimed::InFlight { until } => {
                let message = "a request with this Idempotency-Key is still running; retry later";
                let wait = until.saturating_sub(now).div_ceil(1000);
                Err(match wait {
                    0 => codes::IDEMPOTENCY_KEY_IN_FLIGHT.with(message),
                    wait => codes::IDEMPOTENCY_KEY_IN_FLIGHT.retry_after(message, wait),
                }
                .into())
            }
            Claimed::Answered(answer) => {
                let answer = opened(sealer, &item_of(key_id, &key), answer).await?;
                Err(NotRun::Replayed(answer))
            }
        };
    }
}

/// Step 3, in a route: runs `write` and answers what `render` makes of
/// the value it returns. With a claim, the answer is rendered before the
/// transaction that commits the value goes, and kept in it
/// (`store::exactly_once::outcome`); the route then answers exactly what was kept.
pub async fn commit<T, W, F, Fut, A>(
    state: &crate::state::AppState,
    write: W,
    render: F,
) -> Result<Response, ApiError>
where
    T: Any + Clone + Send + Sync,
    W: Future<Output = Result<T, ApiError>>,
    F: Fn(crate::state::AppState, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<A, ApiError>> + Send + 'static,
    A: IntoResponse,
{
    let render = Arc::new(render);
    let kept_render: outcome::Render = {
        let (state, render) = (state.clone(), render.clone());
        Arc::new(move |value: Box<dyn Any + Send>, claim: Claim| {
            let (state, render) = (state.clone(), render.clone());
            Box::pin(async move {
                let value = value
                    .downcast::<T>()
                    .map_err(|_| ApiError::internal("an answer rendered from another type"))?;
                let response = render(state.clone(), *value).await?.into_response();
                let (_, kept) = keep(&state.sealer, &claim, response).await?;
                kept?.ok_or_else(|| ApiError::internal("an answer too large to keep"))
            })
        })
    };
    let kept_with_write = outcome::answering::<T>(kept_render);
    let value = write.await?;
    if let Some(answer) = outcome::take_committed() {
        let mut response = answer_response(answer);
        response.extensions_mut().insert(Committed);
        return Ok(response);
    }
    if kept_with_write {
        // A store write that commits without its answer: kept after it,
        // as a refusal's is (settle), which a crash in between would lose.
        tracing::error!("a write committed without its Idempotency-Key's answer");
        debug_assert!(
            false,
            "a write committed without its Idempotency-Key's answer"
        );
    }
    Ok(render(state.clone(), value).await?.into_response())
}

/// A response read whole.
type Read = (http::response::Parts, axum::body::Bytes);

/// `response` read whole, and how it is kept for `claim`: None when it is
/// too large to keep; an error when it cannot be sealed. An answer marked
/// `SealAtRest` is kept sealed, bound to the claim's item.
async fn keep(
    sealer: &Sealer,
    claim: &Claim,
    response: Response,
) -> Result<(Read, Result<Option<Kept>, ApiError>), ApiError> {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|error| ApiError::internal(format!("an unreadable answer: {error}")))?;
    if bytes.len() > MAX_KEPT_BODY {
        return Ok(((parts, bytes), Ok(None)));
    }
    let sealed = parts.extensions.get::<Sealed>().is_some();
    let plain = Answer {
        status: parts.status.as_u16(),
        headers: KEPT_HEADERS
            .iter()
            .filter_map(|name| {
                let value = parts.headers.get(name)?.to_str().ok()?;
                Some((name.as_str().to_owned(), value.to_owned()))
            })
            .collect(),
        body: bytes.to_vec(),
        sealed: false,
    };
    let stored = if sealed {
        match seal(sealer, &claim.item(), &bytes).await {
            Ok(body) => Answer {
                body,
                sealed: true,
                ..plain.clone()
            },
            Err(error) => return Ok(((parts, bytes), Err(error))),
        }
    } else {
        plain.clone()
    };
    Ok(((parts, bytes), Ok(Some(Kept { plain, stored }))))
}

/// Step 4: keeps the answer of the request that holds a claim, or frees
/// the key, unless its write's transaction kept it already. An answer that
/// could not be kept is not given (500): the claim lapses after its lease,
/// and a retry runs again (nothing was committed, or the answer would have
/// been kept with it).
pub async fn settle(
    store: &Store,
    sealer: &Sealer,
    claim: Option<Claim>,
    response: Response,
) -> Response {
    let Some(claim) = claim else {
        return response;
    };
    if response.extensions().get::<Committed>().is_some() {
        return response;
    }
    // Another attempt may hold the key (this one ran past its hold): never
    // kept, freed if it is still this request's, and the holder's answer
    // given if one was kept.
    let in_flight = response
        .extensions()
        .get::<ErrorCode>()
        .is_some_and(|c| c.0 == codes::IDEMPOTENCY_KEY_IN_FLIGHT.code);
    if in_flight {
        if let Err(error) = store.idempotency().release(&claim).await {
            tracing::warn!(%error, "could not free an Idempotency-Key");
        }
        return Box::pin(lost(store, sealer, &claim, response)).await;
    }
    let status = response.status();
    let uncertain = response.extensions().get::<Uncertain>().copied();
    if let Some(Uncertain(until)) = uncertain.filter(|_| status.is_server_error()) {
        // Not kept and not freed: held while the effect may land, so a
        // retry waits, then looks for it.
        let mut response = response;
        if let Err(error) = store.idempotency().hold(&claim, until, true).await {
            tracing::warn!(%error, "could not hold an Idempotency-Key while an effect may land");
        }
        let wait = until
            .saturating_sub(crate::clock::unix_ms())
            .div_ceil(1000)
            .max(1);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return response;
    }
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        if let Err(error) = store.idempotency().release(&claim).await {
            tracing::warn!(%error, "could not free an Idempotency-Key");
        }
        return response;
    }
    let ((parts, bytes), kept) = match keep(sealer, &claim, response).await {
        Ok((read, Ok(Some(kept)))) => {
            let kept = store.idempotency().answer(&claim, &kept.stored).await;
            (read, kept)
        }
        Ok((read, Ok(None))) => {
            tracing::warn!(
                bytes = read.1.len(),
                "answer too large to keep; Idempotency-Key freed"
            );
            let freed = store.idempotency().release(&claim).await;
            (read, freed.map(|()| true))
        }
        // Never kept in the clear: the key is freed instead.
        Ok((read, Err(error))) => {
            tracing::warn!(%error, "could not seal an answer; Idempotency-Key freed");
            let freed = store.idempotency().release(&claim).await;
            (read, freed.map(|()| true))
        }
        Err(error) => {
            tracing::error!(%error, "could not read an answer to keep it");
            if let Err(error) = store.idempotency().release(&claim).await {
                tracing::warn!(%error, "could not free an Idempotency-Key");
            }
            return error.into_response();
        }
    };
    match kept {
        Ok(true) => Response::from_parts(parts, Body::from(bytes)),
        // Another attempt holds the key now: this one gives no answer of
        // its own.
        Ok(false) => {
            lost(
                store,
                sealer,
                &claim,
                Response::from_parts(parts, Body::from(bytes)),
            )
            .await
        }
        Err(error) => {
            // Not given unless kept: the key is given back, so the
            // client's retry runs again at once (nothing was committed, or
            // its answer would be kept; an effect begun is looked for, as
            // the item says), or finds this answer if it was kept unheard
            // (then the give-back, conditioned on the claim, does nothing).
            tracing::warn!(%error, "could not keep the answer of an Idempotency-Key");
            if let Err(error) = store.idempotency().release(&claim).await {
                tracing::warn!(%error, "could not free an Idempotency-Key");
            }
            ApiError::internal("the answer could not be kept for its Idempotency-Key")
                .into_response()
        }
    }
}

/// The answer of a request whose claim another attempt took while it ran
/// (it was held past its lease): never its own (`response`), which was not
/// kept, unless its own was kept after all (the acknowledgement of its
/// write was lost); else the answer the key's holder kept, replayed; else
/// 409 `idempotency_key_in_flight` (retry later for that answer).
async fn lost(store: &Store, sealer: &Sealer, claim: &Claim, response: Response) -> Response {
    let after = match store.idempotency().after_losing(claim).await {
        Ok(after) => after,
        Err(error) => return error.into_response(),
    };
    match after {
        Lost::KeptOurs => response,
        Lost::Answered(answer) => match opened(sealer, &claim.item(), answer).await {
            Ok(answer) => replay(answer),
            Err(error) => error.into_response(),
        },
        Lost::Unanswered => outcome::claim_lost().into_response(),
    }
}

/// A kept answer with its body opened when it was kept sealed.
async fn opened(sealer: &Sealer, item: &str, mut answer: Answer) -> Result<Answer, ApiError> {
    if answer.sealed {
        let sealed = String::from_utf8(std::mem::take(&mut answer.body))
            .map_err(|_| ApiError::internal("a sealed answer is not text"))?;
        answer.body = sealer.open(item.as_bytes(), &sealed).await?.into_bytes();
        answer.sealed = false;
    }
    Ok(answer)
}

/// `body` sealed for the idempotency item `item`.
async fn seal(sealer: &Sealer, item: &str, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let text =
        std::str::from_utf8(body).map_err(|_| ApiError::internal("a secret answer is not text"))?;
    Ok(sealer.seal(item.as_bytes(), text).await?.into_bytes())
}

/// A kept answer, sent again.
fn replay(answer: Answer) -> Response {
    let mut response = answer_response(answer);
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

/// A kept answer (not sealed) as a response.
fn answer_response(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, answer.body).into_response();
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"a deployment key of 32 bytes....";

    fn parts(method: Method, uri: &str, content_type: Option<&str>) -> http::request::Parts {
        let mut builder = http::Request::builder().method(method).uri(uri);
        if let Some(ct) = content_type {
            builder = builder.header(header::CONTENT_TYPE, ct);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn keys_are_one_to_255_printable_ascii_characters() {
        let ok = |s: &str| well_formed(&HeaderValue::from_str(s).unwrap()).is_some();
        assert!(ok("a"));
        assert!(ok("order 42/retry#1 ~!"));
        assert!(ok(&"k".repeat(255)));
        assert!(!ok(""));
        assert!(!ok(&"k".repeat(256)));
        assert!(!ok("tab\there"));
        assert!(!ok(" leading") && !ok("trailing "));
        assert!(well_formed(&HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap()).is_none());
    }

    #[test]
    fn the_fingerprint_covers_method_path_query_and_body() {
        let base = fingerprint(
            KEY,
            &parts(Method::POST, "/api/v1/sites", None),
            b"{\"a\":1}",
        );
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            fingerprint(
                KEY,
                &parts(Method::POST, "/api/v1/sites", None),
                b"{\"a\":1}"
            )
        );
        // Under another key: another fingerprint (a table's reader without
        // the key learns nothing of the body, nor tries guesses with SHA-256).
        let other_key = fingerprint(
            b"another deployment key, 32 bytes",
            &parts(Method::POST, "/api/v1/sites", None),
            b"{\"a\":1}",
        );
        assert_ne!(base, other_key);
        let plain = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
            b"POST\n/api/v1/sites\n{\"a\":1}",
        ));
        assert_ne!(base, plain, "not the unkeyed SHA-256 of before");
        for other in [
            fingerprint(
                KEY,
                &parts(Method::POST, "/api/v1/sites", None),
                b"{\"a\":2}",
            ),
            fingerprint(
                KEY,
                &parts(Method::POST, "/api/v1/trucks", None),
                b"{\"a\":1}",
            ),
            fingerprint(
                KEY,
                &parts(Method::POST, "/api/v1/sites?x=1", None),
                b"{\"a\":1}",
            ),
            fingerprint(
                KEY,
                &parts(Method::PUT, "/api/v1/sites", None),
                b"{\"a\":1}",
            ),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn a_multipart_fingerprint_ignores_the_boundary_but_not_the_parts() {
        let form = |boundary: &str, content: &str| {
            let body = format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n{content}\r\n--{boundary}--\r\n"
            );
            let ct = format!("multipart/form-data; boundary={boundary}");
            fingerprint(KEY, &parts(Method::POST, "/w", Some(&ct)), body.as_bytes())
        };
        assert_eq!(form("AAAA", "bytes"), form("zz-other-boundary", "bytes"));
        assert_ne!(form("AAAA", "bytes"), form("AAAA", "other"));
    }

    #[tokio::test]
    async fn a_replay_carries_the_kept_status_headers_and_body() {
        let response = replay(Answer {
            status: 201,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("location".into(), "/api/v1/sites/x".into()),
            ],
            body: b"{\"data\":{}}".to_vec(),
            sealed: false,
        });
        assert_eq!(response.status(), StatusCode::CREATED);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(headers[header::LOCATION], "/api/v1/sites/x");
        assert_eq!(headers[REPLAYED], "true");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], b"{\"data\":{}}");
    }
}
