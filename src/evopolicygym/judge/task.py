"""The text served by ``GET /task``: the environment's task text plus a generated contract."""

from __future__ import annotations

import json

from evopolicygym.envs import EnvSpec
from evopolicygym.protocol import EnvMeta


def task_text(
    spec: EnvSpec, meta: EnvMeta, minimum: int, maximum: int, *, compress_images: bool = False
) -> str:
    schema = lambda value: json.dumps(value, indent=2, sort_keys=True)  # noqa: E731
    upper = min(maximum, meta.n_env_instances)
    pixels = (
        "a compressed `observations.npz` (key `obs`) when they are pixels (uint8), "
        "`observations.npy` otherwise"
        if compress_images
        else "`observations.npy`"
    )
    return f"""{spec.task.strip()}

## Policy Contract

```python
class Policy:
    def __init__(self, obs_space: dict, action_space: dict, env_meta: dict): ...
    def reset(self, episode_index: int) -> None: ...
    def act(self, obs): ...  # returns one action
```

`__init__` runs once per policy worker process (a submit may use several workers), `reset` before
every episode, `act` once per step. Policies run in separate processes with the time and memory
limits listed under `resource_limits` in `GET /info`.

## Policy Input And Output

- Environment: `{meta.env}` (task version {meta.env_version})
- Visible train case ids: `0..{meta.n_env_instances - 1}`
- Max episode steps: {meta.max_episode_steps}
- Observation storage: `{meta.obs_storage}`. Each `trajectory.jsonl` row holds its `obs`
  unless the episode's observations are stored in a file (always for `external`, otherwise when
  they exceed 4096 bytes): then every row has `obs: null` and array index `t` is step `t`, in
  {pixels}; dict observations go to `observations.npz`, one array per key.
- Reward: {spec.reward}

Observation space:

```json
{schema(meta.obs_space)}
```

Action space:

```json
{schema(meta.action_space)}
```

## Submit Notes

Submit between {minimum} and {upper} visible train case ids per request (never more than the
remaining budget), as a list (`{{"env_instances": [0, 1, 2]}}`) or a range string
(`{{"env_instances": "0-2,7"}}`). Each id runs one episode and costs one unit of budget. Read
`feedback/submit_NNN/summary.json` and the episode files after every submit.
"""


def endpoints_text(base_url: str) -> str:
    """The section ``GET /task`` ends with: this run's three URLs, secret included."""
    base = base_url.rstrip("/")
    return f"""
## Endpoints

- `GET {base}/info`: budget, limits, observation and action schemas
- `GET {base}/task`: this text
- `POST {base}/submit`: submit `system/` (JSON body as above)

The first path segment is this run's secret (also in `EVOPOLICYGYM_API` and the
`EVOPOLICYGYM_*_URL` variables): use the URLs as given; a request without it gets 401.
"""
