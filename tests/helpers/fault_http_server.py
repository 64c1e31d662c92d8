#!/usr/bin/env python3
"""An HTTP server with faults on request, for the remote shard tests and the bench: it serves a
folder (--root, with Range requests as object stores answer them) or relays to another server
(--upstream: an S3-compatible store, its requests and answers passed through unchanged). The
first path segment may name a fault, which is then stripped from the path:

    /drop/...    the first GET of each path sends half the body, then drops the connection
    /slow/...    bodies go out 16 KiB at a time, 10 ms apart
    /burst/...   the first 3 requests of each path are answered 503
    /down/...    every request is answered 503
    /deny/...    every request is answered 403

    fault_http_server.py (--root DIR | --upstream URL) --port-file FILE

Listens on 127.0.0.1 on a free port, which it writes to FILE once it accepts connections; logs
one line a request on stderr. Stops on SIGTERM.
"""

import argparse
import http.client
import http.server
import os
import re
import signal
import sys
import threading
import time
import urllib.parse

FAULTS = ("drop", "slow", "burst", "down", "deny")
CHUNK = 16 * 1024


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}  # (fault, path) -> requests so far

    def count(self, fault, path):
        with self.lock:
            n = self.seen.get((fault, path), 0)
            self.seen[(fault, path)] = n + 1
            return n


def make_handler(opts, state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("fault_http_server: " + (fmt % args) + "\n")

        def _split(self):
            parts = self.path.split("/", 2)
            if len(parts) >= 2 and parts[1] in FAULTS:
                return parts[1], "/" + (parts[2] if len(parts) > 2 else "")
            return "", self.path

        def _status(self, code):
            body = f"<Error><Code>{code}</Code></Error>".encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self, fault, path, data):
            if fault == "drop" and self.command == "GET" and state.count("dropbody", path) == 0:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            for i in range(0, len(data), CHUNK):
                self.wfile.write(data[i:i + CHUNK])
                if fault == "slow":
                    self.wfile.flush()
                    time.sleep(0.01)

        def _serve_file(self, fault, path):
            rel = urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/")
            full = os.path.realpath(os.path.join(opts.root, rel))
            if not full.startswith(os.path.realpath(opts.root) + os.sep) or not os.path.isfile(full):
                return self._status(404)
            with open(full, "rb") as f:
                data = f.read()
            start, code = 0, 200
            m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
            if m:
                start, code = int(m.group(1)), 206
                if start >= len(data):
                    return self._status(416)
            self.send_response(code)
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            if code == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if self.command == "GET":
                self._body(fault, path, data[start:])

        def _relay(self, fault, path):
            up = urllib.parse.urlsplit(opts.upstream)
            length = int(self.headers.get("Content-Length", "0") or 0)
            payload = self.rfile.read(length) if length else None
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
            headers = {k: v for k, v in self.headers.items()}
            conn.request(self.command, path, body=payload, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for k, v in answer.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self._body(fault if answer.status in (200, 206) else "", path, data)
            conn.close()

        def _handle(self):
            fault, path = self._split()
            if fault == "deny":
                return self._status(403)
            if fault == "down" or (fault == "burst" and state.count("burst", path) < 3):
                return self._status(503)
            if opts.upstream:
                return self._relay(fault, path)
            return self._serve_file(fault, path)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--root")
    where.add_argument("--upstream")
    parser.add_argument("--port-file", required=True)
    opts = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(opts, State()))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, opts.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
