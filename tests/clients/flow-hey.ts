// One integration flow through the SDK @hey-api/openapi-ts generates from
// the served description (docs/generating-a-client.md).
// Usage: node build/flow-hey.js BASE_URL API_KEY. Prints one JSON line
// {client, checks, failed, failures}; exits 1 when a check failed.
import { client } from "./hey/client.gen";
import {
  createReceivingPoint,
  createSite,
  createSurplus,
  createWebhook,
  getReportSummary,
  getSurplus,
  listSurpluses,
  listWebhookDeliveries,
  updateSurplus,
  uploadWaybill,
} from "./hey/sdk.gen";
import type { ErrorCode } from "./hey/types.gen";

const [base, key] = process.argv.slice(2);
client.setConfig({ baseUrl: base, auth: () => key });
// A 1x1 PNG: the waybill.
const png = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f3e0e50000000049454e44ae426082",
  "hex",
);

let checks = 0;
const failures: string[] = [];
function check(name: string, ok: boolean, detail = ""): boolean {
  checks += 1;
  if (!ok) failures.push(`${name}: ${detail}`);
  return ok;
}
function need<T>(name: string, value: T | undefined | null, response?: Response): T {
  if (value === undefined || value === null) {
    check(name, false, `no such field in the answer (HTTP ${response?.status})`);
    throw new Error(`${name}: the answer lacks what the description promises`);
  }
  check(name, true);
  return value;
}

async function flow(): Promise<void> {
  const site = await createSite({ body: { name: "Client flow yard" } });
  const siteId = need("create a site", site.data?.data.id, site.response);
  const point = await createReceivingPoint({ body: { site_id: siteId, name: "Client flow gate" } });
  const pointId = need("create a receiving point", point.data?.data.id, point.response);
  const loads: string[] = [];
  for (const volume of [4.5, 2.25]) {
    const load = await createSurplus({ body: { site_id: siteId, volume_m3: volume, to_receiving_point_id: pointId } });
    loads.push(need("create a load", load.data?.data.id, load.response));
    check("the load is new", load.data?.data.status === "new", String(load.data?.data.status));
  }
  const uploaded = await uploadWaybill({
    path: { surplusId: loads[0] },
    body: { file: new Blob([png], { type: "image/png" }) },
  });
  need("upload the waybill", uploaded.data?.data.waybill, uploaded.response);
  const delivered = await updateSurplus({ path: { surplusId: loads[0] }, body: { status: "delivered" } });
  check("deliver the load", delivered.data?.data.status === "delivered", String(delivered.data?.data.status));

  const first = await listSurpluses({ query: { site_id: siteId, limit: 1 } });
  const cursor = need("page the loads", first.data?.meta.next_cursor, first.response);
  const second = await listSurpluses({ query: { site_id: siteId, limit: 1, cursor } });
  const seen = [...(first.data?.data ?? []), ...(second.data?.data ?? [])].map((row) => row.id).sort();
  check("two pages, both loads", JSON.stringify(seen) === JSON.stringify([...loads].sort()), JSON.stringify(seen));

  const summary = await getReportSummary();
  const count = need("read the summary", summary.data?.data.loads_count, summary.response);
  check("the summary counts delivered loads", count >= 1, String(count));

  const hook = await createWebhook({
    body: { event: "surplus.delivered", url: `https://hooks.example.com/${crypto.randomUUID()}` },
  });
  const hookId = need("register a webhook", hook.data?.data.id, hook.response);
  need("the secret is shown once, at registration", hook.data?.data.secret, hook.response);
  const deliveries = await listWebhookDeliveries({ path: { webhookId: hookId } });
  need("list its deliveries", deliveries.data?.data, deliveries.response);

  const missing = await getSurplus({ path: { surplusId: crypto.randomUUID() } });
  const notFound: ErrorCode | undefined = missing.error?.code;
  check("a 404 through the typed error", missing.response.status === 404 && notFound === "surplus_not_found", String(notFound));
  const refused = await createSite({ body: { name: " " } });
  const invalid: ErrorCode | undefined = refused.error?.code;
  check("a 422 through the typed error", refused.response.status === 422 && invalid === "validation_error", String(invalid));
}

flow()
  .catch((error: unknown) => check("the flow ran to its end", false, String(error)))
  .finally(() => {
    console.log(JSON.stringify({ client: "@hey-api/openapi-ts", checks, failed: failures.length, failures }));
    process.exit(failures.length ? 1 : 0);
  });
