//! Each step as the requests a client sends for it.

use super::*;

impl System {
    /// The URL of `org`'s receiver number `url`.
    fn hook_url(&self, org: usize, url: usize) -> String {
        format!("{}/org{org}/url{url}", self.receiver.base)
    }

    /// The id of the delivery of load `load` the receiver got at `path`.
    fn delivery_id(&self, path: &str, load: Uuid) -> String {
        let got = self.receiver.requests();
        let request = got
            .iter()
            .find(|r| {
                r.path == path && r.json()["subject"]["id"].as_str() == Some(&load.to_string())
            })
            .expect("the receiver got the delivery");
        request.json()["id"]
            .as_str()
            .expect("a delivery id")
            .to_owned()
    }

    /// Builds `step`'s request (the form and the S3 post of a direct
    /// upload first), or the answer that ended it before.
    pub(super) async fn prepare(&mut self, model: &Model, step: &Step) -> Result<Request, Reply> {
        let by = step.by().expect("a request");
        let key = self.orgs[by.org].keys[by.key].0.clone();
        let json = |method: Method, path: String, body: Value| Request {
            method,
            path,
            key: key.clone(),
            idempotency_key: step.idempotency_key(),
            body: Some(("application/json".into(), body.to_string().into_bytes())),
        };
        let bare = |method: Method, path: String| Request {
            method,
            path,
            key: key.clone(),
            idempotency_key: None,
            body: None,
        };
        let ids = &self.orgs[by.org];
        Ok(match step {
            Step::CreateSite { tag, .. } => json(
                Method::POST,
                "/api/v1/sites".into(),
                json!({"name": format!("Site {tag}")}),
            ),
            Step::RenameSite { site, tag, .. } => json(
                Method::PATCH,
                format!("/api/v1/sites/{}", ids.sites[*site]),
                json!({"name": format!("Site {tag}")}),
            ),
            Step::ArchiveSite { site, .. } => bare(
                Method::DELETE,
                format!("/api/v1/sites/{}", ids.sites[*site]),
            ),
            Step::RestoreSite { site, .. } => bare(
                Method::POST,
                format!("/api/v1/sites/{}/restore", ids.sites[*site]),
            ),
            Step::CreateLoad { site, .. } => json(
                Method::POST,
                "/api/v1/surpluses".into(),
                json!({"site_id": ids.sites[*site], "volume_m3": 2}),
            ),
            Step::Upload { load, tag, .. } => {
                let boundary = format!("model-{tag}");
                let form = api_tests::multipart(
                    &boundary,
                    &[],
                    Some(("waybill.png", "image/png", &image(*tag))),
                );
                Request {
                    body: Some((format!("multipart/form-data; boundary={boundary}"), form)),
                    ..bare(
                        Method::POST,
                        format!("/api/v1/surpluses/{}/waybill", ids.loads[*load]),
                    )
                }
                .keyed(step.idempotency_key())
            }
            Step::UploadByForm { load, tag, .. } => {
                let load = ids.loads[*load];
                let form = bare(
                    Method::POST,
                    format!("/api/v1/surpluses/{load}/waybill/upload"),
                );
                let form = Request {
                    body: Some((
                        "application/json".into(),
                        json!({"content_type": "image/png"})
                            .to_string()
                            .into_bytes(),
                    )),
                    ..form
                };
                let reply = self.send(&form, false).await;
                if reply.status != 200 {
                    return Err(reply);
                }
                let posted = post_form(&reply.body["data"], "image/png", &image(*tag)).await;
                assert!((200..300).contains(&posted), "{step}: S3 answered {posted}");
                json(
                    Method::POST,
                    format!("/api/v1/surpluses/{load}/waybill/confirm"),
                    json!({"storage_path": reply.body["data"]["storage_path"]}),
                )
            }
            Step::Deliver { load, .. } => json(
                Method::PATCH,
                format!("/api/v1/surpluses/{}", ids.loads[*load]),
                json!({"status": "delivered"}),
            ),
            Step::SetStatus { load, to, .. } => json(
                Method::PATCH,
                format!("/api/v1/surpluses/{}", ids.loads[*load]),
                json!({"status": to.as_str()}),
            ),
            Step::Register { url, .. } => json(
                Method::POST,
                "/api/v1/webhooks".into(),
                json!({
                    "event": "surplus.delivered",
                    "url": self.hook_url(by.org, *url),
                    "verification_mode": "hmac_sha256",
                }),
            ),
            Step::Unregister { hook, .. } => bare(
                Method::DELETE,
                format!("/api/v1/webhooks/{}", ids.hooks[*hook]),
            ),
            Step::Retry { hook, nth, .. } => {
                let model_hook = &model.orgs[by.org].hooks[*hook];
                let load = ids.loads[model_hook.deliveries[*nth].load];
                let path = self.hook_url(by.org, model_hook.url);
                let path = path.trim_start_matches(&self.receiver.base);
                let delivery = self.delivery_id(path, load);
                bare(
                    Method::POST,
                    format!(
                        "/api/v1/webhooks/{}/deliveries/{delivery}/retry",
                        ids.hooks[*hook]
                    ),
                )
                .keyed(step.idempotency_key())
            }
            Step::Ping { hook, .. } => bare(
                Method::POST,
                format!("/api/v1/webhooks/{}/ping", ids.hooks[*hook]),
            )
            .keyed(step.idempotency_key()),
            Step::Recover { hook, .. } => {
                let since = self.clock.now() - chrono::TimeDelta::days(1);
                json(
                    Method::POST,
                    format!("/api/v1/webhooks/{}/recover", ids.hooks[*hook]),
                    json!({"since": since.to_rfc3339()}),
                )
                .keyed(step.idempotency_key())
            }
            Step::Ticket { tag, .. } | Step::Tickets { tag, .. } | Step::Quoted { tag, .. } => {
                json(
                    Method::POST,
                    "/api/v1/support".into(),
                    json!({"title": format!("Ticket {tag}"), "description": "Deliveries fail."}),
                )
            }
            Step::Geocode { .. } => json(
                Method::POST,
                "/api/v1/geocode".into(),
                json!({"address": "Mannerheimintie 1, Helsinki"}),
            ),
            Step::Replay { nth, .. } => {
                let name = &model.orgs[by.org].keys[by.key].keyed[*nth].name;
                self.sent[name].request.clone()
            }
            Step::Reuse { nth, tag, .. } => {
                let name = model.orgs[by.org].keys[by.key].keyed[*nth].name.clone();
                json(
                    Method::POST,
                    "/api/v1/sites".into(),
                    json!({"name": format!("Site {tag}")}),
                )
                .keyed(Some(name))
            }
            Step::Peek { of, nth, .. } => bare(Method::GET, self.peeked(*of, *nth).0),
            Step::CreatePoint { site, tag, .. } => json(
                Method::POST,
                "/api/v1/receiving-points".into(),
                json!({"site_id": ids.sites[*site], "name": format!("Point {tag}")}),
            ),
            Step::Grant { .. } => json(
                Method::POST,
                "/api/v1/org-access-grants".into(),
                json!({"grantee_org_id": self.orgs[(by.org + 1) % ORGS].id, "scope": "read"}),
            ),
            Step::Ungrant { .. } => bare(
                Method::DELETE,
                format!(
                    "/api/v1/org-access-grants/{}",
                    self.orgs[(by.org + 1) % ORGS].id
                ),
            ),
            other => unreachable!("not a request: {other}"),
        })
    }
}

