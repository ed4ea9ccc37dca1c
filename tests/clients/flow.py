"""One integration flow through the client openapi-python-client generates
from the served description (docs/generating-a-client.md).

Usage: python flow.py CLIENT_DIR BASE_URL API_KEY
CLIENT_DIR holds the generated package `api_client`. Prints one JSON line:
{"client", "checks", "failed", "failures"}; exits 1 when a check failed.
"""

import json
import sys
import uuid

sys.path.insert(0, sys.argv[1])

from api_client import AuthenticatedClient  # noqa: E402
from api_client.api.receiving_points import create_receiving_point  # noqa: E402
from api_client.api.reports_and_billing import get_report_summary  # noqa: E402
from api_client.api.sites import create_site  # noqa: E402
from api_client.api.surplus_loads import create_surplus, get_surplus, list_surpluses, update_surplus, upload_waybill  # noqa: E402
from api_client.api.webhooks import create_webhook, list_webhook_deliveries  # noqa: E402
from api_client.models import (  # noqa: E402
    CreateReceivingPoint,
    CreateSite,
    CreateSurplus,
    CreateWebhook,
    CreatedWebhookData,
    CreateWebhookEvent,
    DeliveryAttemptPage,
    Error,
    ErrorCode,
    ReceivingPointData,
    ReportSummaryData,
    SiteData,
    SurplusData,
    SurplusPage,
    SurplusStatus,
    UpdateSurplus,
    UploadWaybill,
)
from api_client.types import File  # noqa: E402

# A 1x1 PNG: the waybill.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f3e0e5"
    "0000000049454e44ae426082"
)

checks, failures = 0, []


def check(name, ok, detail=""):
    global checks
    checks += 1
    if not ok:
        failures.append(f"{name}: {detail}")
    return ok


def parsed(name, response, kind):
    """The typed answer of `response`, or None (a failed check) when it is
    not `kind`: the server answered something the description does not
    say, or the client could not read it."""
    ok = isinstance(response.parsed, kind)
    check(name, ok, f"HTTP {response.status_code}: {response.content[:300]!r}")
    return response.parsed if ok else None


def main():
    base, key = sys.argv[2], sys.argv[3]
    client = AuthenticatedClient(base_url=base, token=key, raise_on_unexpected_status=True)
    try:
        flow(client)
    except Exception as error:  # a client that cannot read an answer
        check("the flow ran to its end", False, f"{type(error).__name__}: {error}")
    # The name in the results: "python-baseline" when the client was
    # generated from the released baseline (tests/clients/run.sh).
    name = sys.argv[4] if len(sys.argv) > 4 else "openapi-python-client"
    print(json.dumps({"client": name, "checks": checks, "failed": len(failures), "failures": failures}))
    sys.exit(1 if failures else 0)


def flow(client):
    site = parsed("create a site", create_site.sync_detailed(client=client, body=CreateSite(name="Client flow yard")), SiteData)
    point = parsed(
        "create a receiving point",
        create_receiving_point.sync_detailed(client=client, body=CreateReceivingPoint(site_id=site.data.id, name="Client flow gate")),
        ReceivingPointData,
    )
    loads = []
    for volume in (4.5, 2.25):
        body = CreateSurplus(site_id=site.data.id, volume_m3=volume, to_receiving_point_id=point.data.id)
        load = parsed("create a load", create_surplus.sync_detailed(client=client, body=body), SurplusData)
        check("the load is new", load.data.status == SurplusStatus.NEW, str(load.data.status))
        loads.append(load.data)

    waybill = UploadWaybill(file=File(payload=PNG, file_name="waybill.png", mime_type="image/png"))
    uploaded = parsed(
        "upload the waybill", upload_waybill.sync_detailed(surplus_id=loads[0].id, client=client, body=waybill), SurplusData
    )
    check("the load has its waybill", uploaded.data.waybill is not None, "no waybill")
    delivered = parsed(
        "deliver the load",
        update_surplus.sync_detailed(surplus_id=loads[0].id, client=client, body=UpdateSurplus(status=SurplusStatus.DELIVERED)),
        SurplusData,
    )
    check("the load is delivered", delivered.data.status == SurplusStatus.DELIVERED, str(delivered.data.status))

    first = parsed("page the loads", list_surpluses.sync_detailed(client=client, site_id=site.data.id, limit=1), SurplusPage)
    cursor = first.meta.next_cursor
    check("a full page has a cursor", isinstance(cursor, str), repr(cursor))
    second = parsed(
        "the next page", list_surpluses.sync_detailed(client=client, site_id=site.data.id, limit=1, cursor=cursor), SurplusPage
    )
    seen = {row.id for row in first.data + second.data}
    check("two pages, both loads", seen == {load.id for load in loads}, str(seen))

    summary = parsed("read the summary", get_report_summary.sync_detailed(client=client), ReportSummaryData)
    check("the summary counts delivered loads", summary.data.loads_count >= 1, str(summary.data.loads_count))

    hook = parsed(
        "register a webhook",
        create_webhook.sync_detailed(
            client=client,
            body=CreateWebhook(event=CreateWebhookEvent.SURPLUS_DELIVERED, url=f"https://hooks.example.com/{uuid.uuid4()}"),
        ),
        CreatedWebhookData,
    )
    check("the secret is shown once, at registration", bool(hook.data.secret), "no secret")
    parsed(
        "list its deliveries",
        list_webhook_deliveries.sync_detailed(webhook_id=hook.data.id, client=client),
        DeliveryAttemptPage,
    )

    missing = parsed("a 404 through the typed error", get_surplus.sync_detailed(surplus_id=uuid.uuid4(), client=client), Error)
    check("404 surplus_not_found", missing.code == ErrorCode.SURPLUS_NOT_FOUND, str(missing.code))
    refused = parsed("a 422 through the typed error", create_site.sync_detailed(client=client, body=CreateSite(name=" ")), Error)
    check("422 validation_error", refused.code == ErrorCode.VALIDATION_ERROR, str(refused.code))


if __name__ == "__main__":
    main()
