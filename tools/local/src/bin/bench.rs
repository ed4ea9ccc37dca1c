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
//! `bench engine <requests>`: the engine's own floor for the shapes of a
//! request's DynamoDB calls (see `engine`), each as a JSON line with its
//! p50, p99 and write units per request; then one key's writes at once,
//! with the admission before and inside the write's transaction.
//!
//! `bench metrics <lines>`: what one request's metric line costs
//! (`shared::metrics`): its document built, serialised and written to
//! `/dev/null` (a write system call, as to Lambda's standard output), one
//! line after another on one thread; prints microseconds per line (p50 of
//! batches of 1,000, and the mean).
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
        ["engine", requests] => engine(requests.parse()?).await,
        ["cold", binary, event, key, rest @ ..] => cold(binary, event, key, rest).await,
        ["metrics", lines] => metric_lines(lines.parse()?),
        _ => bail!(
            "usage: bench load <host:port> <METHOD> <path> <key> <requests> <concurrency> [body] | bench getitem <requests> | bench engine <requests> | bench metrics <lines> | bench cold <binary> <event.json> <key> [METHOD path]"
        ),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// `lines` metric lines of a typical request (a read with its key and
/// organization), each built, serialised and written to `/dev/null`.
fn metric_lines(lines: usize) -> Result<()> {
    use shared::metrics::Report;
    use std::io::Write;
    let mut null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let config = shared::config::MetricsConfig::default();
    // Ids of the length real ones have.
    let org = "0194f8a2-7c1e-7d3a-9b1f-2a6c4e8d0f13".to_owned();
    let key = "0194f8a2-7c1e-7d3a-9b1f-2a6c4e8d0f14".to_owned();
    let request_id = "0194f8a2-7c1e-7d3a-9b1f-2a6c4e8d0f15";
    let mut batches = Vec::new();
    let mut total = Duration::ZERO;
    for _ in 0..lines.div_ceil(1000) {
        let started = Instant::now();
        for i in 0..1000 {
            let served = shared::metrics::request::Served {
                method: "GET",
                route: Some("/api/v1/sites/{siteId}"),
                status: 200,
                code: None,
                latency_ms: 4.25 + f64::from(i % 7),
                read_units: 1.5,
                write_units: 1.0,
                round_trips: 1,
                ddb_ms: 3.125,
                ddb_calls: 2,
                warm: true,
                aws_calls: None,
                rate_window: Some(29_930_451),
                replayed: false,
                request_id,
                trace_id: Some("1-5759e988-bd862e3fe1be46a994272793"),
                invocation_id: Some("c6af9ac6-7b61-11e6-9a41-93e812345678"),
                org_id: Some(org.clone()),
                key_id: Some(key.clone()),
            };
            let mut line = served.document().line(&config.namespace);
            line.push('\n');
            null.write_all(line.as_bytes())?;
        }
        let took = started.elapsed();
        total += took;
        batches.push(took);
    }
    batches.sort();
    let per_line = |d: Duration| d.as_secs_f64() * 1e6 / 1000.0;
    println!(
        "{}",
        serde_json::json!({
            "metric_lines": batches.len() * 1000,
            "us_per_line_p50": (per_line(batches[batches.len() / 2]) * 100.0).round() / 100.0,
            "us_per_line_mean": (per_line(total / u32::try_from(batches.len())?) * 100.0).round() / 100.0,
        })
    );
    Ok(())
}

/// GetItem round trips to DynamoDB (the local stack's DynamoDB Local), one
/// at a time.
async fn getitem(requests: usize) -> Result<()> {
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let db = aws_sdk_dynamodb::Client::new(&sdk);
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "integration-api".into());
    let (latencies, _) = timed(requests, |_| absent(&db, &table)).await?;
    println!(
        "{{\"dynamodb_getitem\":{{\"requests\":{requests},\"p50_ms\":{:.2},\"p99_ms\":{:.2}}}}}",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99)
    );
    Ok(())
}

/// A strongly consistent GetItem of a key that does not exist (no units
/// counted: reads are not what `timed` adds up).
async fn absent(db: &aws_sdk_dynamodb::Client, table: &str) -> Result<f64> {
    use aws_sdk_dynamodb::types::AttributeValue;
    db.get_item()
        .table_name(table)
        .key("pk", AttributeValue::S("BENCH#none".into()))
        .key("sk", AttributeValue::S("BENCH".into()))
        .consistent_read(true)
        .send()
        .await?;
    Ok(0.0)
}

/// `requests` calls one at a time, after 20 that warm up: their latencies,
/// sorted, and the write units they reported on average.
async fn timed<F, Fut>(requests: usize, mut call: F) -> Result<(Vec<Duration>, f64)>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<f64>>,
{
    const WARM_UP: usize = 20;
    let mut latencies = Vec::with_capacity(requests);
    let mut write_units = 0.0;
    for i in 0..requests + WARM_UP {
        let started = Instant::now();
        let spent = call(i).await?;
        if i >= WARM_UP {
            latencies.push(started.elapsed());
            write_units += spent;
        }
    }
    latencies.sort();
    Ok((latencies, write_units / requests.max(1) as f64))
}

