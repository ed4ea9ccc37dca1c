//! `make bench` driver.
//!
//! `bench load <host:port> <path> <key> <requests> <concurrency>`: GET
//! `path` over keep-alive HTTP/1.1 connections; prints requests/s, p50, p99.
//!
//! `bench cold <binary> <event.json> <key>`: starts a Lambda binary against a
//! minimal Lambda Runtime API served here, hands it the event, and prints the
//! time from process start to its first response.

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
        ["load", base, path, key, requests, concurrency] => {
            load(base, path, key, requests.parse()?, concurrency.parse()?).await
        }
        ["cold", binary, event, key] => cold(binary, event, key).await,
        _ => bail!(
            "usage: bench load <host:port> <path> <key> <requests> <concurrency> | bench cold <binary> <event.json> <key>"
        ),
    }
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
        if !status.contains(" 200 ") {
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
    path: &str,
    key: &str,
    requests: usize,
    concurrency: usize,
) -> Result<()> {
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n");
    // Warm up connections and caches.
    worker(addr.clone(), request.clone(), 20).await?;
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
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{{\"path\":\"{path}\",\"requests\":{},\"concurrency\":{concurrency},\"requests_per_s\":{:.0},\"p50_ms\":{:.2},\"p99_ms\":{:.2}}}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0,
    );
    Ok(())
}

#[derive(Clone)]
struct Runtime {
    event: String,
    done: mpsc::Sender<String>,
}

async fn next(State(runtime): State<Runtime>) -> (HeaderMap, String) {
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

async fn cold(binary: &str, event: &str, key: &str) -> Result<()> {
    let template: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(event)?)?;
    let mut event = template;
    event["headers"]["authorization"] = format!("Bearer {key}").into();
    let (done, mut finished) = mpsc::channel(1);
    let runtime = Runtime {
        event: event.to_string(),
        done,
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
    let _ = child.kill().await;
    let reply: serde_json::Value = serde_json::from_str(&body)?;
    if reply["statusCode"] != 200 {
        bail!("the function answered {body}");
    }
    println!(
        "{{\"binary\":\"{binary}\",\"bytes\":{},\"start_to_first_response_ms\":{:.1}}}",
        std::fs::metadata(binary)?.len(),
        elapsed.as_secs_f64() * 1000.0
    );
    Ok(())
}
