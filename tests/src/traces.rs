//! The test run's trace collector: a loopback server that keeps every
//! OTLP JSON body POSTed to `/v1/traces`. The run's subscriber exports to
//! it as a function's does to the collector extension (`logs::capture_logs`
//! installs the traces), so a test sends a request under an X-Ray trace
//! of its own (`new_trace`) and reads back that trace's spans.

use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value;

pub struct Collector {
    pub base: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

static COLLECTOR: LazyLock<Collector> = LazyLock::new(|| {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&bodies);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                let value = serde_json::from_slice(&body).expect("OTLP JSON");
                kept.lock().unwrap().push(value);
                "{}"
            }
        }),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("collector's port");
    listener.set_nonblocking(true).expect("non-blocking");
    let base = format!("http://{}", listener.local_addr().unwrap());
    crate::RUNTIME.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("collector");
        axum::serve(listener, app).await
    });
    Collector { base, bodies }
});

pub fn collector() -> &'static Collector {
    &COLLECTOR
}

/// An X-Ray trace of a test's own: its header (`Sampled` as asked, under
/// a made-up Lambda segment), its root, and its OTLP trace id.
pub struct Trace {
    pub header: String,
    pub root: String,
    pub trace_id: String,
    pub parent: String,
}

pub fn new_trace(sampled: bool) -> Trace {
    let random = uuid::Uuid::new_v4().simple().to_string();
    let time = format!("{:08x}", chrono::Utc::now().timestamp());
    let root = format!("1-{time}-{}", &random[..24]);
    let parent = random[16..32].to_owned();
    Trace {
        header: format!("Root={root};Parent={parent};Sampled={}", u8::from(sampled)),
        trace_id: format!("{time}{}", &random[..24]),
        root,
        parent,
    }
}

/// Every span of `trace_id` the collector was sent.
pub fn spans_of(trace_id: &str) -> Vec<Value> {
    let bodies = COLLECTOR.bodies.lock().unwrap();
    bodies
        .iter()
        .flat_map(|body| {
            body["resourceSpans"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|resource| {
            resource["scopeSpans"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|scope| scope["spans"].as_array().cloned().unwrap_or_default())
        .filter(|span| span["traceId"] == trace_id)
        .collect()
}

/// A span attribute's value, as text.
pub fn attribute(span: &Value, key: &str) -> Option<String> {
    let found = span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)?;
    let value = &found["value"];
    value["stringValue"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| value["intValue"].as_str().map(str::to_owned))
        .or_else(|| value["intValue"].as_i64().map(|n| n.to_string()))
}

/// OTLP's span kind, as JSON writes it (a number, or the enum's name).
pub fn kind(span: &Value) -> &'static str {
    match &span["kind"] {
        Value::Number(n) if n.as_i64() == Some(2) => "server",
        Value::Number(n) if n.as_i64() == Some(3) => "client",
        Value::Number(n) if n.as_i64() == Some(5) => "consumer",
        Value::String(s) if s.ends_with("SERVER") => "server",
        Value::String(s) if s.ends_with("CLIENT") => "client",
        Value::String(s) if s.ends_with("CONSUMER") => "consumer",
        _ => "other",
    }
}
