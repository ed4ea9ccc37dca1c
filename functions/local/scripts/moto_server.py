"""moto's server, serving one request at a time.

moto's own `moto_server` is threaded, but its DynamoDB TransactWriteItems
deep-copies the whole table as a rollback backup without a lock: concurrent
requests then fail with 500s, and a cancelled transaction restores the copy
over writes that other requests made meanwhile. Serving requests one at a
time makes every operation atomic, as DynamoDB's are, so the concurrency
tests (rate limit, uniqueness races) test our code, not the emulator.

Usage: python moto_server.py HOST PORT
"""

import os
import signal
import sys

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    # A session of its own, so that a Ctrl-C meant for one `make run` does
    # not reach an emulator that another run still uses. (Already a group
    # leader when started under job control: nothing to do then.)
    try:
        os.setsid()
    except OSError:
        pass
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=False, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
