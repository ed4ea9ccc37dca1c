"""A bounded load test against a running dev server (`make load`, and the
last part of `make bench`).

CONNECTIONS keep-alive connections for SECONDS, spread over the given keys
(one organization each), each connection a mix of creates (POST a site),
reads (GET one of its own sites) and list pages (GET /api/v1/sites). Then
every site a create was answered 201 for is read back with its key: a site
that is not there is a lost write. Prints one JSON line; exits 1 on any
answer other than 2xx or 429, or on a lost write.

    load_test.py PORT SECONDS CONNECTIONS KEY...
"""

import http.client
import json
import random
import sys
import threading
import time
from collections import Counter


def request(connection, key, method, path, body=None):
    payload = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    connection.request(method, path, payload, headers)
    response = connection.getresponse()
    data = response.read()
    return response.status, data


def worker(port, key, until, results, lock, number):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    mine = []
    statuses = Counter()
    latencies = []
    unexpected = []
    rng = random.Random(number)
    while time.monotonic() < until:
        roll = rng.random()
        if roll < 0.3 or not mine:
            method, path, body = "POST", "/api/v1/sites", {"name": f"Load {number}-{len(mine)}", "city": "Espoo"}
        elif roll < 0.65:
            method, path, body = "GET", f"/api/v1/sites/{rng.choice(mine)}", None
        else:
            method, path, body = "GET", "/api/v1/sites?limit=20", None
        started = time.monotonic()
        try:
            status, data = request(connection, key, method, path, body)
        except (OSError, http.client.HTTPException) as error:
            statuses["connection error"] += 1
            unexpected.append(f"{method} {path}: {error}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        latencies.append(time.monotonic() - started)
        statuses[status] += 1
        if status == 201:
            mine.append(json.loads(data)["data"]["id"])
        elif not (200 <= status < 300 or status == 429):
            unexpected.append(f"{method} {path}: {status} {data[:200]!r}")
    connection.close()
    with lock:
        results.append((key, mine, statuses, latencies, unexpected))


def main():
    port, seconds, connections = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    keys = sys.argv[4:]
    results, lock = [], threading.Lock()
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=worker, args=(port, keys[n % len(keys)], until, results, lock, n))
        for n in range(connections)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started

    statuses, latencies, unexpected, created = Counter(), [], [], 0
    lost = []
    # Every acknowledged create is read back with its own key (after the
    # window has passed, 429s are waited out).
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for key, mine, counts, times, errors in results:
        statuses.update(counts)
        latencies.extend(times)
        unexpected.extend(errors)
        created += len(mine)
        for site in mine:
            for _ in range(30):
                status, _ = request(connection, key, "GET", f"/api/v1/sites/{site}")
                if status != 429:
                    break
                time.sleep(2)
            if status != 200:
                lost.append(f"{site}: {status}")
    latencies.sort()
    pick = lambda p: round(latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000, 1) if latencies else None
    summary = {
        "load_test": {
            "seconds": round(elapsed, 1),
            "connections": connections,
            "keys": len(keys),
            "requests": sum(statuses.values()),
            "requests_per_s": round(sum(statuses.values()) / elapsed, 1),
            "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
            "p50_ms": pick(0.5),
            "p99_ms": pick(0.99),
            "created": created,
            "lost_writes": len(lost),
            "unexpected": len(unexpected),
        }
    }
    print(json.dumps(summary))
    for line in (unexpected + lost)[:20]:
        print(f"  {line}")
    sys.exit(1 if unexpected or lost else 0)


if __name__ == "__main__":
    main()
