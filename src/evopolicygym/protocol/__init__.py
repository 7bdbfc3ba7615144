"""Wire and disk formats of EvoPolicyGym: msgspec frames for the sandboxed processes, pydantic
models for HTTP, config, journal and run records; versions and the AGENTS.md text.

The pydantic models load on first use (PEP 562): a lane host, which boots on the path to a
run's first submit, imports the frames only, not the judge's models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._frames import (
    Acted,
    CheckpointFile,
    EpisodeDone,
    EpisodeError,
    Exited,
    ForkPolicy,
    HostReply,
    HostRequest,
    HostUp,
    Kill,
    Load,
    Loaded,
    LoadFailed,
    PolicyEnded,
    PolicyForked,
    PolicyLoaded,
    PolicyReply,
    PolicyRequest,
    RunEpisodes,
    SlotError,
    Spawn,
    Spawned,
    Step,
    Steps,
    Task,
    WorkerConfig,
    WorkerReply,
    WorkerRequest,
    WorkerUp,
    ZygoteReply,
)
from ._instances import (
    MAX_ID_DIGITS,
    InstanceSpecError,
    TooManyInstances,
    count_env_instances,
    parse_env_instances,
)
from ._verdicts import EpisodeErrorKind, Verdict
from ._versions import HARNESS_VERSION, PROTOCOL_VERSION, SCHEMA_VERSION

# Names whose modules load on first use.
_LAZY = {
    "AgentSection": "_config",
    "LimitsSection": "_config",
    "RunConfig": "_config",
    "RunSection": "_config",
    "ServerSection": "_config",
    "settings_problem": "_config",
    "ErrorLine": "_feedback",
    "SubmitSummary": "_feedback",
    "TrajectoryRow": "_feedback",
    "Closed": "_journal",
    "Evaluation": "_journal",
    "FingerprintRecord": "_journal",
    "JournalRecord": "_journal",
    "OpenRecord": "_journal",
    "SubmitBegin": "_journal",
    "SubmitCommit": "_journal",
    "SubmitRollback": "_journal",
    "AgentRecord": "_run_record",
    "BudgetRecord": "_run_record",
    "Outcome": "_run_record",
    "ProtocolFingerprint": "_run_record",
    "RunError": "_run_record",
    "RunRecord": "_run_record",
    "SubmitRecord": "_run_record",
    "Timing": "_run_record",
    "ApiError": "_wire",
    "ApiErrorDetail": "_wire",
    "EnvMeta": "_wire",
    "InfoResponse": "_wire",
    "ResourceLimits": "_wire",
    "RunState": "_wire",
    "SubmitRequest": "_wire",
    "SubmitResponse": "_wire",
}

__all__ = [
    "HARNESS_VERSION",
    "MAX_ID_DIGITS",
    "PROTOCOL_VERSION",
    "SCHEMA_VERSION",
    "Acted",
    "AgentRecord",
    "AgentSection",
    "ApiError",
    "ApiErrorDetail",
    "BudgetRecord",
    "CheckpointFile",
    "Closed",
    "EnvMeta",
    "EpisodeDone",
    "EpisodeError",
    "EpisodeErrorKind",
    "ErrorLine",
    "Evaluation",
    "Exited",
    "FingerprintRecord",
    "ForkPolicy",
    "HostReply",
    "HostRequest",
    "HostUp",
    "InfoResponse",
    "InstanceSpecError",
    "JournalRecord",
    "Kill",
    "LimitsSection",
    "Load",
    "LoadFailed",
    "Loaded",
    "OpenRecord",
    "Outcome",
    "PolicyEnded",
    "PolicyForked",
    "PolicyLoaded",
    "PolicyReply",
    "PolicyRequest",
    "ProtocolFingerprint",
    "ResourceLimits",
    "RunConfig",
    "RunEpisodes",
    "RunError",
    "RunRecord",
    "RunSection",
    "RunState",
    "ServerSection",
    "SlotError",
    "Spawn",
    "Spawned",
    "Step",
    "Steps",
    "SubmitBegin",
    "SubmitCommit",
    "SubmitRecord",
    "SubmitRequest",
    "SubmitResponse",
    "SubmitRollback",
    "SubmitSummary",
    "Task",
    "Timing",
    "TooManyInstances",
    "TrajectoryRow",
    "Verdict",
    "WorkerConfig",
    "WorkerReply",
    "WorkerRequest",
    "WorkerUp",
    "ZygoteReply",
    "count_env_instances",
    "parse_env_instances",
    "settings_problem",
]

if TYPE_CHECKING:
    from ._config import (
        AgentSection,
        LimitsSection,
        RunConfig,
        RunSection,
        ServerSection,
        settings_problem,
    )
    from ._feedback import ErrorLine, SubmitSummary, TrajectoryRow
    from ._journal import (
        Closed,
        Evaluation,
        FingerprintRecord,
        JournalRecord,
        OpenRecord,
        SubmitBegin,
        SubmitCommit,
        SubmitRollback,
    )
    from ._run_record import (
        AgentRecord,
        BudgetRecord,
        Outcome,
        ProtocolFingerprint,
        RunError,
        RunRecord,
        SubmitRecord,
        Timing,
    )
    from ._wire import (
        ApiError,
        ApiErrorDetail,
        EnvMeta,
        InfoResponse,
        ResourceLimits,
        RunState,
        SubmitRequest,
        SubmitResponse,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
