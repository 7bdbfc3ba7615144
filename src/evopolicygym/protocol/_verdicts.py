"""Submit verdicts and episode error categories."""

from enum import StrEnum


class Verdict(StrEnum):
    """Outcome of one submit, as written to ``summary.json`` ``status``.

    ``budget_invalid`` and ``invalid_env_instance`` are *rejects*: checked before anything runs,
    they cost no budget and create no checkpoint. Every other verdict is *charged* in full.
    Only ``ok`` checkpoints are candidates for validation. A submit stays ``ok`` when single
    episodes fail; those failures are recorded on the episodes (see :class:`EpisodeErrorKind`).
    ``tampered`` is given by finalization, never by a submit: the checkpoint's files no longer
    match the hash journaled when it was submitted, so it is not evaluated.
    """

    OK = "ok"
    BUDGET_INVALID = "budget_invalid"
    INVALID_ENV_INSTANCE = "invalid_env_instance"
    MISSING_POLICY = "missing_policy"
    IMPORT_ERROR = "import_error"
    INIT_TIMEOUT = "init_timeout"
    INIT_ERROR = "init_error"
    OOM = "oom"
    WORKER_CRASH = "worker_crash"
    ENV_ERROR = "env_error"
    TAMPERED = "tampered"

    @property
    def is_reject(self) -> bool:
        return self in (Verdict.BUDGET_INVALID, Verdict.INVALID_ENV_INSTANCE)


class EpisodeErrorKind(StrEnum):
    """Why one episode ended early. Recorded in ``error.txt`` and ``errors.txt``."""

    RESET_ERROR = "reset_error"
    ACT_ERROR = "act_error"
    ACT_TIMEOUT = "act_timeout"
    EPISODE_TIMEOUT = "episode_timeout"
    OOM = "oom"
    CPU_LIMIT = "cpu_limit"
    FILE_SIZE_LIMIT = "file_size_limit"
    WORKER_CRASH = "worker_crash"
    ENV_ERROR = "env_error"
