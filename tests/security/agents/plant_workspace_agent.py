"""A hostile command agent (JSONL protocol) that plants what the judge must never follow or
trip over, then submits a working policy each time:

1. ``system/metrics.json`` as a link to the file VICTIM (outside the workspace);
2. ``system/metrics.json`` as a link to the run's own journal, and ``feedback/submit_002`` as a
   directory 2000 levels deep (where the judge publishes the next submit's feedback);
3. ``.system.mirror`` beside ``system/``, 2000 levels deep (where finalize copies the best
   checkpoint).

Usage: python plant_workspace_agent.py VICTIM
"""

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

POLICY = """class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        pass

    def reset(self, episode_index):
        pass

    def act(self, obs):
        return 2
"""


def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"Content-Type": "application/json"}
    request = urllib.request.Request(os.environ["EVOPOLICYGYM_API"] + path, data, headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def nest(directory, depth):
    directory.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=descriptor)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = below
    os.close(descriptor)


def plant_link(system, target):
    link = system / "metrics.json"
    if os.path.lexists(link):
        link.unlink()
    link.symlink_to(target)


def main():
    workspace = Path(os.environ["EVOPOLICYGYM_WORKSPACE"])
    system = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
    for line in sys.stdin:
        turn = json.loads(line)["turn"]
        system.mkdir(exist_ok=True)
        (system / "policy.py").write_text(POLICY)
        answers = []
        plant_link(system, sys.argv[1])
        answers.append(call("/submit", {"env_instances": [0]}))
        plant_link(system, "../../.judge/journal.jsonl")
        nest(Path(os.environ["EVOPOLICYGYM_FEEDBACK"]) / "submit_002", 2000)
        answers.append(call("/submit", {"env_instances": [0]}))
        (system / "metrics.json").unlink()
        nest(workspace / ".system.mirror", 2000)
        answers.append(call("/submit", {"env_instances": [0]}))
        text = "; ".join(f"{status} {body.get('status')}" for status, body in answers)
        print(json.dumps({"turn": turn, "text": text, "stop": True}), flush=True)


if __name__ == "__main__":
    main()
