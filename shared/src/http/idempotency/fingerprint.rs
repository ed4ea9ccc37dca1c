//! A request's fingerprint: an HMAC-SHA256 under the deployment's cursor
//! key (a prefix of its own: no cursor's MAC is a fingerprint) over its
//! method, path and query, and body, a multipart body part by part
//! without its boundary (which clients regenerate); one for each
//! generation of the key the ring lists.

use hmac::{Hmac, Mac};
use http::header;
use sha2::Sha256;

use crate::cursor::Cursors;
use crate::error::ApiError;
use crate::keyring::{Generation, Keys};
use crate::store::exactly_once::idempotency::Fingerprints;

/// The fingerprint of a request: its method, path and query, and body,
/// under the deployment's `key` (the cursor key, with a prefix of its own:
/// no cursor's MAC is a fingerprint).
pub fn fingerprint(key: &[u8], parts: &http::request::Parts, body: &[u8]) -> String {
    let mut hash = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    hash.update(b"idempotency\0");
    hash.update(parts.method.as_str().as_bytes());
    hash.update(b"\n");
    hash.update(
        parts
            .uri
            .path_and_query()
            .map_or("", |p| p.as_str())
            .as_bytes(),
    );
    hash.update(b"\n");
    let boundary = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .filter(|b| !b.is_empty());
    match boundary {
        // Each part between boundaries, with its length so parts cannot
        // run together.
        Some(boundary) => {
            for piece in split(body, boundary.as_bytes()) {
                hash.update(&(piece.len() as u64).to_be_bytes());
                hash.update(piece);
            }
        }
        None => hash.update(body),
    }
    hex::encode(hash.finalize().into_bytes())
}

/// A request's fingerprints under every generation of the cursor key the
/// ring lists, the one that signs now first: a retry after the key
/// rotated is still the request it was, also once the generation before
/// no longer verifies cursors (`admin keys drop` keeps it while what it
/// fingerprinted may be retried). Version 1's is the bare hex (as every
/// fingerprint was before the key rotated); a later one's is
/// `k<version>:<hex>`. 500 when no generation signs now: a keyed request
/// is never let in without a fingerprint of its own.
pub fn fingerprints(
    keys: &Keys,
    parts: &http::request::Parts,
    body: &[u8],
) -> Result<Fingerprints, ApiError> {
    let signing = keys
        .signing(crate::clock::now())
        .ok_or_else(|| ApiError::internal("no cursor key generation signs now"))?;
    let of = |generation: &Generation| match generation.version {
        1 => fingerprint(generation.key(), parts, body),
        version => format!("k{version}:{}", fingerprint(generation.key(), parts, body)),
    };
    let earlier = keys
        .generations()
        .iter()
        .filter(|g| g.version != signing.version)
        .map(of);
    Ok(Fingerprints::new(of(signing), earlier))
}

/// The fingerprint `read` takes of a request, for a caller that holds the
/// deployment's keys (tests planting a claim).
pub async fn fingerprint_of(
    cursors: &Cursors,
    parts: &http::request::Parts,
    body: &[u8],
) -> Result<String, ApiError> {
    let keys = cursors.keys().await?;
    Ok(fingerprints(&keys, parts, body)?.current().to_owned())
}

/// `body` cut at every occurrence of `separator`.
fn split<'a>(body: &'a [u8], separator: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let finder = memchr::memmem::Finder::new(separator);
    let mut rest = Some(body);
    std::iter::from_fn(move || {
        let current = rest?;
        match finder.find(current) {
            Some(at) => {
                rest = Some(&current[at + separator.len()..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_cuts_at_every_separator() {
        let pieces: Vec<&[u8]> = split(b"a--b----c", b"--").collect();
        assert_eq!(pieces, [&b"a"[..], b"b", b"", b"c"]);
        let whole: Vec<&[u8]> = split(b"abc", b"--").collect();
        assert_eq!(whole, [&b"abc"[..]]);
    }
}
