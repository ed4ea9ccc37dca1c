"""smoke.py's calls against a server that drops or leaves unanswered what
cargo lambda watch once did: sent once more, then a failed check with the
error, never a traceback. Run by `make lint`."""

import http.server
import socket
import threading
import unittest
from unittest import mock

import smoke


class Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 200 `{}`, except the first `drops` requests, whose
    connection it closes without a word, and every request when `hangs`."""

    drops = 0
    hangs = False
    seen = 0

    def do_GET(self):
        type(self).seen += 1
        if self.hangs:
            threading.Event().wait(2)
            return
        if type(self).seen <= self.drops:
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


class NoContract:
    def problems(self, *_):
        return []


class Calls(unittest.TestCase):
    def serve(self, drops=0, hangs=False):
        handler = type("Handler", (Flaky,), {"drops": drops, "hangs": hangs, "seen": 0})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return smoke.Smoke(f"http://127.0.0.1:{server.server_port}", "key", NoContract()), handler

    def test_a_dropped_request_is_sent_once_more_and_counted_as_retried(self):
        client, handler = self.serve(drops=1)
        with mock.patch("smoke.time.sleep"):
            client.route("docs", "GET", "/openapi.yaml", "/openapi.yaml", expect=200)
        self.assertEqual(handler.seen, 2)
        [result] = client.results
        self.assertTrue(result["ok"], result)
        self.assertTrue(result["retried"], result)

    def test_a_request_dropped_twice_is_a_failed_check_not_a_traceback(self):
        client, handler = self.serve(drops=2)
        with mock.patch("smoke.time.sleep"):
            answer = client.route("docs", "GET", "/openapi.yaml", "/openapi.yaml", expect=200)
        self.assertIsNone(answer)
        self.assertEqual(handler.seen, 2)
        [result] = client.results
        self.assertFalse(result["ok"])
        self.assertIn("no answer", result["problems"][0])

    def test_a_built_function_left_unanswered_fails_after_the_answer_timeout_not_the_build_one(self):
        client, handler = self.serve(hangs=True)
        client.built.add("docs")
        with mock.patch("smoke.ANSWER_SECONDS", 0.2), mock.patch("smoke.time.sleep"):
            client.route("docs", "GET", "/openapi.yaml", "/openapi.yaml", expect=200)
        [result] = client.results
        self.assertFalse(result["ok"])
        self.assertIn("timed out", result["problems"][0])
        self.assertLess(result["seconds"], 5)


if __name__ == "__main__":
    unittest.main()
