"""A command agent (JSONL protocol) that installs one given policy file and spends the whole
budget on it in a single submit.

Usage: python submit_policy_agent.py POLICY_FILE
"""

import json
import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path


def call(url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        return json.load(error)


def main():
    system = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
    for line in sys.stdin:
        turn = json.loads(line)["turn"]
        remaining = call(os.environ["EVOPOLICYGYM_INFO_URL"])["state"]["remaining_budget"]
        if remaining:
            system.mkdir(exist_ok=True)
            shutil.copy(sys.argv[1], system / "policy.py")
            reply = call(
                os.environ["EVOPOLICYGYM_SUBMIT_URL"], {"env_instances": list(range(remaining))}
            )
            text = f"submitted: {reply.get('status')}"
        else:
            text = "budget spent"
        print(json.dumps({"turn": turn, "text": text}), flush=True)


if __name__ == "__main__":
    main()
