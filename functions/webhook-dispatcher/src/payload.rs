//! The payloads: `surplus.delivered`'s envelope and `data` exactly as the
//! contract's table lists them (camelCase but `volume_m3` and
//! `truckCapacity_m3`; null where unknown), and a ping's (`webhook.ping`:
//! the webhook, the event it is registered for, when the ping was asked
//! for). Sources: docs/webhooks.md.

use serde::Serialize;
use shared::ApiResult;
use shared::model::Timestamp;
use shared::model::delivery::DeliveryRecord;
use shared::model::geo::Coordinates;
use shared::model::surplus::{SurplusRecord, SurplusStatus};
use shared::model::webhook::WebhookRecord;
use shared::store::Store;
use uuid::Uuid;

#[derive(Debug, Serialize)]
pub struct Envelope<D> {
    pub id: Uuid,
    pub event: String,
    pub timestamp: Timestamp,
    pub subject: Subject,
    pub data: D,
}

/// `data` of `webhook.ping`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookPing {
    pub webhook_id: Uuid,
    /// The event the webhook is registered for (`surplus.delivered`).
    pub event: String,
    pub requested_at: Timestamp,
}

/// The payload of ping `delivery` to webhook `hook`.
pub fn ping(delivery: &DeliveryRecord, hook: &WebhookRecord) -> Envelope<WebhookPing> {
    Envelope {
        id: delivery.id,
        event: delivery.event.clone(),
        timestamp: shared::model::now(),
        subject: Subject {
            kind: "webhook",
            id: hook.id,
        },
        data: WebhookPing {
            webhook_id: hook.id,
            event: hook.event.clone(),
            requested_at: delivery.created_at,
        },
    }
}

#[derive(Debug, Serialize)]
pub struct Subject {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: Uuid,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    pub street: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
    pub country_code: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waybill {
    pub storage_path: String,
    pub url: String,
    pub url_expires_at: Timestamp,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldCapture {
    pub haulier_label: Option<String>,
    pub driver_name: Option<String>,
    pub driver_phone: Option<String>,
    pub notes: Option<String>,
}

/// `data` of `surplus.delivered`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SurplusDelivered {
    pub surplus_id: Uuid,
    pub org_id: Uuid,
    pub org_name: Option<String>,
    pub from_site_id: Uuid,
    pub from_site_name: Option<String>,
    pub from_site_address: Option<Address>,
    pub from_site_coordinates: Option<Coordinates>,
    pub to_receiving_point_id: Option<Uuid>,
    pub to_receiving_point_name: Option<String>,
    pub to_label: Option<String>,
    pub truck_id: Option<Uuid>,
    pub truck_label: Option<String>,
    pub truck_license: Option<String>,
    pub truck_country: Option<String>,
    #[serde(rename = "truckCapacity_m3")]
    pub truck_capacity_m3: Option<f64>,
    pub truck_org_id: Option<Uuid>,
    pub truck_org_name: Option<String>,
    pub driver_id: Option<Uuid>,
    pub driver_label: Option<String>,
    pub created_by_id: Option<Uuid>,
    pub created_by_label: Option<String>,
    pub origin_contact_label: Option<String>,
    pub receiving_contact_label: Option<String>,
    #[serde(rename = "volume_m3")]
    pub volume_m3: Option<f64>,
    pub status: SurplusStatus,
    pub previous_status: Option<SurplusStatus>,
    pub additive: bool,
    pub additive_billed_to: Option<String>,
    pub material_grade: Option<String>,
    pub manufacturer: Option<String>,
    pub description: Option<String>,
    pub created_at: Option<Timestamp>,
    pub updated_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
    pub delivered_by_id: Option<Uuid>,
    pub delivered_by_label: Option<String>,
    pub waybill: Option<Waybill>,
    pub field_capture: Option<FieldCapture>,
    pub admin_url: Option<String>,
}

/// "First Last" of whichever names are known; None when neither is.
fn label(first: Option<&str>, last: Option<&str>) -> Option<String> {
    let name = [first, last]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!name.is_empty()).then_some(name)
}

