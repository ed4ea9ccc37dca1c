"""`make cost`'s driver: runs each flow REPETITIONS times against the dev
server, one request after another on one connection, and measures from
the server's log what each flow consumed (`cost.measure`). Each flow's
setup (its site, the loads it acts on, their waybills) runs before its
measured stretch of the log.

    python3 tools/cost/drive.py PORT LOG ADMIN REPETITIONS OUT.json
"""

from __future__ import annotations

import http.client
import http.server
import json
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cost  # noqa: E402
import template_memory  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


class Api:
    """One keep-alive connection to the dev server with one key."""

    def __init__(self, port: int, key: str):
        self.port, self.key = port, key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body=None, content_type="application/json",
             headers: dict | None = None) -> dict:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        sent = {"X-Api-Key": self.key, "Content-Type": content_type, **(headers or {})}
        self.conn.request(method, path, data, sent)
        answer = self.conn.getresponse()
        text = answer.read()
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {text[:300]!r}")
        return json.loads(text) if text else {}

    def data(self, method: str, path: str, body=None, **kw) -> dict:
        return self.call(method, path, body, **kw).get("data", {})


def multipart(fields: list[tuple[str, str]], file: tuple[str, str, bytes]) -> tuple[bytes, str]:
    boundary = "cost-boundary"
    out = b""
    for name, value in fields:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                f"{value}\r\n").encode()
    name, content_type, data = file
    out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"w.png\"\r\n"
            f"Content-Type: {content_type}\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


class Receiver:
    """A webhook receiver on loopback: 204 to every delivery, counted."""

    def __init__(self):
        got = self.got = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                got.append(time.monotonic())
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


