//! Loopback stand-ins for the providers the service calls, speaking their
//! documented formats: Google's Geocoding API and GitHub's "Create an
//! issue". Each remembers the requests it got and answers from a script.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};

/// One request a stand-in got.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Seen {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The decoded query parameters.
    pub fn query(&self) -> Vec<(String, String)> {
        form_urlencoded::parse(self.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect()
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.query()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// What a stand-in answers: a status and a body, after an optional delay
/// or once its gate opens.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
    pub gate: Option<Gate>,
}

impl Canned {
    pub fn json(status: u16, body: Value) -> Canned {
        Canned {
            status,
            body: body.to_string(),
            delay: Duration::ZERO,
            gate: None,
        }
    }

    pub fn after(mut self, delay: Duration) -> Canned {
        self.delay = delay;
        self
    }

    /// Answered once `gate` opens (and after the delay, if any).
    pub fn held(mut self, gate: &Gate) -> Canned {
        self.gate = Some(gate.clone());
        self
    }
}

/// The service's wait for a stand-in in tests where some answer must come
/// in time: ample for a loopback answer on a starved machine. What should
/// come too late is held by a `Gate`, not delayed.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(2);

/// A late answer as an event the test causes, not a duration: a
/// provider's answer held until the test opens its gate, after the
/// service stopped waiting for it. A delay would race the service's
/// timeout, and a starved machine loses such races whatever the margin.
#[derive(Clone, Debug)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(tokio::sync::watch::channel(false).0))
    }
}

impl Gate {
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    pub fn is_open(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the gate is open.
    pub async fn passed(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

type Respond = dyn Fn(&Seen, usize) -> Canned + Send + Sync;

/// A plain-HTTP server on loopback answering every request with
/// `respond(request, how many came before)`.
#[derive(Clone)]
pub struct StandIn {
    pub base: String,
    got: Arc<Mutex<Vec<Seen>>>,
}

impl StandIn {
    pub async fn start(
        respond: impl Fn(&Seen, usize) -> Canned + Send + Sync + 'static,
    ) -> StandIn {
        let got: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let respond: Arc<Respond> = Arc::new(respond);
        let app = {
            let got = Arc::clone(&got);
            Router::new().fallback(
                move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                    let got = Arc::clone(&got);
                    let respond = Arc::clone(&respond);
                    async move {
                        let seen = Seen {
                            method,
                            uri,
                            headers,
                            body,
                        };
                        let canned = {
                            let mut got = got.lock().unwrap();
                            let canned = respond(&seen, got.len());
                            got.push(seen);
                            canned
                        };
                        tokio::time::sleep(canned.delay).await;
                        if let Some(gate) = &canned.gate {
                            gate.passed().await;
                        }
                        (
                            StatusCode::from_u16(canned.status).unwrap(),
                            [("content-type", "application/json; charset=UTF-8")],
                            canned.body,
                        )
                    }
                },
            )
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        StandIn {
            base: format!("http://127.0.0.1:{port}"),
            got,
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.got.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.got.lock().unwrap().len()
    }
}

/// The path of Google's JSON geocoding endpoint.
pub const GEOCODE_PATH: &str = "/maps/api/geocode/json";

/// Google's documented example answer for `formatted` at `lat`, `lng`.
pub fn google_found(
    formatted: &str,
    lat: f64,
    lng: f64,
    location_type: &str,
    partial: bool,
) -> Canned {
    let mut result = json!({
        "address_components": [
            {"long_name": "1", "short_name": "1", "types": ["street_number"]},
            {"long_name": "Finland", "short_name": "FI", "types": ["country", "political"]}
        ],
        "formatted_address": formatted,
        "geometry": {
            "location": {"lat": lat, "lng": lng},
            "location_type": location_type,
            "viewport": {
                "northeast": {"lat": lat + 0.0013, "lng": lng + 0.0013},
                "southwest": {"lat": lat - 0.0013, "lng": lng - 0.0013}
            }
        },
        "place_id": "ChIJ2eUgeAK6j4ARbn5u_wAGqWA",
        "types": ["street_address"]
    });
    if partial {
        result["partial_match"] = json!(true);
    }
    Canned::json(200, json!({"results": [result], "status": "OK"}))
}

/// Google's answer when nothing matches.
pub fn google_zero_results() -> Canned {
    Canned::json(200, json!({"results": [], "status": "ZERO_RESULTS"}))
}

/// Google's answer to a bad or missing key (HTTP 200, status in the body).
pub fn google_denied() -> Canned {
    Canned::json(
        200,
        json!({"error_message": "The provided API key is invalid.", "results": [], "status": "REQUEST_DENIED"}),
    )
}

/// GitHub's 201 for a new issue numbered `number` in `repository`.
pub fn github_created(repository: &str, number: u64, title: &str) -> Canned {
    Canned::json(
        201,
        json!({
            "id": 1_000_000 + number,
            "node_id": "MDU6SXNzdWUx",
            "url": format!("https://api.github.com/repos/{repository}/issues/{number}"),
            "repository_url": format!("https://api.github.com/repos/{repository}"),
            "html_url": format!("https://github.com/{repository}/issues/{number}"),
            "number": number,
            "state": "open",
            "title": title,
            "body": "...",
            "user": {"login": "octocat", "id": 1},
            "labels": [],
            "locked": false,
            "comments": 0,
            "created_at": "2011-04-22T13:33:48Z",
            "updated_at": "2011-04-22T13:33:48Z"
        }),
    )
}

/// GitHub's error answer (`{message, documentation_url}`).
pub fn github_error(status: u16, message: &str) -> Canned {
    Canned::json(
        status,
        json!({"message": message, "documentation_url": "https://docs.github.com/rest/issues/issues#create-an-issue"}),
    )
}

/// A ticket description that quotes, whole, the lines the service writes
/// at the top of an issue to name request `request` of key `key` of
/// `org`, the blank line after them included (the service trims a
/// description's ends): text a customer could plant, which the lookup of
/// an earlier attempt's issue must never take for the service's own.
pub fn quoting_the_lines_of(
    org: impl std::fmt::Display,
    key: impl std::fmt::Display,
    request: impl std::fmt::Display,
) -> String {
    format!(
        "Opened through the Integration API.\n\n- Organization: `{org}`\n- API key: `{key}`\n- Request: `{request}`\n\nAs above."
    )
}

/// A geocoding provider on loopback that finds one address
/// (Mannerheimintie 1, Helsinki) for every request.
pub async fn geocoder() -> StandIn {
    StandIn::start(|_, _| {
        google_found(
            "Mannerheimintie 1, Helsinki",
            60.17,
            24.94,
            "ROOFTOP",
            false,
        )
    })
    .await
}
