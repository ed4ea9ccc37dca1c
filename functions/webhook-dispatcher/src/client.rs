//! The outbound HTTP client of webhook deliveries. It connects only to
//! public addresses, judged on the addresses a name resolves to, at
//! connect time (the resolver hands the connector only what passed, so a
//! name cannot resolve one way when checked and another when used); it
//! follows no redirects, uses no proxy, and gives up after the policy's
//! timeout. A development setting admits loopback (a local receiver).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use shared::model::delivery::AttemptError;

use crate::policy::Policy;

/// The resolver's refusal, found again in the error chain.
#[derive(Debug, thiserror::Error)]
#[error("{0} resolves only to loopback, private or reserved addresses")]
struct Refused(String);

/// Which addresses a delivery may reach.
#[derive(Clone, Copy, Debug)]
pub struct Reach {
    pub allow_loopback: bool,
}

impl Reach {
    pub fn admits(self, ip: IpAddr) -> bool {
        shared::net::is_public(ip) || (self.allow_loopback && canonical(ip).is_loopback())
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

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
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(PublicOnly(reach)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(!reach.allow_loopback)
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout)
            .user_agent("webhook-dispatcher/1")
            .build()
            .expect("the delivery client builds");
        Sender { client, reach }
    }

    /// POSTs `body` with `headers` to `url`.
    pub async fn post(&self, url: &str, headers: http::HeaderMap, body: Vec<u8>) -> Outcome {
        let started = Instant::now();
        let done = |status: Option<u16>, error: Option<AttemptError>| Outcome {
            status,
            error,
            duration: started.elapsed(),
        };
        // An address written in the URL is not resolved: judge it here.
        let literal = url.parse::<http::Uri>().ok().and_then(|uri| {
            let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
            host.parse::<IpAddr>().ok()
        });
        if literal.is_some_and(|ip| !self.reach.admits(ip)) {
            return done(None, Some(AttemptError::AddressRefused));
        }
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        match sent {
            // Read the answer (bounded by the timeout) so the connection
            // can be reused; its content does not matter.
            Ok(answer) => {
                let status = answer.status().as_u16();
                match answer.bytes().await {
                    Err(e) if e.is_timeout() => done(None, Some(AttemptError::Timeout)),
                    _ => done(Some(status), None),
                }
            }
            Err(error) => done(None, Some(classify(&error))),
        }
    }
}

fn classify(error: &reqwest::Error) -> AttemptError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<Refused>() {
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
}
