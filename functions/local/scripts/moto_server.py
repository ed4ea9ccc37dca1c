"""moto's server, serving one request at a time.

moto's own `moto_server` is threaded, but its DynamoDB TransactWriteItems
deep-copies the whole table as a rollback backup without a lock: concurrent
requests then fail with 500s, and a cancelled transaction restores the copy
over writes that other requests made meanwhile. Serving requests one at a
time makes every operation atomic, as DynamoDB's are, so the concurrency
tests (rate limit, uniqueness races) test our code, not the emulator.

moto's TransactWriteItems also deep-copies the whole table once per action
as its rollback backup, so a transaction costs time in proportion to the
table times its actions: seconds per request once a long run has written a
few thousand items. `undo_log_transactions` below keeps moto's semantics but
backs up only the items the transaction touches and puts them back when it
is cancelled.

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


def undo_log_transactions() -> None:
    """Rollback of TransactWriteItems from a backup of the touched items
    instead of copies of whole tables (requests are served one at a time, so
    nothing else changes the table meanwhile)."""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class NoTableCopies:
        """`copy` as moto's models module sees it: tables are not copied."""

        @staticmethod
        def deepcopy(value, memo=None):
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    models.copy = NoTableCopies
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        backup = []
        for action in transact_items:
            _, op = next(iter(action.items()))
            try:
                table = self.get_table(op["TableName"])
                key = op.get("Key") or {
                    name: op["Item"][name]
                    for name in (table.hash_key_attr, table.range_key_attr)
                    if name
                }
                before = self.get_item(op["TableName"], key)
            except Exception:  # moto reports a bad action itself
                continue
            backup.append((op["TableName"], key, copy.deepcopy(before)))
        try:
            original(self, transact_items)
        except Exception:
            for table_name, key, before in reversed(backup):
                if before is None:
                    if self.get_item(table_name, key) is not None:
                        self.delete_item(table_name, key)
                else:
                    self.put_item(table_name, before.to_json()["Attributes"])
            raise

    models.DynamoDBBackend.transact_write_items = transact_write_items


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
    undo_log_transactions()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=False, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
