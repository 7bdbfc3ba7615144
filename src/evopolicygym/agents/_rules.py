"""The staged rules file ``AGENTS.md`` (source: ``evopolicygym/protocol/AGENTS.md``)."""

from __future__ import annotations

import hashlib
from importlib import resources


def agents_md_text() -> str:
    """The text the judge stages as ``workspace/AGENTS.md``."""
    return resources.files("evopolicygym.protocol").joinpath("AGENTS.md").read_text("utf-8")


def agents_md_sha256() -> str:
    """``sha256:<hex>`` of the UTF-8 bytes of :func:`agents_md_text` (recorded in run.json)."""
    return "sha256:" + hashlib.sha256(agents_md_text().encode("utf-8")).hexdigest()
