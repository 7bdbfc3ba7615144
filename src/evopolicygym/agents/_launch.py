"""What one agent session is told: the judge URL, the workspace, and the three prompts."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..protocol import PROTOCOL_VERSION

CONTINUE_PROMPT = (
    "Continue the same benchmark run in the same context: improve the policy's behaviour and "
    "the code structure under system/, using the feedback of your accepted submits."
)


class Resume(BaseModel):
    """What a resumed run tells the agent's continued session.

    ``session`` is the agent CLI's own session id from the previous start (None for the command
    agent, whose process died with the harness, or when the CLI never named one); ``turns`` is how
    many turns the earlier starts sent, so turn numbers (and log file names) go on from there.
    """

    model_config = ConfigDict(frozen=True)

    session: str | None = None
    turns: int = 0
    n_submits: int = 0
    remaining_budget: int = 0
    budget: int = 0


class Launch(BaseModel):
    """The facts an agent session starts from.

    ``workspace`` becomes the agent's working directory; ``logs`` is the run's private log
    directory, where adapters write transcripts. ``jail`` is a command prefix (``bwrap ... --``,
    see :class:`Jail`) put before every agent process; empty: no jail. Neither the run root nor ``logs`` is ever
    revealed to the agent: :meth:`environ` exports only workspace paths and URLs, and the
    prompts contain the URLs but no absolute path.
    """

    model_config = ConfigDict(frozen=True)

    api_url: str
    workspace: Path
    logs: Path
    resume: Resume | None = None
    jail: tuple[str, ...] = ()

    @property
    def base_url(self) -> str:
        return self.api_url.rstrip("/")

    def environ(self) -> dict[str, str]:
        """Environment variables of every agent process (reference spec §2.2)."""
        workspace = self.workspace.resolve()
        return {
            "EVOPOLICYGYM_API": self.base_url,
            "EVOPOLICYGYM_INFO_URL": f"{self.base_url}/info",
            "EVOPOLICYGYM_TASK_URL": f"{self.base_url}/task",
            "EVOPOLICYGYM_SUBMIT_URL": f"{self.base_url}/submit",
            "EVOPOLICYGYM_WORKSPACE": str(workspace),
            "EVOPOLICYGYM_SYSTEM": str(workspace / "system"),
            "EVOPOLICYGYM_FEEDBACK": str(workspace / "feedback"),
            "EVOPOLICYGYM_AGENTS": str(workspace / "AGENTS.md"),
            "EVOPOLICYGYM_PROTOCOL": PROTOCOL_VERSION,
        }

    def initial_prompt(self) -> str:
        """First message of the session: the rules in brief and the three endpoints."""
        url = self.base_url
        return "\n".join(
            [
                "You are running one persistent EvoPolicyGym benchmark session. Your current "
                "working directory is the run's workspace.",
                "",
                "Read AGENTS.md first: it is the rules file of this benchmark.",
                "- Write only inside system/: system/policy.py must define class Policy. "
                "Helper modules, tests and notes may live there too.",
                "- feedback/ is written by the judge after every submit: read it, never edit it.",
                "- Improve both the policy's behaviour and the structure of its code.",
                "- Do not run the environment or any simulator locally: every episode must come "
                "from an accepted POST /submit, and all data from its feedback.",
                "",
                "The judge:",
                f"- GET {url}/info    budget, limits, observation and action schemas",
                f"- GET {url}/task    the task description and the policy contract",
                f'- POST {url}/submit with JSON {{"env_instances": [0, 1]}} or '
                '{"env_instances": "0-3,7"}',
                "",
                "Keep submitting small batches and improving until GET /info reports "
                "state.is_finalized = true. The judge finalizes the run by itself when the budget "
                "is spent; there is no /finalize call for you.",
            ]
        )

    def first_prompt(self) -> str:
        """The session's first message: the resume prompt when continuing, else the initial one."""
        return self.resume_prompt() if self.resume is not None else self.initial_prompt()

    def resume_prompt(self) -> str:
        """First message after the harness restarted an interrupted run."""
        resume = self.resume or Resume()
        url = self.base_url
        return "\n".join(
            [
                "Continue the same benchmark run. The harness was interrupted and has restarted "
                f"it: {resume.n_submits} submits were judged so far and "
                f"{resume.remaining_budget} of {resume.budget} episodes remain.",
                "The judge now listens at a new address; use only these URLs from now on "
                "(they are also in the EVOPOLICYGYM_* environment variables):",
                f"- GET {url}/info",
                f"- GET {url}/task",
                f"- POST {url}/submit",
                "A submit that was running when the harness stopped may have been judged or not: "
                "check feedback/ and GET /info before you submit again. Everything else is as "
                "before: AGENTS.md, system/, feedback/. Keep improving and submitting until "
                "GET /info reports state.is_finalized = true. There is no /finalize call for you.",
            ]
        )

    def continue_prompt(self) -> str:
        """Message of every later turn."""
        return CONTINUE_PROMPT

    def recovery_prompt(self) -> str:
        """Message after a failed turn that is retried."""
        url = self.base_url
        return (
            "Continue the same benchmark run. The previous turn was interrupted: do not assume "
            "that its last action succeeded or failed. Re-read AGENTS.md if needed, call "
            f"GET {url}/info to see the remaining budget, inspect feedback/ for the submits "
            "that were judged, and submit the next useful batch if budget remains. "
            "There is no /finalize call for you."
        )
