//! Browser-based uploads straight to S3 (a presigned POST, AWS Signature
//! Version 4): the API hands out a form whose policy allows exactly one
//! object key, sizes from 1 byte to the limit, and one content type, for a
//! short while. S3 refuses any upload that breaks the policy; moto
//! does not check it, so the policy's conditions are tested here and the
//! stored object is verified again before it counts (`files::Files::peek`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

pub struct UploadRequest<'a> {
    /// Where the form is posted (the bucket's endpoint).
    pub url: String,
    pub bucket: &'a str,
    pub key: &'a str,
    pub content_type: &'a str,
    pub max_bytes: u64,
    pub lifetime: std::time::Duration,
}

pub struct Signer<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    /// Temporary credentials (a Lambda role's) come with a token, which the
    /// form must carry.
    pub session_token: Option<&'a str>,
    pub region: &'a str,
}

/// The form a client posts (`multipart/form-data`, the fields first, the
/// file last as field `file`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UploadForm {
    pub url: String,
    pub fields: serde_json::Map<String, Value>,
    pub expires_at: String,
}

/// HMAC-SHA256 of `data` with `key`.
fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// SigV4 signature of a base64 POST policy: the signing key is derived
/// from the secret, the date, the region and `s3`.
pub fn signature(secret_access_key: &str, date: &str, region: &str, policy_base64: &str) -> String {
    let k_date = hmac(
        format!("AWS4{secret_access_key}").as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, b"s3");
    let k_signing = hmac(&k_service, b"aws4_request");
    hex::encode(hmac(&k_signing, policy_base64.as_bytes()))
}

/// The signed form for `request`, valid from `now` for its lifetime.
pub fn sign(request: &UploadRequest, signer: &Signer, now: DateTime<Utc>) -> UploadForm {
    let date = now.format("%Y%m%d").to_string();
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let expires =
        now + chrono::Duration::from_std(request.lifetime).unwrap_or(chrono::Duration::minutes(15));
    let expiration = expires.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let credential = format!(
        "{}/{date}/{}/s3/aws4_request",
        signer.access_key_id, signer.region
    );
    let mut fields = serde_json::Map::new();
    fields.insert("key".into(), request.key.into());
    fields.insert("Content-Type".into(), request.content_type.into());
    fields.insert("x-amz-algorithm".into(), "AWS4-HMAC-SHA256".into());
    fields.insert("x-amz-credential".into(), credential.clone().into());
    fields.insert("x-amz-date".into(), amz_date.clone().into());
    let mut conditions = vec![
        json!({"bucket": request.bucket}),
        json!({"key": request.key}),
        json!(["content-length-range", 1, request.max_bytes]),
        json!({"Content-Type": request.content_type}),
        json!({"x-amz-algorithm": "AWS4-HMAC-SHA256"}),
        json!({"x-amz-credential": credential}),
        json!({"x-amz-date": amz_date}),
    ];
    if let Some(token) = signer.session_token {
        conditions.push(json!({"x-amz-security-token": token}));
        fields.insert("x-amz-security-token".into(), token.into());
    }
    let policy = json!({"expiration": expiration, "conditions": conditions});
    let policy_base64 = STANDARD.encode(policy.to_string());
    fields.insert(
        "x-amz-signature".into(),
        signature(
            signer.secret_access_key,
            &date,
            signer.region,
            &policy_base64,
        )
        .into(),
    );
    fields.insert("policy".into(), policy_base64.into());
    UploadForm {
        url: request.url.clone(),
        fields,
        expires_at: crate::model::Timestamp::from(expires).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    #[test]
    fn signature_matches_botocores_for_the_same_policy() {
        // Computed with botocore's S3SigV4PostAuth at 2026-11-22T12:30:00Z
        // (an independent implementation of the same algorithm).
        let policy = "eyJleHBpcmF0aW9uIjogIjIwMjYtMTEtMjJUMTI6NDU6MDBaIiwgImNvbmRpdGlvbnMiOiBbeyJidWNrZXQiOiAiaW50ZWdyYXRpb24tYXBpLWZpbGVzIn0sIHsia2V5IjogIndheWJpbGxzL2EvYi9jLmpwZyJ9LCBbImNvbnRlbnQtbGVuZ3RoLXJhbmdlIiwgMSwgMTA0ODU3NjBdLCB7IkNvbnRlbnQtVHlwZSI6ICJpbWFnZS9qcGVnIn0sIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwgeyJ4LWFtei1jcmVkZW50aWFsIjogIkFLSURFWEFNUExFLzIwMjYxMTIyL2V1LW5vcnRoLTEvczMvYXdzNF9yZXF1ZXN0In0sIHsieC1hbXotZGF0ZSI6ICIyMDI2MTEyMlQxMjMwMDBaIn1dfQ==";
        assert_eq!(
            signature(SECRET, "20261122", "eu-north-1", policy),
            "9e81b5974eed1d86f037f794492cf8f8f7f12468a8ea6dd4a0cbdc0090ad7cd6"
        );
    }

    fn form(token: Option<&str>) -> UploadForm {
        let request = UploadRequest {
            url: "https://bucket.s3.eu-north-1.amazonaws.com".into(),
            bucket: "bucket",
            key: "waybills/o/s/w.png",
            content_type: "image/png",
            max_bytes: 10 * 1024 * 1024,
            lifetime: std::time::Duration::from_secs(900),
        };
        let signer = Signer {
            access_key_id: "AKIDEXAMPLE",
            secret_access_key: SECRET,
            session_token: token,
            region: "eu-north-1",
        };
        let now = "2026-11-22T12:30:00Z".parse().unwrap();
        sign(&request, &signer, now)
    }

    #[test]
    fn the_policy_binds_key_size_type_and_time() {
        let form = form(None);
        let policy: Value = serde_json::from_slice(
            &STANDARD
                .decode(form.fields["policy"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(policy["expiration"], "2026-11-22T12:45:00Z");
        assert_eq!(form.expires_at, "2026-11-22T12:45:00.000Z");
        let conditions = policy["conditions"].as_array().unwrap();
        for expected in [
            json!({"bucket": "bucket"}),
            json!({"key": "waybills/o/s/w.png"}),
            json!(["content-length-range", 1, 10485760]),
            json!({"Content-Type": "image/png"}),
            json!({"x-amz-credential": "AKIDEXAMPLE/20261122/eu-north-1/s3/aws4_request"}),
        ] {
            assert!(conditions.contains(&expected), "{expected} missing");
        }
        // Every field the form carries is allowed by a condition, and the
        // signature is over this very policy.
        assert_eq!(form.fields["key"], "waybills/o/s/w.png");
        assert_eq!(form.fields["Content-Type"], "image/png");
        assert_eq!(
            form.fields["x-amz-signature"],
            signature(
                SECRET,
                "20261122",
                "eu-north-1",
                form.fields["policy"].as_str().unwrap()
            )
            .as_str()
        );
        assert!(form.fields.get("x-amz-security-token").is_none());
    }

    #[test]
    fn temporary_credentials_carry_their_token_in_form_and_policy() {
        let form = form(Some("TOKEN"));
        assert_eq!(form.fields["x-amz-security-token"], "TOKEN");
        let policy = String::from_utf8(
            STANDARD
                .decode(form.fields["policy"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert!(
            policy.contains(r#"{"x-amz-security-token":"TOKEN"}"#),
            "{policy}"
        );
    }
}
