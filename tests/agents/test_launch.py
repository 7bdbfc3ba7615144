"""What an agent session is told: environment variables and prompts."""

from __future__ import annotations

import re

from evopolicygym.agents import Launch
from evopolicygym.protocol import PROTOCOL_VERSION


def make_launch(tmp_path) -> Launch:
    return Launch(
        api_url="http://127.0.0.1:38643/",
        workspace=tmp_path / "run" / "workspace",
        logs=tmp_path / "run" / "logs",
    )


def test_environ_names_urls_and_workspace_paths_only(tmp_path):
    env = make_launch(tmp_path).environ()
    workspace = (tmp_path / "run" / "workspace").resolve()
    assert env == {
        "EVOPOLICYGYM_API": "http://127.0.0.1:38643",
        "EVOPOLICYGYM_INFO_URL": "http://127.0.0.1:38643/info",
        "EVOPOLICYGYM_TASK_URL": "http://127.0.0.1:38643/task",
        "EVOPOLICYGYM_SUBMIT_URL": "http://127.0.0.1:38643/submit",
        "EVOPOLICYGYM_WORKSPACE": str(workspace),
        "EVOPOLICYGYM_SYSTEM": str(workspace / "system"),
        "EVOPOLICYGYM_FEEDBACK": str(workspace / "feedback"),
        "EVOPOLICYGYM_AGENTS": str(workspace / "AGENTS.md"),
        "EVOPOLICYGYM_PROTOCOL": PROTOCOL_VERSION,
    }
    # The run root and the logs stay private.
    assert not any(name.endswith(("_ROOT", "_LOGS")) for name in env)
    assert not any("logs" in value for value in env.values())


def test_prompts_carry_the_urls_but_no_filesystem_path(tmp_path):
    launch = make_launch(tmp_path)
    initial = launch.initial_prompt()
    for endpoint in ("/info", "/task", "/submit"):
        assert f"http://127.0.0.1:38643{endpoint}" in initial
    assert "AGENTS.md" in initial and "system/" in initial and "is_finalized" in initial
    assert "/finalize call" in initial
    recovery = launch.recovery_prompt()
    assert "http://127.0.0.1:38643/info" in recovery
    for prompt in (initial, launch.continue_prompt(), recovery):
        assert str(tmp_path) not in prompt
        # No absolute path: every "/" that starts a word belongs to an endpoint or a URL.
        assert not re.search(r"(?<![\w:/.])/(?!info|task|submit|finalize)\w", prompt), prompt
