"""A scripted command agent (JSONL protocol): every turn it writes a constant-action policy and
submits ``--batch`` episodes through the judge's HTTP API, exactly as an LLM agent would.

Usage: python scripted_agent.py [--action N] [--batch K] [--act-sleep S]
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

POLICY = """import time

class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        pass

    def reset(self, episode_index):
        pass

    def act(self, obs):
        time.sleep({sleep})
        return {action}
"""


def call(url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        return json.load(error)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--action", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--act-sleep", type=float, default=0.0)
    args = parser.parse_args()
    system = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
    for line in sys.stdin:
        turn = json.loads(line)["turn"]
        info = call(os.environ["EVOPOLICYGYM_INFO_URL"])
        remaining = info["state"]["remaining_budget"]
        if remaining == 0:
            print(json.dumps({"turn": turn, "text": "budget spent"}), flush=True)
            continue
        system.mkdir(exist_ok=True)
        (system / "policy.py").write_text(POLICY.format(sleep=args.act_sleep, action=args.action))
        count = min(args.batch, remaining)
        start = (turn * args.batch) % info["env_meta"]["n_env_instances"]
        ids = [(start + i) % info["env_meta"]["n_env_instances"] for i in range(count)]
        reply = call(os.environ["EVOPOLICYGYM_SUBMIT_URL"], {"env_instances": ids})
        print(
            json.dumps({"turn": turn, "text": f"submitted {ids}: {reply.get('status')}"}),
            flush=True,
        )


if __name__ == "__main__":
    main()
