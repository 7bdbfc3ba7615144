"""Suite configs: a TOML file that expands into a matrix of runs (env x agent x repeat).

The same expansion feeds the CLI (``evopolicygym run --suite FILE --job NAME``) and the Snakemake
workflow (one ``run`` job per :class:`SuiteJob`), so a suite means the same thing everywhere.

File layout (reference section 5.2, plus Snakemake resources and an optional ``[data]`` table)::

    [suite]              root (required), name, slug, repeats, jobs, retries, threads, mem_mb,
                         runtime
    [data]               optional: seed, train_size, valid_size, heldout_size -- the ``data``
                         rule then generates every split directory a ``[[run]]`` names in ``data``
    [[run]]              keys of a run config's [run] table (env, budget, model, data, ...)
    [[agent]]            keys of a run config's [agent] table (kind, name, model, retries, ...)
    [server], [limits]   shared by every run

Expansion order: for each repeat, for each run, for each agent, with a running index from 0.
"""

from __future__ import annotations

import re
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .cases import PUBLISHED_SPLIT
from .protocol import AgentSection, LimitsSection, RunConfig, RunSection, ServerSection

SUITE_KEYS_SET_PER_JOB = ("root", "runs", "key", "exp_id", "exp")


class SuiteConfigError(ValueError):
    """A suite file is missing, is not TOML, or has a bad table or key. The message names the
    file and the offending key."""


def slug(text: str) -> str:
    """One path segment: keep letters, digits and ``._-``; replace anything else with ``_``;
    strip leading/trailing ``._-``. Raises ``ValueError`` when nothing is left."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip("._-")
    if not cleaned:
        raise ValueError(f"cannot make a path segment out of {text!r}")
    return cleaned


def target_slug(name: str) -> str:
    """Suite name -> identifier used in Snakemake target names (``suite_<slug>``).

    Tokens are the alphanumeric runs of the lower-cased name; a token that starts with a digit
    is glued to the previous one, any other token is joined with ``_``: ``smoke-8`` -> ``smoke8``,
    ``main-128-codex`` -> ``main128_codex``.
    """
    tokens = re.findall(r"[a-z0-9]+", name.lower())
    if not tokens:
        raise ValueError(f"suite name {name!r} has no letters or digits")
    out = tokens[0]
    for token in tokens[1:]:
        out += token if token[0].isdigit() else f"_{token}"
    return out


class SuiteSection(BaseModel):
    """The ``[suite]`` table."""

    model_config = ConfigDict(extra="forbid")

    root: Path = Field(..., description="Directory that holds every run of the suite.")
    name: str = Field("suite", min_length=1, description="Display name, e.g. main-128-codex.")
    slug: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Identifier for target names (suite_<slug>); default derived from name.",
    )
    repeats: int = Field(1, gt=0, description="Repeats of every env x agent cell.")
    jobs: int = Field(1, gt=0, description="Runs executed in parallel by `evopolicygym suite`.")
    retries: int = Field(0, ge=0, description="Snakemake restarts of a run job that crashed.")
    threads: int = Field(1, gt=0, description="Rollout workers per run (Snakemake threads).")
    mem_mb: int = Field(4096, gt=0, description="Memory per run job (scheduler resource).")
    runtime: int = Field(720, gt=0, description="Wall-clock minutes per run job (scheduler).")


class DataSection(BaseModel):
    """The optional ``[data]`` table: how the ``data`` rule generates split directories."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, ge=0, description="Master seed of the split generator.")
    train_size: int = Field(PUBLISHED_SPLIT.train, gt=0, description="Visible train cases.")
    valid_size: int = Field(PUBLISHED_SPLIT.valid, gt=0, description="Hidden validation cases.")
    heldout_size: int = Field(PUBLISHED_SPLIT.heldout, gt=0, description="Hidden held-out cases.")


class SuiteJob(BaseModel):
    """One run of the matrix: exactly what ``evopolicygym run --suite FILE --job NAME`` runs."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str = Field(..., description="Unique leaf, e.g. 000_gym_acrobot_codex_r00.")
    repeat: int
    env: str
    agent_label: str
    model: str
    root: Path = Field(
        ..., description="Run directory <suite root>/<model>/<env>/<name>, as the suite gives it."
    )
    config: RunConfig = Field(
        ..., description="The run's config; run.root is ``root`` made absolute at load time."
    )

    @property
    def record_path(self) -> Path:
        """Where the finished run's ``run.json`` lands."""
        return self.root / "run.json"


