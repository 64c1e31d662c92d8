#!/usr/bin/env python3
"""A private bucket in front of s3rver, for the remote shard tests: s3rver (the suite's S3 store)
checks no SigV4 signature, so an anonymous read or a wrong secret reads its objects and no test
could show that our signer (trainer/data/s3_sign.cpp) is right. This proxy checks each request's
AWS Signature Version 4 Authorization header the way S3 does, computed independently with
botocore (Debian's python3-botocore), and relays only the requests it accepts:

    s3_auth_proxy.py --upstream http://127.0.0.1:PORT --port-file FILE
                     --access-key KEY --secret-key SECRET [--region us-east-1]

GET and HEAD (reads, Range requests: a 206 with its Content-Range comes back as it is) and PUT
(uploads, the body streamed on with its Content-Length) are checked, then relayed to --upstream
with their path, query and headers; the upstream's status, headers and body are streamed back.
Refused with S3's XML error body: no Authorization header (403 AccessDenied), another access key
(403 InvalidAccessKeyId), a signature that is not the one computed (403 SignatureDoesNotMatch,
also for another region or service in the credential scope), a request time more than 15 minutes
off (403 RequestTimeTooSkewed), a malformed header (400). Other methods: 405.

Listens on 127.0.0.1 on a free port, written to FILE (atomically) once it accepts connections.
Quiet on success; one stderr line a refused request. Stops on SIGTERM.
"""

import argparse
import datetime
import email.utils
import hashlib
import hmac
import http.client
import http.server
import os
import re
import signal
import sys
import tempfile
import threading
import urllib.parse
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SIGV4_TIMESTAMP
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

