//! Where the AWS SDK sends calls, as far as the environment says: the one
//! judge of "is this the local stack?" behind every development-only
//! setting (the development cursor and seal keys, loopback webhooks, longer
//! attempts; `config`).
//!
//! The local stack runs two engines: moto's server for S3, SQS and Secrets
//! Manager (`AWS_ENDPOINT_URL`) and DynamoDB Local (`AWS_ENDPOINT_URL_DYNAMODB`,
//! one of the SDK's service-specific variables). A development setting is
//! safe only when no call can reach AWS, so every endpoint the environment
//! configures is judged, not just the generic one:
//! - the generic `AWS_ENDPOINT_URL` must be set and on loopback: a service
//!   without a variable of its own goes there (without it, such a service
//!   goes to AWS, or wherever the profile file says);
//! - every service-specific `AWS_ENDPOINT_URL_<SERVICE>` that is set must
//!   be on loopback too (it wins over the generic one for its service);
//! - `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true` makes the SDK ignore all of
//!   them, so nothing is local then.

/// The generic endpoint variable; service-specific ones add `_<SERVICE>`.
pub const GENERIC: &str = "AWS_ENDPOINT_URL";
const IGNORE: &str = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS";

/// The endpoint variables set (not blank) among `vars`, generic first,
/// then service-specific ones by name: `(variable, url)`.
pub fn configured<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(&'a str, &'a str)> {
    let mut found: Vec<(&str, &str)> = vars
        .into_iter()
        .filter(|(name, value)| {
            (*name == GENERIC || specific(name).is_some()) && !value.trim().is_empty()
        })
        .collect();
    found.sort_by_key(|(name, _)| (*name != GENERIC, *name));
    found
}

/// The service of a service-specific variable (`DYNAMODB` of
/// `AWS_ENDPOINT_URL_DYNAMODB`).
fn specific(name: &str) -> Option<&str> {
    name.strip_prefix(GENERIC)
        .and_then(|rest| rest.strip_prefix('_'))
        .filter(|service| !service.is_empty())
}

/// True when every call the SDK makes goes to an engine on this machine
/// (the rules above).
pub fn all_on_loopback<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    let vars: Vec<(&str, &str)> = vars.into_iter().collect();
    let ignored = vars
        .iter()
        .any(|(name, value)| *name == IGNORE && value.trim().eq_ignore_ascii_case("true"));
    let endpoints = configured(vars.iter().copied());
    !ignored
        && endpoints.iter().any(|(name, _)| *name == GENERIC)
        && endpoints.iter().all(|(_, url)| on_loopback(url))
}

/// True when `url`'s host is `localhost` or a loopback address.
pub fn on_loopback(url: &str) -> bool {
    let Ok(uri) = url.trim().parse::<http::Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or("").trim_matches(['[', ']']);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOTO: (&str, &str) = ("AWS_ENDPOINT_URL", "http://127.0.0.1:5005");
    const DDB_LOCAL: (&str, &str) = ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8005");

    #[test]
    fn loopback_hosts() {
        for url in [
            "http://localhost:4566",
            "http://127.0.0.1:5005",
            "http://127.8.9.10:8000/",
            "http://[::1]:5005",
        ] {
            assert!(on_loopback(url), "{url}");
        }
        for url in [
            "https://dynamodb.eu-north-1.amazonaws.com",
            "http://10.0.0.5:8000",
            "http://localhost.example.com",
            "not a url",
            "",
        ] {
            assert!(!on_loopback(url), "{url}");
        }
    }

    #[test]
    fn the_local_stack_is_local() {
        assert!(all_on_loopback([MOTO]));
        assert!(all_on_loopback([MOTO, DDB_LOCAL]));
        assert!(all_on_loopback([
            MOTO,
            DDB_LOCAL,
            ("AWS_ENDPOINT_URL_S3", "http://localhost:9000"),
            ("AWS_REGION", "eu-north-1"),
        ]));
    }

    #[test]
    fn one_service_in_aws_makes_nothing_local() {
        for aws in [
            (
                "AWS_ENDPOINT_URL_DYNAMODB",
                "https://dynamodb.eu-north-1.amazonaws.com",
            ),
            (
                "AWS_ENDPOINT_URL_SQS",
                "https://sqs.eu-north-1.amazonaws.com",
            ),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", "https://10.1.2.3"),
            ("AWS_ENDPOINT_URL_S3", "not a url"),
        ] {
            assert!(!all_on_loopback([MOTO, aws]), "{aws:?}");
            assert!(!all_on_loopback([aws, MOTO, DDB_LOCAL]), "{aws:?}");
        }
        let aws = (
            "AWS_ENDPOINT_URL",
            "https://dynamodb.eu-north-1.amazonaws.com",
        );
        assert!(!all_on_loopback([aws, DDB_LOCAL]));
    }

    #[test]
    fn a_service_specific_endpoint_alone_leaves_the_others_in_aws() {
        assert!(!all_on_loopback([DDB_LOCAL]));
        assert!(!all_on_loopback([]));
    }

    #[test]
    fn blank_variables_are_not_set() {
        assert!(all_on_loopback([MOTO, ("AWS_ENDPOINT_URL_DYNAMODB", " ")]));
        assert!(!all_on_loopback([("AWS_ENDPOINT_URL", ""), DDB_LOCAL]));
    }

    #[test]
    fn ignored_endpoints_are_not_local() {
        let ignore = ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");
        assert!(!all_on_loopback([MOTO, DDB_LOCAL, ignore]));
        let keep = ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false");
        assert!(all_on_loopback([MOTO, DDB_LOCAL, keep]));
    }

    #[test]
    fn configured_lists_generic_first() {
        let vars = [
            DDB_LOCAL,
            ("AWS_REGION", "eu-north-1"),
            ("AWS_ENDPOINT_URL_", "http://x"),
            MOTO,
            ("AWS_ENDPOINT_URL_SQS", ""),
        ];
        assert_eq!(configured(vars), vec![MOTO, DDB_LOCAL]);
    }
}
