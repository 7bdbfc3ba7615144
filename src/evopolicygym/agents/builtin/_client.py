"""A minimal client of the judge's public HTTP API (standard library only)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

# The last submit of a run may wait for finalization; give it time.
SUBMIT_TIMEOUT_SECONDS = 3600.0
INFO_TIMEOUT_SECONDS = 60.0


@dataclass
class SubmitAnswer:
    """HTTP status and JSON body of one ``POST /submit``."""

    status_code: int
    body: dict[str, Any]

    @property
    def summary(self) -> dict[str, Any] | None:
        summary = self.body.get("summary")
        return summary if isinstance(summary, dict) else None

    @property
    def verdict(self) -> str:
        return str(self.body.get("status", "unknown"))


class JudgeClient:
    """Reads the endpoint URLs from ``EVOPOLICYGYM_INFO_URL`` and ``EVOPOLICYGYM_SUBMIT_URL``."""

    def __init__(self, info_url: str, submit_url: str) -> None:
        self.info_url = info_url
        self.submit_url = submit_url

    @classmethod
    def from_environ(cls) -> JudgeClient:
        try:
            return cls(os.environ["EVOPOLICYGYM_INFO_URL"], os.environ["EVOPOLICYGYM_SUBMIT_URL"])
        except KeyError as exc:
            raise SystemExit(
                f"{exc.args[0]} is not set: built-in agents run under `evopolicygym run`, "
                "which exports the judge URLs."
            ) from exc

    def info(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.info_url, timeout=INFO_TIMEOUT_SECONDS) as response:
            return json.load(response)

    def submit(self, env_instances: list[int]) -> SubmitAnswer:
        """POST the ids. 4xx answers (rejects, closed run) are returned, not raised."""
        request = urllib.request.Request(
            self.submit_url,
            data=json.dumps({"env_instances": env_instances}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=SUBMIT_TIMEOUT_SECONDS) as response:
                return SubmitAnswer(response.status, json.load(response))
        except urllib.error.HTTPError as error:
            try:
                body = json.loads(error.read() or b"{}")
            except json.JSONDecodeError:
                body = {}
            return SubmitAnswer(error.code, body if isinstance(body, dict) else {})
