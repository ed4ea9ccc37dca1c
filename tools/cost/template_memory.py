"""What `make cost` reads from infra/template.yaml: each function's memory,
the function behind each route of the API, the one the webhook queue
triggers, and the API's access log format."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "infra/checks"))
import check_template  # noqa: E402


@dataclass
class Memory:
    by_function: dict[str, int]
    by_route: dict[tuple[str, str], str]  # (METHOD, path) -> function
    queue_function: str
    access_log_format: str
    # The stage throttle's defaults (ApiThrottlingRateLimit, ...BurstLimit).
    throttle: tuple[float, float] = (0.0, 0.0)
    # Lambda's own lines (PlatformLogLevel's default: WARN leaves out the
    # start and report lines of each invocation).
    platform_log_level: str = "INFO"

    def of(self, line: dict) -> tuple[str, int]:
        """The function that wrote a log line, and its memory (MB)."""
        if line.get("message") == "queue message handled":
            return self.queue_function, self.by_function[self.queue_function]
        # The request line's Route: `GET /api/v1/sites/{siteId}`.
        method, _, route = str(line.get("Route", "")).partition(" ")
        function = self.by_route.get((method, route))
        if function is None:
            function = self.by_route.get(("ANY", route))
        if function is None:
            # A route the template does not name: priced at the most any
            # function has.
            return "(unrouted)", max(self.by_function.values())
        return function, self.by_function[function]


def read(path: Path) -> Memory:
    template = check_template.cfn_yaml.load(str(path))
    default = ((template.get("Globals") or {}).get("Function") or {}).get("MemorySize", 128)
    functions = check_template.functions(template)
    by_function = {fid: int((r.get("Properties") or {}).get("MemorySize", default))
                   for fid, r in functions.items()}
    routes, _ = check_template.http_routes(template)
    by_route = {(r.method, r.path): r.function for r in routes if r.api == check_template.API}
    # The function an event source mapping (the webhook queue's) triggers.
    queue_function = next(
        check_template.ref(r["Properties"]["FunctionName"])
        for r in template["Resources"].values()
        if isinstance(r, dict) and r.get("Type") == "AWS::Lambda::EventSourceMapping"
    )
    api = template["Resources"][check_template.API]["Properties"]
    fmt = api["AccessLogSettings"]["Format"]
    parameters = template.get("Parameters") or {}
    throttle = (float(parameters["ApiThrottlingRateLimit"]["Default"]),
                float(parameters["ApiThrottlingBurstLimit"]["Default"]))
    level = str((parameters.get("PlatformLogLevel") or {}).get("Default", "INFO"))
    return Memory(by_function, by_route, queue_function, str(fmt), throttle, level)
