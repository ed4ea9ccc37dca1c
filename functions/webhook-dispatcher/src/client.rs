//! The outbound HTTP client of webhook deliveries. It connects only to
//! public addresses, judged three times with one rule: the URL's host as
//! the client itself parses it (an address literal is never resolved),
//! every address a name resolves to (the resolver hands the connector
//! only what passed, so a name cannot resolve one way when checked and
//! another when used), and the peer address of the connection made,
//! before a byte of the request is sent (`peer`). It follows no
//! redirects, uses no proxy, reads at most `MAX_ANSWER_BYTES` of an
//! answer, and gives up after the policy's timeout. A development setting
//! admits loopback (a local receiver).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use shared::model::delivery::AttemptError;
use shared::net::UrlHost;

use crate::policy::Policy;

/// The resolver's refusal, found again in the error chain.
#[derive(Debug, thiserror::Error)]
#[error("{0} resolves only to loopback, private or reserved addresses")]
struct Refused(String);

pub use crate::peer::Reach;

/// At most this much of a receiver's answer is read (its status is what
/// counts); the rest is dropped with the connection, so a receiver that
/// streams an endless body costs one buffer, not the invocation.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024;

struct PublicOnly(Reach);

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let lookup = host.clone();
            let found: Vec<SocketAddr> =
                tokio::task::spawn_blocking(move || (lookup.as_str(), 0).to_socket_addrs())
                    .await??
                    .collect();
            let admitted: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| reach.admits(addr.ip()))
                .collect();
            if admitted.is_empty() {
                return Err(Box::new(Refused(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(admitted.into_iter()) as Addrs)
        })
    }
}

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: Option<u16>,
    pub error: Option<AttemptError>,
    pub duration: Duration,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(Policy::succeeded)
    }
}

#[derive(Clone, Debug)]
pub struct Sender {
    client: reqwest::Client,
    reach: Reach,
}

impl Sender {
    pub fn new(policy: &Policy, reach: Reach) -> Self {
        Self::with(policy, reach, |builder| builder)
    }

    /// The client with one more setting (tests pin a name to an address
    /// past the resolver, as a DNS answer changing between check and use
    /// would, to show that the peer check still refuses it).
    pub fn with(
        policy: &Policy,
        reach: Reach,
        extra: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
    ) -> Self {
        let builder = reqwest::Client::builder()
            .dns_resolver(Arc::new(PublicOnly(reach)))
            .connector_layer(crate::peer::PeerCheck(reach))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(!reach.allow_loopback)
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout)
            .user_agent("webhook-dispatcher/1");
        let client = extra(builder).build().expect("the delivery client builds");
        Sender { client, reach }
    }

    /// POSTs `body` with `headers` to `url`, in a span of the trace.
    pub async fn post(&self, url: &str, headers: http::HeaderMap, body: Vec<u8>) -> Outcome {
        use tracing::Instrument;
        let span = shared::telemetry::http_spans::outbound(&http::Method::POST, url);
        let outcome = self
            .post_once(url, headers, body)
            .instrument(span.clone())
            .await;
        shared::telemetry::http_spans::answered(&span, outcome.status);
        outcome
    }

    async fn post_once(&self, url: &str, headers: http::HeaderMap, body: Vec<u8>) -> Outcome {
        let started = Instant::now();
        let done = |status: Option<u16>, error: Option<AttemptError>| Outcome {
            status,
            error,
            duration: started.elapsed(),
        };
        // The host as the client reads it: an address is connected to
        // without resolving, so it is judged here.
        match shared::model::webhook::target(url) {
            Some(UrlHost::Address(ip)) if !self.reach.admits(ip) => {
                return done(None, Some(AttemptError::AddressRefused));
            }
            None => return done(None, Some(AttemptError::AddressRefused)),
            Some(_) => {}
        }
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        match sent {
            // Only the status counts: read a bounded prefix of the answer
            // (within the timeout) and drop the rest with the connection.
            Ok(mut answer) => {
                let status = answer.status().as_u16();
                let mut read = 0;
                loop {
                    match answer.chunk().await {
                        Ok(Some(chunk)) => {
                            read += chunk.len();
                            if read >= MAX_ANSWER_BYTES {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) if e.is_timeout() => {
                            return done(None, Some(AttemptError::Timeout));
                        }
                        Err(_) => break,
                    }
                }
                done(Some(status), None)
            }
            Err(error) => done(None, Some(classify(&error))),
        }
    }
}

