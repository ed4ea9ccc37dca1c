//! How a delivery proves itself: the contract's `x-svc-signature` (hex
//! HMAC-SHA256 of the raw body, keyed with the secret as registered) and,
//! against replay, the Standard Webhooks `webhook-signature` (base64
//! HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's decoded
//! bytes after `whsec_`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// `sha256=<hex>` for `x-<short>-signature`.
pub fn body_signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(mac(secret.as_bytes(), &[body])))
}

/// `v1,<base64>` for `webhook-signature`.
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    let key = STANDARD
        .decode(encoded)
        .unwrap_or_else(|_| secret.as_bytes().to_vec());
    let signed = mac(
        &key,
        &[
            id.as_bytes(),
            b".",
            timestamp.to_string().as_bytes(),
            b".",
            body,
        ],
    );
    format!("v1,{}", STANDARD.encode(signed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_signature_is_the_hex_hmac_of_the_raw_body() {
        // RFC 4231 test case 2.
        assert_eq!(
            body_signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_standard_signature_matches_the_specification_example() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            standard_signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
