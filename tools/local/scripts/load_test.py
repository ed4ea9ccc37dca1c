"""A bounded load test against a running dev server (`make load`, and the
last part of `make bench`).

CONNECTIONS keep-alive connections for SECONDS, spread over the given keys
(one organization each: with fewer keys than connections, connections
share a key; with more, each connection takes turns among its own), each
connection a mix of creates (POST a site), reads (GET one of its key's
sites) and list pages (GET /api/v1/sites). Then every site a create was
answered 201 for is read back with its key: a site that is not there is a
lost write. Prints one JSON line; exits 1 on any answer other than 2xx or
429, or on a lost write.

CPU time over the window, from /proc (user + system): of the server
process (SERVER_PID), which is what Lambda bills beyond waiting, of
DynamoDB Local (DYNAMODB_PID, empty when not this run's) and of this load
generator, each in milliseconds per request: on a 2-core machine the three
share the cores.

    load_test.py PORT SECONDS CONNECTIONS SERVER_PID DYNAMODB_PID KEY...
"""

import os

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


def cpu_ms(pid):
    """User and system CPU time of a process so far, in ms (None without one)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After "pid (command)": state is field 3, utime 14 and stime 15.
    ticks = int(fields[11]) + int(fields[12])
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def worker(port, keys, until, results, lock, number):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sites = {key: [] for key in keys}
    statuses = Counter()
    latencies = []
    unexpected = []
    rng = random.Random(number)
    while time.monotonic() < until:
        key = rng.choice(keys)
        mine = sites[key]
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
        for key, mine in sites.items():
            results.append((key, mine, Counter(), [], []))
        results.append((None, [], statuses, latencies, unexpected))


def main():
    port, seconds, connections = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    server_pid, dynamodb_pid = sys.argv[4], sys.argv[5]
    keys = sys.argv[6:]
    results, lock = [], threading.Lock()
    until = time.monotonic() + seconds
    # Connection n takes keys n, n + CONNECTIONS, ... (or shares key n mod
    # the number of keys when there are fewer keys than connections).
    own = [keys[n::connections] or [keys[n % len(keys)]] for n in range(connections)]
    threads = [
        threading.Thread(target=worker, args=(port, own[n], until, results, lock, n))
        for n in range(connections)
    ]
    cpu_before = [cpu_ms(pid) for pid in (server_pid, dynamodb_pid, os.getpid())]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    cpu_after = [cpu_ms(pid) for pid in (server_pid, dynamodb_pid, os.getpid())]

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
    requests = sum(statuses.values())
    per_request = lambda before, after: (
        round((after - before) / requests, 3) if before is not None and after is not None and requests else None)
    cpu = [per_request(b, a) for b, a in zip(cpu_before, cpu_after)]
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
            "server_cpu_ms_per_request": cpu[0],
            "dynamodb_local_cpu_ms_per_request": cpu[1],
            "load_generator_cpu_ms_per_request": cpu[2],
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
