"""The Flask app and server of the judge (loopback, ephemeral port by default).

Every URL of a run carries the run's secret as its first path segment
(``http://127.0.0.1:PORT/<secret>/info``); the agent gets the URLs with it, so an agent that uses
them as given needs no change. In front of the routes, :class:`_Gate` refuses a request whose
``Host`` header is not the judge's own loopback address (403 ``forbidden_host``: DNS rebinding
from a browser) and then one without the secret (401 ``unauthorized``: any other local process,
or a policy calling home).

Every answer is JSON except ``GET /task`` (Markdown). Requests that cannot be judged get a 4xx
with ``{"status": <code>, "error": {"code", "message"}}`` (:class:`ApiError`) and cost nothing:
malformed or too deeply nested JSON, a repeated key, a missing ``env_instances`` or unknown
fields, a malformed chunked body or one framed by both ``Transfer-Encoding: chunked`` and
``Content-Length`` (400 ``bad_request``), a body that is not JSON (415), a body over
``MAX_BODY_BYTES`` (413), an ``env_instances`` of the wrong form (400 ``budget_invalid``, see
:class:`SubmitRequest`), a closed run or a judge that has stopped serving (409 ``run_closed``),
unknown paths (404), a wrong method on a known path, ``OPTIONS`` included (405, with ``Allow``),
and ``/finalize`` (405: finalization is the judge's). A client that hangs up while its submit waits
for the lock is not charged; one that only half-closes its connection is judged.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
import select
import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from flask import Flask, Response, request
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestEntityTooLarge
from werkzeug.http import parse_set_header
from werkzeug.serving import WSGIRequestHandler, make_server

from evopolicygym.protocol import (
    HARNESS_VERSION,
    ApiError,
    ApiErrorDetail,
    SubmitRequest,
    SubmitResponse,
)

from .core import Judge, JudgeError
from .task import endpoints_text

MAX_BODY_BYTES = 64 * 1024
# Deeper JSON is refused before parsing (a 30,000-deep body would exhaust the parser's stack).
MAX_JSON_DEPTH = 32
# How long stopping the server waits for requests still being answered (a submit running then
# is always waited for: see Judge.stop_submits).
DRAIN_SECONDS = 5.0


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body, sort_keys=True), status=status, mimetype="application/json")


def _error(status: int, code: str, message: str) -> Response:
    body = ApiError(status=code, error=ApiErrorDetail(code=code, message=message))
    return _json(status, body.model_dump(mode="json"))


def json_depth_exceeds(data: bytes, limit: int) -> bool:
    """Whether the JSON text ``data`` nests arrays/objects deeper than ``limit`` (strings are
    skipped; one pass over the bytes, so the cost is bounded by the body size)."""
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def _client_still_waiting(environ: dict[str, Any]) -> Callable[[], bool]:
    """A callable that says whether the request's client still waits for the answer: it has
    not sent a FIN, or it has only shut down its sending side (:func:`_peer_closed`)."""
    connection = environ.get("werkzeug.socket")

    def waiting() -> bool:
        if connection is None:
            return True
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            if not readable or connection.recv(1, socket.MSG_PEEK) != b"":
                return True
            return not _peer_closed(connection)
        except (OSError, ValueError):
            return False

    return waiting


def _peer_closed(connection: socket.socket) -> bool:
    """After a FIN from the peer: whether its socket is closed (the client is gone) rather than
    only shut down for writing (``shutdown(SHUT_WR)``, ``nc -N``: it still reads the answer).
    TCP sends the same FIN for both; for a peer on this machine the kernel's socket table tells
    them apart, since a closed socket belongs to no process any more (inode 0). A peer that is
    not in the table (another machine) counts as gone."""
    peer = f":{connection.getpeername()[1]:04X}"
    own = f":{connection.getsockname()[1]:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            fields = line.split()
            if fields[1].endswith(peer) and fields[2].endswith(own):
                return fields[9] == "0"
    return True


def _read_body(stream: IO[bytes], content_length: int | None) -> bytes | None:
    """The request body, or None when it is over ``MAX_BODY_BYTES``. A chunked body has no
    length to check first, so one byte past the limit is read to know."""
    if content_length is not None and content_length > MAX_BODY_BYTES:
        return None
    body = bytearray()
    while len(body) <= MAX_BODY_BYTES and (chunk := stream.read(MAX_BODY_BYTES + 1 - len(body))):
        body += chunk
    return bytes(body) if len(body) <= MAX_BODY_BYTES else None


def _ambiguous_framing(environ: dict[str, Any]) -> bool:
    """Whether the request gives both ``Transfer-Encoding: chunked`` and ``Content-Length``
    (werkzeug reads the chunks and ignores the length: the two may frame different bodies)."""
    chunked = "chunked" in parse_set_header(environ.get("HTTP_TRANSFER_ENCODING"))
    return chunked and "CONTENT_LENGTH" in environ


class _DuplicateKey(ValueError):
    """A JSON object names the same key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of ``json.loads``: the object, or :class:`_DuplicateKey`."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _submit_body(raw: bytes) -> SubmitRequest | Response:
    """The validated body of ``POST /submit``, or the error answer."""
    usage = (
        'the body must be a JSON object like {"env_instances": [0, 1]} or {"env_instances": "0-3"}'
    )
    if json_depth_exceeds(raw, MAX_JSON_DEPTH):
        return _error(
            400, "bad_request", f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels; {usage}"
        )
    try:
        body = json.loads(raw, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        return _error(
            400,
            "bad_request",
            f"the JSON body repeats the key {str(exc.args[0])[:40]!r} in one object; {usage}",
        )
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return _error(400, "bad_request", f"the body is not valid JSON ({str(exc)[:120]}); {usage}")
    if not isinstance(body, dict) or "env_instances" not in body:
        return _error(400, "bad_request", usage)
    unknown = sorted(set(body) - {"env_instances"})
    if unknown:
        shown = ", ".join(repr(key[:40]) for key in unknown[:5])
        return _error(
            400,
            "bad_request",
            f"unknown field(s) {shown}: the body has exactly one field, env_instances",
        )
    try:
        return SubmitRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        cause = (first.get("ctx") or {}).get("error")
        return _error(400, "budget_invalid", str(cause) if cause else first["msg"])


def create_app(judge: Judge) -> Flask:
    """The routes of the judge, without the secret and Host checks (see :class:`JudgeServer`)."""
    # No MAX_CONTENT_LENGTH: werkzeug ends a chunked body at that limit without an error, so a
    # longer body would be judged on its first bytes. _read_body enforces the limit.
    app = Flask("evopolicygym.judge")
    # Every route is declared with provide_automatic_options=False: Flask would otherwise answer
    # OPTIONS itself (200, empty body); here it is a wrong method like any other (405, JSON).

    @app.after_request
    def _server_header(response: Response) -> Response:
        response.headers["Server"] = f"EvoPolicyGym/{HARNESS_VERSION}"
        return response

    @app.get("/info", provide_automatic_options=False)
    def info() -> Response:
        return _json(200, json.loads(judge.info().model_dump_json()))

    @app.get("/task", provide_automatic_options=False)
    def task() -> Response:
        return Response(judge.task() + endpoints_text(request.url_root), mimetype="text/markdown")

    @app.get("/health", provide_automatic_options=False)
    def health() -> Response:
        return _json(200, {"status": "ok", "phase": judge.phase})

    @app.post("/submit", provide_automatic_options=False)
    def submit() -> Response:
        if _ambiguous_framing(request.environ):
            return _error(
                400,
                "bad_request",
                "the request has both Transfer-Encoding: chunked and Content-Length, so its body "
                "is ambiguous: send one of them",
            )
        if not request.is_json:
            return _error(
                415,
                "unsupported_media_type",
                "send the body as JSON with the header Content-Type: application/json",
            )
        try:
            raw = _read_body(request.stream, request.content_length)
        except OSError as exc:  # werkzeug's DechunkedInput: a malformed or cut-off chunk
            return _error(
                400,
                "bad_request",
                f"the chunked body is malformed ({str(exc)[:120]}): send each chunk as <size in "
                "hex>\\r\\n<bytes>\\r\\n and end with 0\\r\\n\\r\\n, or send Content-Length",
            )
        if raw is None:
            raise RequestEntityTooLarge()
        body = _submit_body(raw)
        if isinstance(body, Response):
            return body
        try:
            status, payload = judge.submit(
                body.env_instances, client_waiting=_client_still_waiting(request.environ)
            )
        except JudgeError as exc:
            return _error(exc.status, exc.code, exc.message)
        return _json(status, SubmitResponse.model_validate(payload).model_dump(mode="json"))

    @app.route("/finalize", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    def finalize() -> Response:
        return _error(
            405,
            "method_not_allowed",
            "finalization is owned by the judge: it runs by itself when the budget reaches 0",
        )

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        code = codes.get(exc.code or 500, "bad_request")
        messages = {
            404: "unknown endpoint: use GET /info, GET /task, POST /submit",
            413: f"request body is larger than {MAX_BODY_BYTES} bytes",
        }
        message = messages.get(exc.code or 500, exc.description or code)
        allowed = ", ".join(exc.valid_methods or []) if isinstance(exc, MethodNotAllowed) else ""
        if allowed:
            message = f"{request.method[:20]} is not allowed on this path: use {allowed}"
        response = _error(exc.code or 500, code, message)
        if allowed:
            response.headers["Allow"] = allowed
        return response

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        judge.events("judge.error", error=f"{type(exc).__name__}: {exc}")
        return _error(
            500,
            "internal_error",
            f"the judge failed on this request ({type(exc).__name__}: {exc}); the run state is unchanged unless a submit was committed",
        )

    return app


def loopback_hosts(bind: str, port: int) -> frozenset[str]:
    """``Host`` header values that name the judge itself: ``bind:port``, and for a loopback or
    wildcard bind also ``127.0.0.1:port``, ``localhost:port`` and ``[::1]:port``."""
    hosts = {f"[{bind}]:{port}" if ":" in bind else f"{bind}:{port}"}
    try:
        address = ipaddress.ip_address(bind)
        local = address.is_loopback or address.is_unspecified
    except ValueError:
        local = bind == "localhost"
    if local:
        hosts |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    return frozenset(host.lower() for host in hosts)


class _Gate:
    """WSGI middleware: ``Host`` check (403), then the secret path prefix (401), which it strips
    before the Flask routes see the path."""

    def __init__(self, app: Flask, secret: str):
        self.app = app
        self.prefix = f"/{secret}"
        self.hosts: frozenset[str] = frozenset()
        self._in_flight = 0
        self._idle = threading.Condition()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is inside the routes; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def _refuse(self, environ, start_response, status: int, code: str, message: str):
        response = _error(status, code, message)
        response.headers["Server"] = f"EvoPolicyGym/{HARNESS_VERSION}"
        return response(environ, start_response)

    def __call__(self, environ: dict[str, Any], start_response) -> Iterable[bytes]:
        host = environ.get("HTTP_HOST", "").lower()
        if host not in self.hosts:
            return self._refuse(
                environ,
                start_response,
                403,
                "forbidden_host",
                f"the judge answers only requests addressed to itself (Host {sorted(self.hosts)[0]}), not {host[:80]!r}",
            )
        path = environ.get("PATH_INFO", "")
        head, slash, rest = path.partition("/")[2].partition("/")
        if not hmac.compare_digest(f"/{head}".encode(), self.prefix.encode()):
            return self._refuse(
                environ,
                start_response,
                401,
                "unauthorized",
                "this URL lacks the run's secret: use the URLs in EVOPOLICYGYM_API, "
                "EVOPOLICYGYM_INFO_URL, EVOPOLICYGYM_TASK_URL and EVOPOLICYGYM_SUBMIT_URL as given",
            )
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + self.prefix
        environ["PATH_INFO"] = slash + rest if slash else "/"
        with self._idle:
            self._in_flight += 1
        try:
            return self.app(environ, start_response)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()


class _QuietHandler(WSGIRequestHandler):
    """Requests are recorded by the judge's own events, not printed to the terminal."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class JudgeServer:
    """Serves a judge on ``bind:port`` from a background thread (threaded WSGI server).

    ``secret`` (default: 144 random bits, new for every server) is the first path segment of
    every URL; :attr:`url` is the base URL with it, :attr:`origin` the bare ``http://host:port``.

    Leaving the ``with`` block stops the judge's submits for good (:meth:`Judge.stop_submits`):
    it returns once no submit can commit any more, so what follows reads a ledger that no
    longer changes.
    """

    def __init__(
        self, judge: Judge, bind: str = "127.0.0.1", port: int = 0, *, secret: str | None = None
    ):
        self._judge = judge
        self.secret = secret or secrets.token_urlsafe(18)
        self._gate = _Gate(create_app(judge), self.secret)
        self._server = make_server(
            bind, port, self._gate, threaded=True, request_handler=_QuietHandler
        )
        self._gate.hosts = loopback_hosts(bind, self._server.server_address[1])
        # A short poll: shutting down waits for it (werkzeug's default is half a second).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="judge-http", daemon=True
        )

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/{self.secret}"

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop accepting connections, refuse every submit from now on (409 ``run_closed``)
        and wait for the submit running now to commit; then give the requests still being
        answered up to ``DRAIN_SECONDS`` (a client may still be sending its body) and close the
        listening socket."""
        self._server.shutdown()
        self._judge.stop_submits(
            "the judge has stopped serving: the agent's session is over and no more submits "
            "are accepted"
        )
        self._gate.wait_idle(DRAIN_SECONDS)
        self._thread.join(timeout=10)
        self._server.server_close()
