"""A complete EvoPolicyGym agent in ~100 lines of standard-library Python.

It speaks the JSONL command protocol on stdin/stdout and the judge's HTTP API, using only what
docs/protocol/ describes. Strategy (for Discrete action spaces): try every constant action as a
policy on the same train cases, one submit each, then spend the rest of the budget on the best
one. Each turn does one submit and replies with what it did. Run it through the judge, e.g.

    evopolicygym run --config docs/examples/toy-command.toml -- python "$PWD/docs/examples/agent.py"
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

API = os.environ["EVOPOLICYGYM_API"]
SYSTEM = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
FEEDBACK = Path(os.environ["EVOPOLICYGYM_FEEDBACK"])

POLICY_TEMPLATE = """class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        self.action = {action!r}

    def reset(self, episode_index):
        pass

    def act(self, obs):
        return self.action
"""


def call(path: str, body: dict | None = None) -> dict:
    """GET (no body) or POST JSON; 4xx answers carry a JSON body too, so return it."""
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{API}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        return json.load(error)


class ConstantActionSearch:
    def __init__(self) -> None:
        self.scores: dict[int, float] = {}

    def turn(self) -> str:
        info = call("/info")
        state, meta = info["state"], info["env_meta"]
        if state["phase"] != "open":
            return f"nothing to do: the run is {state['phase']}"
        space = meta["action_space"]
        if space["type"] != "Discrete":
            return f"this example only handles Discrete actions, not {space['type']}"
        actions = [space.get("start", 0) + i for i in range(space["n"])]
        untried = [a for a in actions if a not in self.scores]
        remaining = state["remaining_budget"]
        upper = min(info["max_episodes_per_submit"], remaining)
        n_cases = meta["n_env_instances"]
        if untried:
            # Every candidate plays the same cases, so their returns are directly comparable.
            share = remaining // (len(untried) + 1)
            count = max(info["min_episodes_per_submit"], min(upper, share, n_cases))
            action, first = untried[0], 0
        else:
            count, action = upper, max(self.scores, key=self.scores.get)
            first = state["n_submits"]  # fresh cases for the final batch
        (SYSTEM / "policy.py").write_text(POLICY_TEMPLATE.format(action=action))
        ids = [(first + i) % n_cases for i in range(count)]
        answer = call("/submit", {"env_instances": ids})
        if "summary" not in answer:
            return f"submit refused: {answer['error']['message']}"
        # The answer's summary is also on disk, in the feedback directory of this submit.
        index = answer["submit_id"]
        summary = json.loads((FEEDBACK / f"submit_{index:03d}" / "summary.json").read_text())
        if summary["status"] == "ok":
            self.scores.setdefault(action, summary["mean_return"])
        return (
            f"submit {index}: action {action} x{count} -> {summary['status']}, "
            f"mean {summary['mean_return']}, {summary['remaining_budget']} episodes left"
        )


def main() -> None:
    agent = ConstantActionSearch()
    for line in sys.stdin:
        prompt = json.loads(line)
        try:
            text = agent.turn()
        except Exception as exc:  # report, and let the judge's retry policy decide
            text = f"turn failed: {type(exc).__name__}: {exc}"
        print(json.dumps({"turn": prompt["turn"], "text": text}), flush=True)
        print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
