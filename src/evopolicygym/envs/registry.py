"""The environment registry: curated specs from ``envspecs/`` plus, on request, every id in the
installed Gymnasium registry as ``gymnasium/<id>`` (bulk mode)."""

from __future__ import annotations

import difflib
import os
from functools import cache
from pathlib import Path

from ._ids import BULK_PREFIX, UnknownEnvironmentError
from ._spec import EnvSpec

__all__ = [
    "BULK_PREFIX",
    "ENVSPECS_VARIABLE",
    "Registry",
    "UnknownEnvironmentError",
    "default_registry",
    "envspecs_root",
    "get_env",
]

ENVSPECS_VARIABLE = "EVOPOLICYGYM_ENVSPECS"


def envspecs_root() -> Path:
    """Where envspec files live: ``$EVOPOLICYGYM_ENVSPECS``, the repository's ``envspecs/``
    (editable installs), or the copy packaged into the wheel."""
    explicit = os.environ.get(ENVSPECS_VARIABLE)
    if explicit:
        return Path(explicit)
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent.parent / "envspecs", package / "_envspecs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"no envspecs directory found; set {ENVSPECS_VARIABLE} to the repository's envspecs/"
    )


class Registry:
    """Curated environment specs by id."""

    def __init__(self, specs: dict[str, EnvSpec]):
        self._specs = dict(sorted(specs.items()))

    @classmethod
    def load(cls, root: Path | None = None) -> Registry:
        root = root or envspecs_root()
        specs: dict[str, EnvSpec] = {}
        for path in sorted(root.rglob("*.toml")):
            spec = EnvSpec.from_file(path)
            if spec.id in specs:
                raise ValueError(
                    f"duplicate env id {spec.id!r} in {path} and {specs[spec.id].source}"
                )
            specs[spec.id] = spec
        return cls(specs)

    def ids(self) -> list[str]:
        return list(self._specs)

    def specs(self) -> list[EnvSpec]:
        return list(self._specs.values())

    def __contains__(self, env_id: str) -> bool:
        return env_id in self._specs

    def get(self, env_id: str, *, bulk: bool = False) -> EnvSpec:
        """The spec for ``env_id``. Curated ids always win; ``gymnasium/<id>`` ids that are not
        curated need ``bulk=True``. Raises :class:`UnknownEnvironmentError` with suggestions."""
        if env_id in self._specs:
            return self._specs[env_id]
        if env_id.startswith(BULK_PREFIX):
            if not bulk:
                raise UnknownEnvironmentError(
                    f"{env_id!r} is not a curated environment; pass --bulk (or bulk = true) to "
                    "run any installed Gymnasium id"
                )
            # Deferred for start-up speed, not for a cycle: bulk specs load gymnasium and every
            # adapter, which reading curated specs (each Snakemake parse, `--help`) never needs.
            from .bulk import bulk_spec

            return bulk_spec(env_id.removeprefix(BULK_PREFIX))
        close = difflib.get_close_matches(env_id, self._specs, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownEnvironmentError(
            f"unknown environment {env_id!r}{hint} (`evopolicygym check-envs --min-level L0` lists them)"
        )


@cache
def default_registry() -> Registry:
    return Registry.load()


def get_env(env_id: str, *, bulk: bool = False) -> EnvSpec:
    """Shortcut for ``default_registry().get(env_id, bulk=bulk)``."""
    return default_registry().get(env_id, bulk=bulk)