CHUNK = 64 * 1024
# S3 refuses a request signed more than 15 minutes from its clock.
MAX_SKEW = datetime.timedelta(minutes=15)
# A refused upload's body up to this size is read and dropped, so that a client that sent it
# without "Expect: 100-continue" reads the 403 rather than a reset connection.
DRAIN_LIMIT = 16 << 20
# Uploads whose x-amz-content-sha256 is a hash are held (in memory, then a temporary file) until
# the hash is checked, so that an upload that does not match it never reaches the store.
SPOOL_MEMORY = 8 << 20
# Connection-level headers: they belong to one hop and are not relayed (RFC 9110 section 7.6.1).
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "transfer-encoding", "upgrade", "expect"}
HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class Refusal(Exception):
    """A request answered with S3's error: HTTP status, S3 error code, message, extra elements."""

    def __init__(self, status, code, message, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


class Verifier(S3SigV4Auth):
    """botocore's S3 SigV4 computation, given exactly the headers the client signed.

    botocore leaves out a few headers it never signs itself (User-Agent, Expect...); a client may
    sign them, and S3 then checks them, so every header the request hands over is signed here.
    The rest is S3SigV4Auth's: the path as sent (S3 does not normalise it), the query re-encoded
    and sorted, header values trimmed, and x-amz-content-sha256 as the payload's hash.
    """

    def headers_to_sign(self, request):
        signed = HTTPHeaders()
        for name, value in request.headers.items():
            signed[name.lower()] = value
        return signed


def parse_authorization(value):
    """Credential, SignedHeaders and Signature from an "AWS4-HMAC-SHA256 ..." header."""
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != "AWS4-HMAC-SHA256":
        raise Refusal(400, "AuthorizationHeaderMalformed",
                      f"the authorization algorithm {algorithm!r} is not supported; "
                      "expecting AWS4-HMAC-SHA256")
    parts = {}
    for item in rest.split(","):
        key, eq, val = item.strip().partition("=")
        if not eq or key in parts:
            raise Refusal(400, "AuthorizationHeaderMalformed",
                          f"the authorization header is malformed near {item.strip()!r}")
        parts[key] = val.strip()
    if set(parts) != {"Credential", "SignedHeaders", "Signature"}:
        raise Refusal(400, "AuthorizationHeaderMalformed",
                      "the authorization header needs Credential, SignedHeaders and Signature")
    credential = parts["Credential"].split("/")
    if len(credential) != 5:
        raise Refusal(400, "AuthorizationHeaderMalformed",
                      "the Credential is not key/date/region/service/aws4_request")
    return credential, parts["SignedHeaders"].split(";"), parts["Signature"]


def request_time(headers):
    """The signed time: x-amz-date (20240131T120000Z), or else the Date header."""
    stamp = headers.get("x-amz-date")
    try:
        if stamp is not None:
            return datetime.datetime.strptime(stamp.strip(), SIGV4_TIMESTAMP).replace(
                tzinfo=datetime.timezone.utc)
        if headers.get("date") is not None:
            return email.utils.parsedate_to_datetime(headers["date"]).astimezone(
                datetime.timezone.utc)
    except (ValueError, TypeError):
        pass
    raise Refusal(403, "AccessDenied",
                  "AWS authentication requires a valid Date or x-amz-date header")


def verify(opts, method, target, headers):
    """Returns if the request is signed with the proxy's key; raises Refusal otherwise."""
    authorization = headers.get("authorization")
    if authorization is None:
        # Presigned URLs (X-Amz-Signature in the query) are not supported: anonymous to us.
        raise Refusal(403, "AccessDenied", "Access Denied (the bucket is private: the request "
                      "has no Authorization header)")
    credential, signed_names, signature = parse_authorization(authorization)
    key, date, region, service, terminator = credential
    if key != opts.access_key:
        raise Refusal(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                      "exist in our records.", AWSAccessKeyId=key)
    when = request_time(headers)
    now = datetime.datetime.now(datetime.timezone.utc)
    if abs(now - when) > MAX_SKEW:
        raise Refusal(403, "RequestTimeTooSkewed", "The difference between the request time and "
                      "the current time is too large.", RequestTime=when.strftime(SIGV4_TIMESTAMP),
                      ServerTime=now.strftime(SIGV4_TIMESTAMP))
    timestamp = when.strftime(SIGV4_TIMESTAMP)
    # S3 answers a wrong region 400 AuthorizationHeaderMalformed; 403 here, as a signature made
    # for another scope is one this bucket cannot accept (and the reader reports a 403 as such).
    if (date, region, service, terminator) != (timestamp[:8], opts.region, "s3", "aws4_request"):
        raise Refusal(403, "SignatureDoesNotMatch",
                      f"the credential scope {date}/{region}/{service}/{terminator} is not "
                      f"{timestamp[:8]}/{opts.region}/s3/aws4_request")
    signed = set(signed_names)
    if "host" not in signed or signed_names != sorted(signed) or "" in signed:
        raise Refusal(403, "AccessDenied", "SignedHeaders must be sorted, name each header once "
                      "and include host")
    # S3 also requires every x-amz-* header sent to be signed: an unsigned one could be changed
    # on the way without the signature showing it.
    unsigned = sorted({n.lower() for n in headers.keys() if n.lower().startswith("x-amz-")}
                      - signed)
    if unsigned:
        raise Refusal(403, "AccessDenied", "There were headers present in the request which were "
                      "not signed", HeadersNotSigned=", ".join(unsigned))
    payload = headers.get("x-amz-content-sha256")
    if payload is None:
        raise Refusal(400, "InvalidRequest",
                      "Missing required header for this request: x-amz-content-sha256")
    if payload != "UNSIGNED-PAYLOAD" and not HEX64.fullmatch(payload):
        # Chunk-signed uploads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) would need each chunk's
        # signature checked; nothing in the suite sends them.
        raise Refusal(400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or "
                      "the payload's SHA-256 here", ArgumentValue=payload)
    if headers.get("x-amz-security-token") is not None:
        raise Refusal(403, "InvalidToken", "this bucket knows no temporary credentials")
    for name in signed:
        if headers.get(name) is None:
            raise Refusal(403, "SignatureDoesNotMatch", f"the signed header {name} is missing")

    # The request as botocore sees one: method, the path as sent (not re-encoded: S3 signs it as
    # it was sent), the query decoded for botocore to encode and sort, and only the signed
    # headers, each repeated value in order. Split by hand: urlsplit would read a path that
    # starts with "//" as a host.
    path, _, raw_query = target.partition("?")
    query = []
    if raw_query:
        for pair in raw_query.split("&"):
            k, _, v = pair.partition("=")
            query.append((urllib.parse.unquote(k), urllib.parse.unquote(v)))
    # The URL's host is a placeholder: the Host header signed (required above) is what counts,
    # and a strange one cannot then move the path that botocore splits from the URL.
    request = AWSRequest(method=method, url=f"http://proxy.invalid{path or '/'}", params=query)
    for name in signed_names:
        for value in headers.get_all(name) or []:
            request.headers[name] = value
    request.context["timestamp"] = timestamp
    verifier = Verifier(Credentials(opts.access_key, opts.secret_key), "s3", opts.region)
    canonical = verifier.canonical_request(request)
    string_to_sign = verifier.string_to_sign(request, canonical)
    expected = verifier.signature(string_to_sign, request)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        raise Refusal(403, "SignatureDoesNotMatch", "The request signature we calculated does not "
                      "match the signature you provided. Check your key and signing method.",
                      AWSAccessKeyId=key, StringToSign=string_to_sign,
                      CanonicalRequest=canonical)


def make_handler(opts):
    upstream = urllib.parse.urlsplit(opts.upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass  # quiet: refusals get their own line

        def handle_expect_100(self):
            # "100 Continue" only once the upload is accepted (in _put), so that a refused
            # client does not send its body at all.
            return True

        def _refuse(self, refusal):
            sys.stderr.write(f"s3_auth_proxy: {refusal.status} {refusal.code}: {self.command} "
                             f"{self.path}: {refusal.message}\n")
            sys.stderr.flush()
            extra = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in refusal.extra.items())
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>'
                    f"{refusal.code}</Code><Message>{escape(refusal.message)}</Message>{extra}"
                    f"<Resource>{escape(self.path.partition('?')[0])}</Resource>"
                    "<RequestId>s3-auth-proxy</RequestId></Error>").encode()
            self._skip_body()
            self.send_response(refusal.status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _skip_body(self):
            """Drops a refused request's body, or closes the connection after the answer."""
            if getattr(self, "_body_read", False):
                return
            self._body_read = True
            if self.headers.get("Transfer-Encoding") is not None:
                self.close_connection = True
                return
            length = self._length()
            expecting = self.headers.get("Expect", "").lower() == "100-continue"
            if length is None or length > DRAIN_LIMIT or expecting:
                self.close_connection = length != 0
                return
            while length > 0:
                got = self.rfile.read(min(CHUNK, length))
                if not got:
                    self.close_connection = True
                    return
                length -= len(got)

        def _length(self):
            value = self.headers.get("Content-Length")
            if value is None:
                return 0 if self.command != "PUT" else None
            return int(value) if value.isdigit() else None

        def _upstream_headers(self):
            return [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]

        def _body_source(self, length):
            """The upload's body, checked against x-amz-content-sha256 where that is a hash:
            a file-like object to stream on."""
            payload = self.headers["x-amz-content-sha256"]
            if self.headers.get("Expect", "").lower() == "100-continue":
                self.send_response_only(100)
                self.end_headers()
            self._body_read = True
            if payload == "UNSIGNED-PAYLOAD":
                return self.rfile
            spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)
            digest = hashlib.sha256()
            left = length
            while left > 0:
                got = self.rfile.read(min(CHUNK, left))
                if not got:
                    self.close_connection = True
                    raise ConnectionError("the client closed the upload early")
                digest.update(got)
                spool.write(got)
                left -= len(got)
            if digest.hexdigest() != payload.lower():
                raise Refusal(400, "XAmzContentSHA256Mismatch", "The provided "
                              "'x-amz-content-sha256' header does not match what was computed.",
                              ClientComputedContentSHA256=payload,
                              S3ComputedContentSHA256=digest.hexdigest())
            spool.seek(0)
            return spool

        def _relay(self, length=0, body=None):
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port or 80, timeout=60)
            try:
                try:
                    # The Host header as the client sent it (and signed it), so that the store
                    # reads path-style and virtual-host requests as it would directly.
                    conn.putrequest(self.command, self.path, skip_host=True,
                                    skip_accept_encoding=True)
                    for k, v in self._upstream_headers():
                        conn.putheader(k, v)
                    conn.endheaders()
                    left = length
                    while left > 0:
                        chunk = body.read(min(CHUNK, left))
                        if not chunk:
                            # A short upload must not become a short object upstream.
                            self.close_connection = True
                            return
                        conn.send(chunk)
                        left -= len(chunk)
                    answer = conn.getresponse()
                except OSError as error:
                    raise Refusal(502, "BadGateway", f"{opts.upstream}: {error}")
                self._answer(answer)
            finally:
                conn.close()

        def _answer(self, answer):
            """The upstream's answer, streamed back as it comes."""
            length = answer.getheader("Content-Length")
            no_body = self.command == "HEAD" or answer.status in (204, 304)
            # Without a length (chunked, or until the upstream closes) the body is read first:
            # only the store's small XML answers come that way.
            data = None
            if length is None and not no_body:
                data = answer.read()
                length = str(len(data))
            self.send_response(answer.status)
            for k, v in answer.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() not in ("content-length", "date",
                                                                       "server"):
                    self.send_header(k, v)
            if length is not None:
                self.send_header("Content-Length", length)
            self.end_headers()
            if no_body:
                return
            if data is not None:
                self.wfile.write(data)
                return
            left = int(length)
            while left > 0:
                chunk = answer.read(min(CHUNK, left))
                if not chunk:
                    # The upstream dropped the body: drop ours too, so the client sees it.
                    self.close_connection = True
                    return
                self.wfile.write(chunk)
                left -= len(chunk)

        def _handle(self):
            self._body_read = False
            try:
                verify(opts, self.command, self.path, self.headers)
                if self.command == "PUT":
                    length = self._length()
                    if length is None or self.headers.get("Transfer-Encoding") is not None:
                        raise Refusal(411, "MissingContentLength",
                                      "You must provide the Content-Length HTTP header.")
                    self._relay(length, self._body_source(length))
                else:
                    if self._length():
                        self._skip_body()  # a GET's body means nothing to the store
                    self._relay()
            except Refusal as refusal:
                self._refuse(refusal)
            except (ConnectionError, TimeoutError):
                self.close_connection = True

        def _not_allowed(self):
            self._refuse(Refusal(405, "MethodNotAllowed",
                                 "The specified method is not allowed against this resource."))

        do_GET = do_HEAD = do_PUT = _handle
        do_POST = do_DELETE = do_OPTIONS = do_PATCH = _not_allowed

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # a few loader workers and ranks connect at once


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the store, http://HOST:PORT")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--access-key", required=True)
    parser.add_argument("--secret-key", required=True)
    parser.add_argument("--region", default="us-east-1")
    opts = parser.parse_args()
    server = Server(("127.0.0.1", 0), make_handler(opts))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    # Written once listening (the constructor binds and listens), renamed so that a reader never
    # sees half a number.
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, opts.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
