//! The last of the delivery client's three checks: the peer address of
//! the connection itself. A connector layer sees every connection the
//! client makes, after it is established and before a byte of the request
//! is written, and refuses one whose peer the delivery may not reach, so
//! no path around the URL check or the resolver (an address literal, a
//! name pinned past the resolver, a DNS answer that changed) reaches a
//! refused address.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connection, HttpInfo};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which addresses a delivery may reach.
#[derive(Clone, Copy, Debug)]
pub struct Reach {
    pub allow_loopback: bool,
}

impl Reach {
    pub fn admits(self, ip: std::net::IpAddr) -> bool {
        shared::net::is_public(ip) || (self.allow_loopback && ip.to_canonical().is_loopback())
    }
}

/// The refusal, found again in the error chain.
#[derive(Debug, thiserror::Error)]
#[error("the connection's peer {0} is a loopback, private or reserved address")]
pub struct PeerRefused(pub std::net::IpAddr);

/// The layer (`reqwest::ClientBuilder::connector_layer`).
#[derive(Clone, Copy, Debug)]
pub struct PeerCheck(pub Reach);

impl<S> tower::Layer<S> for PeerCheck {
    type Service = Checked<S>;
    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            reach: self.0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Checked<S> {
    inner: S,
    reach: Reach,
}

impl<S, R> tower::Service<R> for Checked<S>
where
    S: tower::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let reach = self.reach;
        let connecting = self.inner.call(request);
        Box::pin(async move {
            let connection = connecting.await.map_err(Into::into)?;
            match peer(&connection) {
                Some(ip) if reach.admits(ip) => Ok(connection),
                Some(ip) => Err(Box::new(PeerRefused(ip)) as BoxError),
                // Every TCP connection knows its peer; one that does not
                // is not a connection this client may use.
                None => {
                    Err(Box::new(PeerRefused(std::net::Ipv4Addr::UNSPECIFIED.into())) as BoxError)
                }
            }
        })
    }
}

/// The peer address of an established connection.
fn peer(connection: &impl Connection) -> Option<std::net::IpAddr> {
    let mut extensions = http::Extensions::new();
    connection.connected().get_extras(&mut extensions);
    extensions
        .get::<HttpInfo>()
        .map(|info| info.remote_addr().ip())
}
