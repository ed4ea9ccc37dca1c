//! Field rules shared by every resource. Each failure names its field.

use crate::error::ApiError;

/// Trims `value` and checks it is 1 to `max` characters long.
pub fn required_text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(ApiError::validation(field, "must not be empty"));
    }
    max_len(field, trimmed, max)?;
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

/// Trims an optional text; empty becomes `None`.
pub fn optional_text(
    field: &str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => {
            max_len(field, v, max)?;
            Ok(Some(v.to_owned()))
        }
    }
}

/// A pragmatic e-mail check: one `@`, a non-empty local part, a dotted
/// domain without spaces. Returns the trimmed address.
pub fn email(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
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

/// E.164: `+` then 8 to 15 digits, the first not zero.
pub fn e164(field: &str, value: &str) -> Result<String, ApiError> {
    let value = value.trim();
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
    fn emails() {
        for ok in ["a@b.fi", " billing@acme.example.com "] {
            assert!(email("invoice_email", ok, 500).is_ok(), "{ok}");
        }
        for bad in [
            "", "a", "a@b", "@b.fi", "a@@b.fi", "a b@c.fi", "a@.fi", "a@b..fi", "a@b.fi.",
        ] {
            assert!(email("invoice_email", bad, 500).is_err(), "{bad}");
        }
    }

    #[test]
    fn phones() {
        assert!(e164("phone", "+358401234567").is_ok());
        for bad in ["358401234567", "+0401234567", "+35840-123", "+1234567"] {
            assert!(e164("phone", bad).is_err(), "{bad}");
        }
    }
}
