//! Query strings: a bad parameter is 422 `validation_error` naming it.

use axum::extract::FromRequestParts;
use http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parse(parts.uri.query().unwrap_or("")).map(QueryParams)
    }
}

/// The query string as its decoded name/value pairs, in order: for
/// parameters that may repeat (`types=site&types=factory`).
pub struct QueryPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        Ok(QueryPairs(
            form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
        ))
    }
}

pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let deserializer =
        serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner();
        if path == "." {
            ApiError::Validation(problem.to_string())
        } else {
            ApiError::validation(&path, problem)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        Active,
        All,
    }

    #[derive(Debug, Deserialize)]
    struct Params {
        #[serde(default)]
        status: Option<Status>,
    }

    #[test]
    fn values_parse_and_errors_name_the_parameter() {
        assert_eq!(
            parse::<Params>("status=all").unwrap().status,
            Some(Status::All)
        );
        assert_eq!(parse::<Params>("").unwrap().status, None);
        let e = parse::<Params>("status=archived").unwrap_err();
        assert_eq!(e.code(), "validation_error");
        assert!(e.to_string().starts_with("status:"), "{e}");
    }
}
