"""Environment ids: a curated id names an envspec; ``gymnasium/<id>`` names any installed
Gymnasium registration (bulk mode). Shared by the registry and the bulk specs, which must not
import each other's modules to agree on them."""

from __future__ import annotations

BULK_PREFIX = "gymnasium/"


class UnknownEnvironmentError(KeyError):
    """The id is neither curated nor (with bulk) a registered Gymnasium id."""

    def __str__(self) -> str:
        return str(self.args[0])
