"""The Flask app and server of the judge (loopback, ephemeral port by default).

Every answer is JSON except ``GET /task`` (Markdown). Requests that cannot be judged get a 4xx
with ``{"status": <code>, "error": {"code", "message"}}`` and cost nothing: malformed JSON or a
missing ``env_instances`` (400 ``bad_request``), a body that is not JSON (415), a body over
``MAX_BODY_BYTES`` (413), an unparsable ``env_instances`` (400 ``budget_invalid``), a closed run
(409 ``run_closed``), unknown paths (404) and ``/finalize`` (405: finalization is the judge's).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.serving import WSGIRequestHandler, make_server

from evopolicygym.protocol import HARNESS_VERSION

from .core import Judge, JudgeError

MAX_BODY_BYTES = 64 * 1024


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body, sort_keys=True), status=status, mimetype="application/json")


def _error(status: int, code: str, message: str) -> Response:
    return _json(status, {"status": code, "error": {"code": code, "message": message}})


def create_app(judge: Judge) -> Flask:
    app = Flask("evopolicygym.judge")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    @app.after_request
    def _server_header(response: Response) -> Response:
        response.headers["Server"] = f"EvoPolicyGym/{HARNESS_VERSION}"
        return response

    @app.get("/info")
    def info() -> Response:
        return _json(200, json.loads(judge.info().model_dump_json()))

    @app.get("/task")
    def task() -> Response:
        return Response(judge.task(), mimetype="text/markdown")

    @app.get("/health")
    def health() -> Response:
        return _json(200, {"status": "ok", "phase": judge.phase})

    @app.post("/submit")
    def submit() -> Response:
        if not request.is_json:
            return _error(
                415,
                "unsupported_media_type",
                "send the body as JSON with the header Content-Type: application/json",
            )
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or "env_instances" not in body:
            return _error(
                400,
                "bad_request",
                'the body must be a JSON object like {"env_instances": [0, 1]} or {"env_instances": "0-3"}',
            )
        unknown = sorted(set(body) - {"env_instances"})
        if unknown:
            return _error(
                400,
                "bad_request",
                f"unknown field(s) {unknown}: the body has exactly one field, env_instances",
            )
        try:
            status, payload = judge.submit(body["env_instances"])
        except JudgeError as exc:
            return _error(exc.status, exc.code, exc.message)
        return _json(status, payload)

    @app.route("/finalize", methods=["GET", "POST", "PUT", "DELETE"])
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
        return _error(exc.code or 500, code, messages.get(exc.code or 500, exc.description or code))

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        judge.events("judge.error", error=f"{type(exc).__name__}: {exc}")
        return _error(
            500,
            "internal_error",
            f"the judge failed on this request ({type(exc).__name__}: {exc}); the run state is unchanged unless a submit was committed",
        )

    return app


class _QuietHandler(WSGIRequestHandler):
    """Requests are recorded by the judge's own events, not printed to the terminal."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class JudgeServer:
    """Serves a judge on ``bind:port`` from a background thread (threaded WSGI server)."""

    def __init__(self, judge: Judge, bind: str = "127.0.0.1", port: int = 0):
        self._server = make_server(
            bind, port, create_app(judge), threaded=True, request_handler=_QuietHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="judge-http", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)
