"""Wire and disk formats of EvoPolicyGym (pydantic models), versions and the AGENTS.md text."""

from ._config import (
    AgentSection,
    LimitsSection,
    RunConfig,
    RunSection,
    ServerSection,
    settings_problem,
)
from ._feedback import ErrorLine, SubmitSummary, TrajectoryRow
from ._instances import InstanceSpecError, parse_env_instances
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
from ._verdicts import EpisodeErrorKind, Verdict
from ._versions import HARNESS_VERSION, PROTOCOL_VERSION, SCHEMA_VERSION
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

__all__ = [
    "HARNESS_VERSION",
    "PROTOCOL_VERSION",
    "SCHEMA_VERSION",
    "AgentRecord",
    "AgentSection",
    "ApiError",
    "ApiErrorDetail",
    "BudgetRecord",
    "EnvMeta",
    "EpisodeErrorKind",
    "ErrorLine",
    "InfoResponse",
    "InstanceSpecError",
    "LimitsSection",
    "Outcome",
    "ProtocolFingerprint",
    "ResourceLimits",
    "RunConfig",
    "RunError",
    "RunRecord",
    "RunSection",
    "RunState",
    "ServerSection",
    "SubmitRecord",
    "SubmitRequest",
    "SubmitResponse",
    "SubmitSummary",
    "Timing",
    "TrajectoryRow",
    "Verdict",
    "parse_env_instances",
    "settings_problem",
]