fn classify(error: &reqwest::Error) -> AttemptError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<Refused>() || cause.is::<crate::peer::PeerRefused>() {
            return AttemptError::AddressRefused;
        }
        source = cause.source();
    }
    if error.is_timeout() {
        AttemptError::Timeout
    } else {
        AttemptError::ConnectionFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    #[test]
    fn loopback_is_admitted_only_by_the_development_setting() {
        let strict = Reach {
            allow_loopback: false,
        };
        let dev = Reach {
            allow_loopback: true,
        };
        for ip in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!strict.admits(ip) && dev.admits(ip), "{ip}");
        }
        for ip in ["10.0.0.1", "169.254.169.254", "192.168.1.1", "fd00::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!strict.admits(ip) && !dev.admits(ip), "{ip}");
        }
        assert!(strict.admits("93.184.215.14".parse().unwrap()));
    }

    fn short_policy() -> Policy {
        Policy {
            timeout: Duration::from_secs(3),
            ..Policy::default()
        }
    }

    #[tokio::test]
    async fn every_numeric_spelling_of_a_refused_address_is_refused_at_send_time() {
        let strict = Sender::new(
            &short_policy(),
            Reach {
                allow_loopback: false,
            },
        );
        let dev = Sender::new(
            &short_policy(),
            Reach {
                allow_loopback: true,
            },
        );
        for (host, address) in shared::net::NUMERIC_HOST_FORMS {
            let url = format!("https://{host}/hook");
            let outcome = strict
                .post(&url, http::HeaderMap::new(), b"{}".to_vec())
                .await;
            assert_eq!(outcome.error, Some(AttemptError::AddressRefused), "{url}");
            assert_eq!(outcome.status, None, "{url}");
            // The development setting opens loopback only.
            let ip: IpAddr = address.parse().unwrap();
            if !ip.to_canonical().is_loopback() {
                let outcome = dev.post(&url, http::HeaderMap::new(), b"{}".to_vec()).await;
                assert_eq!(outcome.error, Some(AttemptError::AddressRefused), "{url}");
            }
        }
    }

    /// A listener on loopback that records what each connection sent and
    /// answers `answer` once it has read a request's head (a test's
    /// server: no request, no gate).
    #[allow(clippy::disallowed_methods)]
    async fn receiver(
        answer: &'static [u8],
        endless: bool,
    ) -> (u16, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        match tokio::time::timeout(
                            Duration::from_millis(500),
                            socket.read(&mut buf),
                        )
                        .await
                        {
                            Ok(Ok(n)) if n > 0 => {
                                seen.extend_from_slice(&buf[..n]);
                                if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                                    let _ = socket.write_all(answer).await;
                                    if endless {
                                        let chunk = vec![b'x'; 64 * 1024];
                                        while socket.write_all(&chunk).await.is_ok() {}
                                    }
                                    break;
                                }
                            }
                            _ => break,
                        }
                    }
                    let _ = tx.send(seen);
                });
            }
        });
        (port, rx)
    }

    #[tokio::test]
    async fn a_connection_to_a_refused_peer_is_dropped_before_the_request_is_sent() {
        let (port, mut seen) =
            receiver(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", false).await;
        // A public-looking name pinned to loopback past the resolver, as a
        // DNS answer that changed between the check and the connection.
        let sender = Sender::with(
            &short_policy(),
            Reach {
                allow_loopback: false,
            },
            |b| {
                b.https_only(false).resolve(
                    "hooks.example.com",
                    SocketAddr::from(([127, 0, 0, 1], port)),
                )
            },
        );
        let url = format!("http://hooks.example.com:{port}/hook");
        let outcome = sender
            .post(&url, http::HeaderMap::new(), b"{}".to_vec())
            .await;
        assert_eq!(outcome.error, Some(AttemptError::AddressRefused));
        assert_eq!(outcome.status, None);
        let sent = tokio::time::timeout(Duration::from_secs(3), seen.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            sent.is_empty(),
            "the refused peer received {} bytes",
            sent.len()
        );
    }

    #[tokio::test]
    async fn an_endless_answer_is_read_only_as_far_as_its_status() {
        let (port, _seen) =
            receiver(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n", true).await;
        let sender = Sender::new(
            &short_policy(),
            Reach {
                allow_loopback: true,
            },
        );
        let started = Instant::now();
        let outcome = sender
            .post(
                &format!("http://127.0.0.1:{port}/hook"),
                http::HeaderMap::new(),
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(outcome.status, Some(200));
        assert!(outcome.succeeded());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
