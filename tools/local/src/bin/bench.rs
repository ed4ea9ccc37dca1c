//! `make bench` driver.
//!
//! `bench load <host:port> <METHOD> <path> <key> <requests> <concurrency>
//! [json body]`: sends the request over keep-alive HTTP/1.1 connections;
//! prints requests/s, p50, p99 as seen by the client.
//!
//! `bench getitem <requests>`: GetItem round trips to DynamoDB (one at a
//! time, `TABLE_NAME`, a key that does not exist); prints p50 and p99, the
//! yardstick of every route's DynamoDB waits.
//!
//! `bench cold <binary> <event.json> <key> [METHOD path[?query]]`: starts a
//! Lambda binary against a minimal Lambda Runtime API served here, hands it
//! the event (an API Gateway request for the path, or the event file as it
//! is when no path is given), and prints the binary's size and the time
//! from process start to its first response.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [
            "load",
            base,
            method,
            path,
            key,
            requests,
            concurrency,
            rest @ ..,
        ] => {
            let body = rest.first().copied();
            load(
                base,
                method,
                path,
                key,
                requests.parse()?,
                concurrency.parse()?,
                body,
            )
            .await
        }
        ["getitem", requests] => getitem(requests.parse()?).await,
        ["cold", binary, event, key, rest @ ..] => cold(binary, event, key, rest).await,
        _ => bail!(
            "usage: bench load <host:port> <METHOD> <path> <key> <requests> <concurrency> [body] | bench getitem <requests> | bench cold <binary> <event.json> <key> [METHOD path]"
        ),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// GetItem round trips to DynamoDB (the local stack's DynamoDB Local), one
/// at a time.
async fn getitem(requests: usize) -> Result<()> {
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let db = aws_sdk_dynamodb::Client::new(&sdk);
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "integration-api".into());
    let mut latencies = Vec::with_capacity(requests);
    for i in 0..requests + 20 {
        let started = Instant::now();
        db.get_item()
            .table_name(&table)
            .key(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S("BENCH#none".into()),
            )
            .key(
                "sk",
                aws_sdk_dynamodb::types::AttributeValue::S("BENCH".into()),
            )
            .consistent_read(true)
            .send()
            .await?;
        if i >= 20 {
            latencies.push(started.elapsed());
        }
    }
    latencies.sort();
    println!(
        "{{\"dynamodb_getitem\":{{\"requests\":{requests},\"p50_ms\":{:.2},\"p99_ms\":{:.2}}}}}",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99)
    );
    Ok(())
}

/// One keep-alive connection sending `count` requests; returns latencies.
async fn worker(addr: String, request: String, count: usize) -> Result<Vec<Duration>> {
    let stream = TcpStream::connect(&addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        write.write_all(request.as_bytes()).await?;
        let mut status = String::new();
        read.read_line(&mut status).await?;
        if !status
            .split(' ')
            .nth(1)
            .is_some_and(|code| code.starts_with('2'))
        {
            bail!("unexpected response: {status}");
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            read.read_line(&mut line).await?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

async fn load(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    requests: usize,
    concurrency: usize,
    body: Option<&str>,
) -> Result<()> {
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // Warm up connections and caches.
    worker(addr.clone(), request.clone(), (requests / 5).clamp(1, 20)).await?;
    let started = Instant::now();
    let per_worker = requests / concurrency;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| tokio::spawn(worker(addr.clone(), request.clone(), per_worker)))
        .collect();
    let mut latencies = Vec::new();
    for w in workers {
        latencies.extend(w.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    println!(
        "{{\"request\":\"{method} {path}\",\"requests\":{},\"concurrency\":{concurrency},\"requests_per_s\":{:.0},\"p50_ms\":{:.2},\"p99_ms\":{:.2}}}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
    );
    Ok(())
}

#[derive(Clone)]
struct Runtime {
    event: String,
    done: mpsc::Sender<String>,
    /// When the function first asked for an invocation: the end of its init.
    ready: Arc<OnceLock<Instant>>,
}

async fn next(State(runtime): State<Runtime>) -> (HeaderMap, String) {
    runtime.ready.get_or_init(Instant::now);
    let mut headers = HeaderMap::new();
    headers.insert(
        "lambda-runtime-aws-request-id",
        "bench-invocation-1".parse().unwrap(),
    );
    let deadline = std::time::SystemTime::now() + Duration::from_secs(30);
    let ms = deadline
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    headers.insert(
        "lambda-runtime-deadline-ms",
        ms.to_string().parse().unwrap(),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:eu-north-1:123456789012:function:bench"
            .parse()
            .unwrap(),
    );
    (headers, runtime.event)
}

async fn response(State(runtime): State<Runtime>, body: String) -> StatusCode {
    let _ = runtime.done.send(body).await;
    StatusCode::ACCEPTED
}

async fn cold(binary: &str, event: &str, key: &str, request: &[&str]) -> Result<()> {
    let mut event: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(event)?)?;
    if let [method, target] = request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let route = format!("ANY {path}");
        event["routeKey"] = route.clone().into();
        event["rawPath"] = (*path).into();
        event["rawQueryString"] = query.into();
        event["requestContext"]["routeKey"] = route.into();
        event["requestContext"]["http"]["method"] = (*method).into();
        event["requestContext"]["http"]["path"] = (*path).into();
        event["headers"]["authorization"] = format!("Bearer {key}").into();
    }
    let (done, mut finished) = mpsc::channel(1);
    let ready = Arc::new(OnceLock::new());
    let runtime = Runtime {
        event: event.to_string(),
        done,
        ready: ready.clone(),
    };
    let app = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(response))
        .route("/2018-06-01/runtime/init/error", post(response))
        .with_state(runtime);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let api = listener.local_addr()?.to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let started = Instant::now();
    let mut child = tokio::process::Command::new(binary)
        .env("AWS_LAMBDA_RUNTIME_API", &api)
        .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("start {binary}"))?;
    let body = tokio::time::timeout(Duration::from_secs(30), finished.recv())
        .await?
        .context("no response")?;
    let elapsed = started.elapsed();
    let init = ready.get().map(|ready| ready.duration_since(started));
    let _ = child.kill().await;
    let reply: serde_json::Value = serde_json::from_str(&body)?;
    let answered = reply
        .get("statusCode")
        .map_or_else(|| "invocation".to_owned(), |s| s.to_string());
    if !answered.starts_with('2') && answered != "invocation" && answered != "405" {
        bail!("{binary} answered {body}");
    }
    let ms = |d: Duration| (d.as_secs_f64() * 10_000.0).round() / 10.0;
    println!(
        "{}",
        serde_json::json!({
            "binary": binary,
            "bytes": std::fs::metadata(binary)?.len(),
            "status": answered,
            "init_ms": init.map(ms),
            "start_to_first_response_ms": ms(elapsed),
        })
    );
    Ok(())
}