/// The payload of load delivery `delivery`, or None when its load is gone
/// (archived).
pub async fn build(
    store: &Store,
    links: &shared::links::LinkSigner,
    admin_url_template: Option<&str>,
    delivery: &DeliveryRecord,
) -> ApiResult<Option<Envelope<SurplusDelivered>>> {
    let surpluses = store.surpluses();
    let Some(surplus) = delivery.surplus_id else {
        return Ok(None);
    };
    let found = store
        .records::<SurplusRecord>()
        .get(delivery.org_id, surplus)
        .await?;
    let Some(load) = found.filter(|load| load.archived_at.is_none()) else {
        return Ok(None);
    };
    let people_org = load.truck_org_id.unwrap_or(load.org_id);
    let (org, site, point, truck, truck_org, driver, log) = futures::try_join!(
        async { store.orgs().get(load.org_id).await },
        async { store.sites().get(load.org_id, load.site_id).await },
        async {
            match (load.to_org_id, load.to_receiving_point_id) {
                (Some(org), Some(id)) => store.receiving_points().get(org, id).await,
                _ => Ok(None),
            }
        },
        async {
            match (load.truck_org_id, load.truck_id) {
                (Some(org), Some(id)) => store.trucks().get(org, id).await,
                _ => Ok(None),
            }
        },
        async {
            match load.truck_org_id {
                Some(org) if org != load.org_id => store.orgs().get(org).await,
                _ => Ok(None),
            }
        },
        async {
            match load.driver_id {
                Some(id) => store.members().get(people_org, id).await,
                None => Ok(None),
            }
        },
        surpluses.entries(&load),
    )?;
    let waybill = match &load.waybill {
        Some(stored) => Some(links.sign(&stored.storage_path).await?),
        None => None,
    };
    let org_name = org.map(|o| o.org.name);
    let truck_org_name = match load.truck_org_id {
        Some(id) if id == load.org_id => org_name.clone(),
        _ => truck_org.map(|o| o.org.name),
    };
    let previous_status = log
        .iter()
        .rev()
        .find(|entry| entry.status_to == SurplusStatus::Delivered)
        .and_then(|entry| entry.status_from);
    let point_name = point.as_ref().map(|p| p.name.clone());
    let data = SurplusDelivered {
        surplus_id: load.id,
        org_id: load.org_id,
        org_name,
        from_site_id: load.site_id,
        from_site_name: site.as_ref().map(|s| s.name.clone()),
        from_site_address: site.as_ref().map(|s| Address {
            street: s.street_address.clone(),
            postal_code: s.postal_code.clone(),
            city: s.city.clone(),
            country_code: None,
        }),
        from_site_coordinates: site.as_ref().and_then(|s| s.coordinates),
        to_receiving_point_id: load.to_receiving_point_id,
        to_receiving_point_name: point_name.clone(),
        to_label: point_name,
        truck_id: load.truck_id,
        truck_label: truck
            .as_ref()
            .map(|t| t.name.clone().unwrap_or_else(|| t.license.clone())),
        truck_license: truck.as_ref().map(|t| t.license.clone()),
        truck_country: truck.as_ref().map(|t| t.country.as_str().to_owned()),
        truck_capacity_m3: truck.as_ref().and_then(|t| t.capacity_m3),
        truck_org_id: load.truck_org_id,
        truck_org_name,
        driver_id: load.driver_id,
        driver_label: driver
            .as_ref()
            .and_then(|d| label(d.first_name.as_deref(), d.last_name.as_deref())),
        created_by_id: None,
        created_by_label: None,
        origin_contact_label: site.as_ref().and_then(|s| {
            label(
                s.contact_first_name.as_deref(),
                s.contact_last_name.as_deref(),
            )
        }),
        receiving_contact_label: None,
        volume_m3: Some(load.volume_m3),
        status: SurplusStatus::Delivered,
        previous_status,
        additive: load.additive,
        additive_billed_to: load.additive_billed_to.map(|b| b.as_str().to_owned()),
        material_grade: load.material_grade.clone(),
        manufacturer: load.manufacturer.clone(),
        description: load.description.clone(),
        created_at: Some(load.created_at),
        updated_at: Some(load.updated_at),
        delivered_at: load.delivered_at,
        delivered_by_id: None,
        delivered_by_label: None,
        waybill: waybill.map(|link| Waybill {
            storage_path: link.storage_path,
            url: link.url,
            url_expires_at: link.url_expires_at,
        }),
        field_capture: None,
        admin_url: admin_url_template.map(|t| t.replace("{surplusId}", &load.id.to_string())),
    };
    Ok(Some(Envelope {
        id: delivery.id,
        event: delivery.event.clone(),
        timestamp: shared::model::now(),
        subject: Subject {
            kind: "surplus",
            id: load.id,
        },
        data,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_join_the_known_names() {
        assert_eq!(
            label(Some("Aino"), Some("Virtanen")).as_deref(),
            Some("Aino Virtanen")
        );
        assert_eq!(label(None, Some("Virtanen")).as_deref(), Some("Virtanen"));
        assert_eq!(label(Some(" "), None), None);
    }
}
