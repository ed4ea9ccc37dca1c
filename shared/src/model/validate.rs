//! Field rules shared by every resource. Each failure names its field.
//!
//! The OpenAPI description states the same rules (`maxLength` on what the
//! client sent, a "not blank" pattern, number bounds), so a body is valid for
//! the description exactly when it is valid here.

use crate::error::ApiError;

/// Checks `value` (as sent) is at most `max` characters, then trims it; the
/// trimmed text must not be empty.
pub fn required_text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    max_len(field, value, max)?;
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(ApiError::validation(field, "must not be empty"));
    }
    Ok(trimmed.to_owned())
}

/// Checks `value` is at most `max` characters (Unicode scalar values).
pub fn max_len(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.chars().count() > max {
        return Err(ApiError::validation(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(())
}

/// Checks an optional text (as sent) is at most `max` characters, then
/// trims it; blank becomes `None`.
pub fn optional_text(
    field: &str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    let Some(value) = value else { return Ok(None) };
    max_len(field, value, max)?;
    match value.trim() {
        "" => Ok(None),
        v => Ok(Some(v.to_owned())),
    }
}

/// A number within `min..=max`, rounded to `decimals` places. Every number
/// that reaches the store passes here: rounding keeps it inside what
/// DynamoDB can hold (no magnitude below 1e-130) and exact in decimal.
pub fn number(field: &str, value: f64, min: f64, max: f64, decimals: i32) -> Result<f64, ApiError> {
    if !value.is_finite() || value < min || value > max {
        return Err(ApiError::validation(
            field,
            format!("must be a number from {min} to {max}"),
        ));
    }
    let scale = 10f64.powi(decimals);
    // `+ 0.0` turns a rounded `-0.0` into `0.0`.
    Ok((value * scale).round() / scale + 0.0)
}

/// A pragmatic e-mail check: one `@`, a non-empty local part, a dotted
/// domain, no spaces anywhere (not trimmed).
pub fn email(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    max_len(field, value, max)?;
    let valid = match value.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.contains('@')
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains("..")
                && !value.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    };
    if valid {
        Ok(value.to_owned())
    } else {
        Err(ApiError::validation(
            field,
            "must be a valid e-mail address",
        ))
    }
}

/// E.164: `+` then 8 to 15 digits, the first not zero; nothing else (no
/// spaces, not trimmed).
pub fn e164(field: &str, value: &str) -> Result<String, ApiError> {
    let digits = value.strip_prefix('+').unwrap_or("");
    let valid = (8..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if valid {
        Ok(value.to_owned())
    } else {
        Err(ApiError::validation(
            field,
            "must be an E.164 phone number such as +358401234567",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_trimmed_and_bounded() {
        assert_eq!(required_text("name", "  Acme  ", 500).unwrap(), "Acme");
        assert!(
            required_text("name", "   ", 500)
                .unwrap_err()
                .to_string()
                .starts_with("name:")
        );
        assert!(required_text("name", &"é".repeat(500), 500).is_ok());
        assert!(required_text("name", &"é".repeat(501), 500).is_err());
        assert_eq!(optional_text("city", Some("  "), 10).unwrap(), None);
    }

    #[test]
    fn limits_apply_to_what_was_sent() {
        let padded = format!("   {}   ", "a".repeat(500));
        assert!(required_text("name", &padded, 500).is_err());
        assert!(optional_text("city", Some(&padded), 500).is_err());
        assert!(optional_text("city", Some(&" ".repeat(501)), 500).is_err());
    }

    #[test]
    fn numbers_are_bounded_and_rounded() {
        assert_eq!(
            number("lng", 1.8086646713163223e-149, -180.0, 180.0, 7).unwrap(),
            0.0
        );
        let tiny_negative = number("lng", -1e-200, -180.0, 180.0, 7).unwrap();
        assert!(tiny_negative == 0.0 && tiny_negative.is_sign_positive());
        assert_eq!(
            number("lat", 60.123456789, -90.0, 90.0, 7).unwrap(),
            60.1234568
        );
        for bad in [f64::NAN, f64::INFINITY, 90.0000001, -1e300] {
            let e = number("lat", bad, -90.0, 90.0, 7).unwrap_err();
            assert!(e.to_string().starts_with("lat:"), "{bad}: {e}");
        }
    }

    #[test]
    fn emails() {
        for ok in ["a@b.fi", "billing@acme.example.com"] {
            assert!(email("invoice_email", ok, 500).is_ok(), "{ok}");
        }
        for bad in [
            "", "a", "a@b", "@b.fi", "a@@b.fi", "a b@c.fi", "a@.fi", "a@b..fi", "a@b.fi.",
            " a@b.fi",
        ] {
            assert!(email("invoice_email", bad, 500).is_err(), "{bad}");
        }
    }

    #[test]
    fn phones() {
        assert!(e164("phone", "+358401234567").is_ok());
        for bad in [
            "358401234567",
            "+0401234567",
            "+35840-123",
            "+1234567",
            " +358401234567",
            "",
        ] {
            assert!(e164("phone", bad).is_err(), "{bad}");
        }
    }
}
