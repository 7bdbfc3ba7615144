"""A lane host imports what its workers need before it forks them, so that a worker costs a fork:
a warm train worker's boot (its world, the rehearsed episode, the loader's warm-up) imports
nothing the host has not."""

import json
import subprocess
import sys

import pytest

from evopolicygym.envs import get_env
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout.pool import PRELOAD, WORKER_MODULE

# Run in a fresh interpreter that imports what a lane host does (host.py's own preloading),
# then boots a train worker's world as the worker does, and prints the modules that came after.
BOOT = """
import json, socket, sys
from evopolicygym.sandbox.host import _call, _preload
preload, expand, spec_json, limits = json.loads(sys.argv[1])
_preload(preload)
_preload(_call(expand, spec_json))
before = set(sys.modules)
from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.protocol import WorkerRequest
from evopolicygym.rollout import worker
from evopolicygym.sandbox import Channel
spec, world, problem = worker._build(
    worker.WorkerConfig(env_spec=json.loads(spec_json), limits=limits, sealed=False)
)
assert problem is None, problem
ours, _theirs = socket.socketpair()
channel = Channel.from_fd(ours.detach(), WorkerRequest, enc_hook=to_jsonsafe)
watchdog = worker.Watchdog()
worker._rehearse(world, limits, watchdog, channel.encode)
worker.rehearse_load(watchdog, limits)
worker._worker_up(world, None)
worker.Watchdog.stop()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@pytest.mark.parametrize("env_id", ["toy", "gym/cartpole"])
def test_a_warm_workers_boot_imports_nothing_its_lane_host_has_not(env_id):
    spec = get_env(env_id)
    argument = json.dumps(
        [
            PRELOAD,
            f"{WORKER_MODULE}:runtime_modules",
            spec.model_dump_json(exclude={"task"}),
            LimitsSection().model_dump(),
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", BOOT, argument], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