class DataRequest(BaseModel):
    """A split directory the suite's runs read, and how to generate it."""

    model_config = ConfigDict(frozen=True)

    root: Path
    env: str
    bulk: bool
    seed: int
    train_size: int
    valid_size: int
    heldout_size: int


class Suite(BaseModel):
    """A loaded suite file with its expanded run matrix."""

    path: Path
    section: SuiteSection
    data: DataSection | None
    jobs: list[SuiteJob]

    @property
    def name(self) -> str:
        return self.section.name

    @property
    def slug(self) -> str:
        return self.section.slug or target_slug(self.section.name)

    @property
    def root(self) -> Path:
        return self.section.root

    @property
    def envs(self) -> list[str]:
        """Environment ids in first-seen order."""
        return list(dict.fromkeys(job.env for job in self.jobs))

    @cached_property
    def _by_name(self) -> dict[str, SuiteJob]:
        return {job.name: job for job in self.jobs}

    def job(self, name: str) -> SuiteJob:
        """The job with leaf ``name``; ``KeyError`` listing a few valid names otherwise."""
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(list(self._by_name)[:5])
            raise KeyError(
                f"suite {self.path} has no job {name!r} (it has {len(self.jobs)}: {known}, ...)"
            ) from None

    def data_requests(self) -> list[DataRequest]:
        """Split directories to generate: one per distinct ``data`` path of a ``[[run]]``, only
        when the suite has a ``[data]`` table (without it, data directories must already exist)."""
        if self.data is None:
            return []
        requests: dict[Path, DataRequest] = {}
        for job in self.jobs:
            run = job.config.run
            if run.data is None:
                continue
            request = DataRequest(
                root=run.data, env=run.env, bulk=run.bulk, **self.data.model_dump()
            )
            previous = requests.setdefault(run.data, request)
            if previous.env != request.env:
                raise SuiteConfigError(
                    f"{self.path}: data directory {run.data} is used by two environments "
                    f"({previous.env} and {request.env}); give each its own directory"
                )
        return list(requests.values())