/// The engine's floor for the shapes a request's calls take, one shape
/// after another, one request at a time: a GetItem, a counting UpdateItem,
/// two or three of them at once (a warm read's admission beside its
/// record), and the two shapes a write can take: its admission (an
/// UpdateItem) before its transaction, or inside it. Each shape prints its
/// p50 and p99, and the write units DynamoDB reports per request. Then
/// `WRITERS` requests of one key at once, in both write shapes, counting
/// the transactions the engine cancelled for a conflict on the key's item.
async fn engine(requests: usize) -> Result<()> {
    use aws_sdk_dynamodb::types::{
        AttributeValue, Put, ReturnConsumedCapacity, ReturnValue, TransactWriteItem, Update,
    };
    const WRITERS: usize = 8;
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let db = aws_sdk_dynamodb::Client::new(&sdk);
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "integration-api".into());
    let (db, table) = (&db, table.as_str());
    let s = |v: &str| AttributeValue::S(v.into());
    let units = |c: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>| {
        c.and_then(|c| c.capacity_units).unwrap_or(0.0)
    };
    let get = || absent(db, table);
    // The admission's shape: count one on the key's item, under a cap.
    let counting = |pk: &str| {
        Update::builder()
            .table_name(table)
            .key("pk", s(pk))
            .key("sk", s("BENCH"))
            .update_expression("ADD #n :one")
            .condition_expression("attribute_not_exists(#n) OR #n < :cap")
            .expression_attribute_names("#n", "c")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":cap", AttributeValue::N("1000000000".into()))
            .build()
            .map_err(anyhow::Error::from)
    };
    let count = move |pk: &'static str| async move {
        let update = counting(pk)?;
        db.update_item()
            .table_name(table)
            .set_key(Some(update.key))
            .update_expression(update.update_expression)
            .set_condition_expression(update.condition_expression)
            .set_expression_attribute_names(update.expression_attribute_names)
            .set_expression_attribute_values(update.expression_attribute_values)
            .return_values(ReturnValue::AllNew)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map(|out| units(out.consumed_capacity()))
            .map_err(anyhow::Error::from)
    };
    // A record of the write's own: a small item of its own key.
    let record = |id: usize| {
        Put::builder()
            .table_name(table)
            .item("pk", s(&format!("BENCH#record#{id}")))
            .item("sk", s("BENCH"))
            .item("name", s("Bench record"))
            .build()
            .map_err(anyhow::Error::from)
    };
    let transact = move |admission: bool, id: usize| async move {
        let mut items = vec![TransactWriteItem::builder().put(record(id)?).build()];
        if admission {
            items.insert(
                0,
                TransactWriteItem::builder()
                    .update(counting("BENCH#a")?)
                    .build(),
            );
        }
        db.transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map(|out| {
                out.consumed_capacity()
                    .iter()
                    .map(|c| units(Some(c)))
                    .sum::<f64>()
            })
            .map_err(anyhow::Error::from)
    };
    let admit_then_write = move |id: usize| async move {
        Ok::<_, anyhow::Error>(count("BENCH#a").await? + transact(false, id).await?)
    };
    let shape = |name: &str, (latencies, write_units): (Vec<Duration>, f64)| {
        println!(
            "{{\"shape\":\"{name}\",\"requests\":{requests},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"write_units\":{write_units:.1}}}",
            percentile(&latencies, 0.50),
            percentile(&latencies, 0.99),
        );
    };
    shape("GetItem", timed(requests, |_| get()).await?);
    shape("UpdateItem", timed(requests, |_| count("BENCH#a")).await?);
    // Calls at once: the units of each added up.
    shape(
        "GetItem + GetItem",
        timed(requests, |_| async move {
            let (a, b) = tokio::try_join!(get(), get())?;
            Ok(a + b)
        })
        .await?,
    );
    shape(
        "GetItem + UpdateItem",
        timed(requests, |_| async move {
            let (a, b) = tokio::try_join!(get(), count("BENCH#a"))?;
            Ok(a + b)
        })
        .await?,
    );
    shape(
        "GetItem + GetItem + UpdateItem",
        timed(requests, |_| async move {
            let (a, b, c) = tokio::try_join!(get(), get(), count("BENCH#a"))?;
            Ok(a + b + c)
        })
        .await?,
    );
    shape(
        "UpdateItem + UpdateItem (two items)",
        timed(requests, |_| async move {
            let (a, b) = tokio::try_join!(count("BENCH#a"), count("BENCH#b"))?;
            Ok(a + b)
        })
        .await?,
    );
    shape(
        "UpdateItem, then TransactWriteItems[Put]",
        timed(requests, admit_then_write).await?,
    );
    shape(
        "TransactWriteItems[Update key, Put]",
        timed(requests, |i| transact(true, i)).await?,
    );
    // One key's requests at once: the admission before the transaction
    // never conflicts (an UpdateItem waits its turn); inside it, the key's
    // item is in every transaction, and the engine cancels those that meet.
    for (name, inside) in [
        ("UpdateItem, then TransactWriteItems[Put]", false),
        ("TransactWriteItems[Update key, Put]", true),
    ] {
        let rounds = (requests / WRITERS).max(1);
        let mut conflicts = 0usize;
        let started = Instant::now();
        for round in 0..rounds {
            let writers = (0..WRITERS).map(|w| {
                let id = round * WRITERS + w;
                async move {
                    if inside {
                        transact(true, id).await
                    } else {
                        admit_then_write(id).await
                    }
                }
            });
            for outcome in futures::future::join_all(writers).await {
                if let Err(e) = outcome {
                    let text = format!("{e:?}");
                    if text.contains("TransactionConflict") || text.contains("TransactionCanceled")
                    {
                        conflicts += 1;
                    } else {
                        return Err(e);
                    }
                }
            }
        }
        println!(
            "{{\"contention\":\"{name}\",\"writers\":{WRITERS},\"requests\":{},\"cancelled\":{conflicts},\"ms_per_round\":{:.3}}}",
            rounds * WRITERS,
            started.elapsed().as_secs_f64() * 1000.0 / rounds as f64
        );
    }
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