class Driver:
    def __init__(self, port: int, log: Path, admin: str, reps: int):
        self.port, self.log, self.admin, self.reps = port, log, admin, reps
        self.receiver = Receiver()

    def demo(self) -> tuple[Api, str]:
        made = json.loads(subprocess.check_output([self.admin, "demo"], stderr=subprocess.DEVNULL))
        return Api(self.port, made["api_key"]), made["org_id"]

    def loads(self, api: Api, site: str, waybill: bool) -> list[str]:
        made = []
        for _ in range(self.reps):
            load = api.data("POST", "/api/v1/surpluses", {"site_id": site, "volume_m3": 2})["id"]
            if waybill:
                body, ctype = multipart([("note", "cost")], ("file", "image/png", PNG))
                api.call("POST", f"/api/v1/surpluses/{load}/waybill", body, ctype)
            made.append(load)
        return made

    def flows(self):
        """(name, setup() -> one(i), wait(), client S3 writes per flow)."""
        reps = self.reps

        def reads():
            api, _ = self.demo()
            site = api.data("POST", "/api/v1/sites", {"name": "Cost site", "lat": 60.17, "lng": 24.94})["id"]
            api.call("GET", f"/api/v1/sites/{site}")  # the key is warm
            return api, site

        def warm_orgs():
            api, _ = reads()
            return lambda i: api.call("GET", "/api/v1/orgs")

        def warm_site():
            api, site = reads()
            return lambda i: api.call("GET", f"/api/v1/sites/{site}")

        def page_100():
            api, org = self.demo()
            site = api.data("POST", "/api/v1/sites", {"name": "Page site"})["id"]
            subprocess.run([self.admin, "seed-loads", "--org", org, "--site", site, "--count", "300"],
                           check=True, capture_output=True)
            api.call("GET", "/api/v1/surpluses?limit=100")
            return lambda i: api.call("GET", "/api/v1/surpluses?limit=100")

        def create_site():
            api, _ = reads()
            return lambda i: api.call("POST", "/api/v1/sites", {"name": f"Site {uuid.uuid4()}", "city": "Espoo"})

        def create_site_keyed():
            api, _ = reads()
            return lambda i: api.call("POST", "/api/v1/sites", {"name": f"Site {uuid.uuid4()}"},
                                      headers={"Idempotency-Key": str(uuid.uuid4())})

        def patch_site():
            api, site = reads()
            return lambda i: api.call("PATCH", f"/api/v1/sites/{site}", {"city": f"City {i}"})

        def create_load():
            api, site = reads()
            return lambda i: api.call("POST", "/api/v1/surpluses", {"site_id": site, "volume_m3": 3})

        def multipart_upload():
            api, site = reads()
            loads = self.loads(api, site, waybill=False)
            body, ctype = multipart([("note", "cost")], ("file", "image/png", PNG))
            return lambda i: api.call("POST", f"/api/v1/surpluses/{loads[i]}/waybill", body, ctype)

        def direct_upload():
            api, site = reads()
            loads = self.loads(api, site, waybill=False)

            def one(i):
                form = api.data("POST", f"/api/v1/surpluses/{loads[i]}/waybill/upload",
                                {"content_type": "image/png"})
                body, ctype = multipart(list(form["fields"].items()), ("file", "image/png", PNG))
                request = urllib.request.Request(form["url"], body, method="POST",
                                                 headers={"Content-Type": ctype})
                urllib.request.urlopen(request).read()
                api.call("POST", f"/api/v1/surpluses/{loads[i]}/waybill/confirm",
                         {"storage_path": form["storage_path"]})
            return one

        def delivery():
            api, site = reads()
            api.call("POST", "/api/v1/webhooks", {"event": "surplus.delivered", "url": self.receiver.url})
            loads = self.loads(api, site, waybill=True)
            self.expected = len(self.receiver.got) + reps
            return lambda i: api.call("PATCH", f"/api/v1/surpluses/{loads[i]}", {"status": "delivered"})

        def deliveries_received():
            deadline = time.monotonic() + 120
            while len(self.receiver.got) < self.expected and time.monotonic() < deadline:
                time.sleep(0.1)
            if len(self.receiver.got) < self.expected:
                raise RuntimeError(f"{self.expected - len(self.receiver.got)} deliveries never came")

        def nearby():
            api, org = self.demo()
            subprocess.run([self.admin, "seed-places", "--org", org, "--orgs", "100", "--count", "10000",
                            "--lat", "60.17", "--lng", "24.94", "--spread-km", "150"],
                           check=True, capture_output=True)
            path = "/api/v1/places/nearby?lat=60.17&lng=24.94"
            api.call("GET", path)
            return lambda i: api.call("GET", path)

        none = lambda: None  # noqa: E731
        return [
            ("GET /orgs (warm)", warm_orgs, none, 0),
            ("GET /sites/{id} (warm)", warm_site, none, 0),
            ("GET /surpluses?limit=100 (page)", page_100, none, 0),
            ("POST /sites", create_site, none, 0),
            ("POST /sites + Idempotency-Key", create_site_keyed, none, 0),
            ("PATCH /sites/{id}", patch_site, none, 0),
            ("POST /surpluses", create_load, none, 0),
            ("waybill multipart upload", multipart_upload, none, 0),
            ("waybill form, S3 POST, confirm", direct_upload, none, 1),
            ("load delivered + webhook", delivery, deliveries_received, 0),
            ("GET /places/nearby (10,000 places)", nearby, none, 0),
        ]

    def run(self, memory_of, round_trip_ms: float, only: str | None = None) -> list[dict]:
        measured = []
        for name, setup, wait, client_s3 in self.flows():
            if only and only not in name:
                continue
            one = setup()
            time.sleep(0.5)  # the setup's lines are out
            start = self.log.stat().st_size
            began = time.monotonic()
            for i in range(self.reps):
                one(i)
            wait()
            time.sleep(0.5)  # the flow's last lines are out
            with self.log.open("rb") as f:
                f.seek(start)
                lines = f.read().decode(errors="replace").splitlines()
            consumed = cost.measure(lines, memory_of, round_trip_ms)
            print(f"  {name}: {self.reps} in {time.monotonic() - began:.1f} s, "
                  f"{consumed.api_requests} API requests, {consumed.queue_messages} queue messages", flush=True)
            touches, seconds = consumed.touches, consumed.seconds_by_function
            consumed.touches, consumed.seconds_by_function = [], {}
            measured.append({"name": name, "repetitions": self.reps, "client_s3_writes": client_s3,
                             "consumed": consumed.__dict__, "touches": touches,
                             "seconds_by_function": seconds})
        return measured


def main(argv: list[str]) -> int:
    port, log, admin, reps, out = int(argv[0]), Path(argv[1]), argv[2], int(argv[3]), Path(argv[4])
    only = argv[5] if len(argv) > 5 else None
    prices = json.loads(cost.PRICES.read_text())
    memory = template_memory.read(cost.ROOT / "infra/template.yaml")
    flows = Driver(port, log, admin, reps).run(memory.of, cost.assumed(prices, "dynamodb_round_trip_ms"), only)
    run = {"repetitions": reps, "access_log_bytes": cost.access_log_bytes(memory.access_log_format),
           "memory_mb": memory.by_function, "throttle": memory.throttle,
           "platform_log_level": memory.platform_log_level, "flows": flows}
    out.write_text(json.dumps(run, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
