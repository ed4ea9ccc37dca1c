"""moto's server for the local stack's S3, SQS and Secrets Manager
(DynamoDB is DynamoDB Local's: tools/local/scripts/engines.sh).

moto's own `moto_server` with two differences that matter when several
runs share one: it leaves the caller's session, so that a Ctrl-C meant for
one `make run` does not reach a server another run still uses, and it
stops cleanly on SIGTERM. Requests are served in threads, as moto's own
server does.

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
    # (Already a group leader when started under job control: nothing to
    # do then.)
    try:
        os.setsid()
    except OSError:
        pass
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