def _tables(document: dict[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    """``[key]`` or ``[[key]]`` as a list of tables; at least one is required."""
    value = document.get(key)
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    raise SuiteConfigError(f"{path}: needs at least one [[{key}]] table")


def _validate(model: type[BaseModel], data: Any, path: Path, where: str):
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"key '{'.'.join(str(p) for p in issue['loc']) or '(table)'}': {issue['msg']}"
            for issue in error.errors()
        )
        raise SuiteConfigError(f"{path}: {where}: {problems}") from None


def agent_label(agent: AgentSection) -> str:
    """The reference's label rule: ``name`` unless it is the default ``agent``; otherwise
    ``<kind>_<model>`` when a model is set, else ``<kind>``."""
    if agent.name != "agent":
        return agent.name
    return f"{agent.kind}_{agent.model}" if agent.model else agent.kind


def load_suite(path: str | Path) -> Suite:
    """Read and expand a suite file. Raises :class:`SuiteConfigError` naming the file and key."""
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteConfigError(f"suite file {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise SuiteConfigError(f"{path}: not valid TOML: {error}") from None
    unknown = set(document) - {"suite", "data", "run", "agent", "server", "limits"}
    if unknown:
        raise SuiteConfigError(
            f"{path}: unknown top-level table(s) {sorted(unknown)}; expected [suite], [data], "
            "[[run]], [[agent]], [server], [limits]"
        )
    if not isinstance(document.get("suite"), dict):
        raise SuiteConfigError(f"{path}: needs a [suite] table with at least root = ...")
    section = _validate(SuiteSection, document["suite"], path, "[suite]")
    data = _validate(DataSection, document["data"], path, "[data]") if "data" in document else None
    server = _validate(ServerSection, document.get("server", {}), path, "[server]")
    limits = _validate(LimitsSection, document.get("limits", {}), path, "[limits]")

    runs = []
    for number, table in enumerate(_tables(document, "run", path)):
        where = f"[[run]] #{number + 1}"
        fixed = [key for key in SUITE_KEYS_SET_PER_JOB if key in table]
        if fixed:
            raise SuiteConfigError(
                f"{path}: {where}: key(s) {fixed} are set by the suite for every job; "
                "set [suite] root instead"
            )
        runs.append(_validate(RunSection, table, path, where))
    agents = [
        _validate(AgentSection, table, path, f"[[agent]] #{number + 1}")
        for number, table in enumerate(_tables(document, "agent", path))
    ]

    jobs: list[SuiteJob] = []
    for repeat in range(section.repeats):
        for run in runs:
            for agent in agents:
                label = agent_label(agent)
                model = run.model if run.model != "agent" else label
                stem = slug(run.key or f"{run.env}_{model}")
                name = f"{len(jobs):03d}_{stem}_r{repeat:02d}"
                root = section.root / slug(model) / slug(run.env) / name
                run_section = run.model_copy(
                    update={
                        # absolute: the judge's workers run in scratch directories
                        "root": root.absolute(),
                        "key": name,
                        "exp_id": name,
                        "model": model,
                        "jobs": run.jobs or section.threads,
                    }
                )
                config = RunConfig(run=run_section, agent=agent, server=server, limits=limits)
                jobs.append(
                    SuiteJob(
                        index=len(jobs),
                        name=name,
                        repeat=repeat,
                        env=run.env,
                        agent_label=label,
                        model=model,
                        root=root,
                        config=config,
                    )
                )
    suite = Suite(path=path, section=section, data=data, jobs=jobs)
    suite.data_requests()  # reject one directory shared by two environments early
    return suite


def suite_job_config(
    path: str | Path, job: str, *, root: Path | None = None, jobs: int | None = None
) -> RunConfig:
    """The run config of job ``job`` of the suite file ``path``: what ``evopolicygym run --suite
    FILE --job NAME`` runs. ``root`` and ``jobs``, when given, replace the run directory and the
    worker count (Snakemake passes the directory it expects and the threads it granted). Raises
    :class:`SuiteConfigError` for a bad suite file and ``KeyError`` for an unknown job."""
    config = load_suite(path).job(job).config
    if root is not None:
        config.run.root = root
    if jobs is not None:
        config.run.jobs = jobs
    return config


def load_suites(patterns: list[str], *, base: Path | None = None) -> dict[str, Suite]:
    """Load every suite file matched by ``patterns`` (paths or globs, relative to ``base`` or the
    current directory), keyed by slug. Raises :class:`SuiteConfigError` when a pattern matches
    nothing, when two files share a slug, or when two suites would write the same run directory.
    """
    base = base or Path.cwd()
    suites: dict[str, Suite] = {}
    owner_of_root: dict[Path, str] = {}
    for pattern in patterns:
        matches = (
            sorted(base.glob(pattern)) if any(c in pattern for c in "*?[") else [base / pattern]
        )
        if not matches:
            raise SuiteConfigError(f"suite pattern {pattern!r} matches no file under {base}")
        for path in matches:
            here = Path.cwd()  # relative paths keep job commands short and portable
            suite = load_suite(path.relative_to(here) if path.is_relative_to(here) else path)
            other = suites.get(suite.slug)
            if other is not None:
                if other.path.resolve() == suite.path.resolve():
                    continue
                raise SuiteConfigError(
                    f"{suite.path} and {other.path} both have slug {suite.slug!r}; set [suite] "
                    "slug in one of them"
                )
            for job in suite.jobs:
                clash = owner_of_root.setdefault(job.root, str(suite.path))
                if clash != str(suite.path):
                    raise SuiteConfigError(
                        f"{suite.path} and {clash} both write {job.root}; give them different "
                        "[suite] root values"
                    )
            suites[suite.slug] = suite
    return suites


def merged_data_requests(suites: dict[str, Suite]) -> dict[str, DataRequest]:
    """Split directories requested by any suite, keyed by path. Two suites may share a
    directory only with identical generator settings (e.g. the three main-128 suites)."""
    merged: dict[str, DataRequest] = {}
    for suite in suites.values():
        for request in suite.data_requests():
            previous = merged.setdefault(str(request.root), request)
            if previous != request:
                raise SuiteConfigError(
                    f"{suite.path}: data directory {request.root} is requested with different "
                    f"settings elsewhere ({previous.model_dump()} vs {request.model_dump()})"
                )
    return merged


def exact_pattern(values) -> str:
    """A regex matching exactly the given strings (for Snakemake wildcard constraints); a
    pattern that matches nothing when there are none."""
    values = sorted({str(v) for v in values})
    return "|".join(re.escape(v) for v in values) if values else "(?!)"