impl System {
    /// The path of organization `of`'s `nth` record (its sites, then its
    /// loads), and a change of it.
    fn peeked(&self, of: usize, nth: usize) -> (String, Value) {
        let other = &self.orgs[of];
        match other.sites.get(nth) {
            Some(site) => (
                format!("/api/v1/sites/{site}"),
                json!({"name": "Not yours"}),
            ),
            None => (
                format!("/api/v1/surpluses/{}", other.loads[nth - other.sites.len()]),
                json!({"description": "Not yours"}),
            ),
        }
    }

    /// After another organization's key read a record (granted or not):
    /// its change is 404, and calls nothing outside the table.
    pub(super) async fn peek_change(&self, step: &Step) {
        let Step::Peek { by, of, nth } = step else {
            return;
        };
        let (path, change) = self.peeked(*of, *nth);
        let key = self.orgs[by.org].keys[by.key].0.clone();
        self.seen.mark();
        let reply = call(Method::PATCH, &path)
            .key(&key)
            .json(&change)
            .send_to(&self.api)
            .await;
        let code = if *nth < self.orgs[*of].sites.len() {
            "site_not_found"
        } else {
            "surplus_not_found"
        };
        if reply.status != 401 && reply.status != 403 {
            assert_eq!(
                (reply.status.as_u16(), reply.code()),
                (404, code),
                "{step}: the change: {}",
                reply.text
            );
        }
        assert!(
            self.seen.outside().is_empty(),
            "{step}: the change called outside"
        );
    }
}

impl Request {
    fn keyed(mut self, name: Option<String>) -> Request {
        self.idempotency_key = name;
        self
    }
}
