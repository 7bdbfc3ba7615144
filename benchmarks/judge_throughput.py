"""Episodes per second through the judge versus a plain Gymnasium loop.

For each environment this prints three measurements and their ratios:

* ``plain``: one process, one ``gymnasium.make`` instance, the same policy, no recording;
* ``judge, 1 worker``: one real submit through the HTTP judge with ``--jobs 1`` (policy in a
  worker process, trajectories recorded, feedback written): the per-worker ratio;
* ``finalize``: hidden-pool evaluation (sealed policy process, no recording) with 1 worker and
  with ``--workers`` workers: the scaling of finalize.

Each figure is the best of ``--repeats`` interleaved measurements.

Targets (issue 2): judge/plain >= 0.7 on CartPole and >= 0.9 on HalfCheetah-v5 per worker, and
near-linear finalize scaling. Run: ``uv run python benchmarks/judge_throughput.py``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

import gymnasium

from evopolicygym.cases import generate_splits
from evopolicygym.envs import get_env
from evopolicygym.judge import Judge, JudgeServer, JudgeSettings, Ledger
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout import EpisodeTask, WorkerJob, WorkerPool
from evopolicygym.runs import EventLog, RunPaths

# The same controller runs in both loops; it only indexes the observation, so it works on the
# numpy arrays of the plain loop and on the JSON lists the judge gives policies.
POLICIES = {
    "gym/cartpole": "class Policy:\n    def __init__(self, *args): pass\n    def reset(self, i): pass\n    def act(self, obs):\n        return 1 if obs[2] + 0.5 * obs[3] > 0 else 0\n",
    "gym/halfcheetah5": "import math\nclass Policy:\n    def __init__(self, *args): self.t = 0\n    def reset(self, i): self.t = 0\n    def act(self, obs):\n        self.t += 1\n        s = math.sin(self.t / 5)\n        return [s, -s, s, -s, s, -s]\n",
}


def load_policy(source: str):
    namespace: dict = {}
    exec(source, namespace)
    return namespace["Policy"]({}, {}, {})


def plain_loop(env_id: str, seeds: list[int]) -> tuple[float, int]:
    spec = get_env(env_id)
    env = gymnasium.make(spec.upstream, **spec.kwargs)
    policy = load_policy(POLICIES[env_id])
    steps = 0
    started = time.perf_counter()
    for index, seed in enumerate(seeds):
        obs, _ = env.reset(seed=seed)
        policy.reset(index)
        for _ in range(spec.max_episode_steps):
            obs, _reward, terminated, truncated, _ = env.step(policy.act(obs))
            steps += 1
            if terminated or truncated:
                break
    return len(seeds) / (time.perf_counter() - started), steps


def judge_submit(env_id: str, episodes: int, workdir: Path) -> float:
    spec = get_env(env_id)
    paths = RunPaths(workdir / "run")
    paths.create()
    (paths.system / "policy.py").write_text(POLICIES[env_id])
    settings = JudgeSettings(
        spec=spec,
        schemas=spec.describe(),
        splits=generate_splits(0, episodes, 1, 1),
        budget=episodes,
        minimum=1,
        maximum=episodes,
        limits=LimitsSection(),
        jobs=1,
    )
    ledger = Ledger.open(
        paths.private / "journal.jsonl",
        episodes,
        checkpoints=paths.checkpoints,
        feedback=paths.feedback,
    )
    judge = Judge(
        settings,
        paths.judge_paths(),
        ledger,
        EventLog(paths.logs / "harness.log", lambda line: None, "bench"),
    )
    judge.pool.prewarm()
    time.sleep(5)  # let the warm worker finish importing, as it does while an agent thinks
    try:
        with JudgeServer(judge) as server:
            body = json.dumps({"env_instances": f"0-{episodes - 1}"}).encode()
            request = urllib.request.Request(
                server.url + "/submit", data=body, headers={"Content-Type": "application/json"}
            )
            started = time.perf_counter()
            with urllib.request.urlopen(request, timeout=3600) as response:
                summary = json.load(response)["summary"]
            elapsed = time.perf_counter() - started
    finally:
        judge.shutdown()
    assert summary["status"] == "ok" and not summary["errors"], summary
    return episodes / elapsed


def finalize_rate(env_id: str, episodes: int, workers: int, workdir: Path) -> float:
    spec = get_env(env_id)
    checkpoint = workdir / f"ck-{workers}"
    checkpoint.mkdir()
    (checkpoint / "policy.py").write_text(POLICIES[env_id])
    schemas = spec.describe()
    pool = WorkerPool(spec.model_dump(), workers, LimitsSection())
    pool.prewarm()
    time.sleep(5)
    try:
        job = WorkerJob(checkpoint, schemas.obs_space, schemas.action_space, {"env": env_id})
        tasks = [
            EpisodeTask(i, seed, i)
            for i, seed in enumerate(generate_splits(1, episodes, 1, 1).train)
        ]
        started = time.perf_counter()
        results = pool.run(job, tasks, record=False, max_steps=spec.max_episode_steps)
        elapsed = time.perf_counter() - started
    finally:
        pool.close()
    assert not any(r.error for r in results)
    return episodes / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--env",
        action="append",
        help="env ids (default: gym/cartpole, and gym/halfcheetah5 if MuJoCo is installed)",
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=0,
        help="episodes per measurement (default: 200 CartPole, 20 HalfCheetah)",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="workers for the finalize scaling measurement"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="best of N interleaved measurements (default 3)"
    )
    args = parser.parse_args()
    envs = args.env or ["gym/cartpole"]
    if not args.env:
        try:
            get_env("gym/halfcheetah5").describe()
            envs.append("gym/halfcheetah5")
        except Exception as exc:  # MuJoCo not installed: say so, measure the rest
            print(f"skipping gym/halfcheetah5: {exc}")
    for env_id in envs:
        episodes = args.episodes or (200 if env_id == "gym/cartpole" else 20)
        seeds = generate_splits(0, episodes, 1, 1).train
        plain = judged = one = many = 0.0
        for _ in range(args.repeats):  # interleaved, best of N: the machine's speed drifts
            workdir = Path(tempfile.mkdtemp(prefix="epg-bench-"))
            try:
                rate, steps = plain_loop(env_id, seeds)
                plain = max(plain, rate)
                judged = max(judged, judge_submit(env_id, episodes, workdir / "judge"))
                one = max(one, finalize_rate(env_id, episodes, 1, workdir))
                many = max(many, finalize_rate(env_id, episodes, args.workers, workdir))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
        print(f"{env_id}: {episodes} episodes, {steps / episodes:.0f} steps/episode")
        print(f"  plain loop            {plain:9.2f} episodes/s")
        print(f"  judge, 1 worker       {judged:9.2f} episodes/s   ratio {judged / plain:.2f}")
        print(f"  finalize, 1 worker    {one:9.2f} episodes/s   ratio {one / plain:.2f}")
        print(
            f"  finalize, {args.workers} workers   {many:9.2f} episodes/s   scaling {many / one:.2f}x"
        )


if __name__ == "__main__":
    main()
