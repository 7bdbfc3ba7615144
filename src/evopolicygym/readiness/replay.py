"""Level L3's replay: the judge's two ways of playing an episode agree on an environment.

A train worker plays an episode in one process, policy and world together; hidden evaluation
plays it in a sealed worker, the policy in a process of its own, several episodes in lock step
on worlds built side by side. The same checkpoint on the same case must give the same episode
either way, or what the judge scores is not what train feedback showed. The built-in random
policy (a checkpoint that replays its actions from the episode index) plays a few short
episodes both ways on one lane at the strongest isolation level the machine offers.
"""

from __future__ import annotations

from importlib.resources import files

from evopolicygym.envs import EnvSpec, SpaceSchemas
from evopolicygym.judge.checkpoint import files_hash
from evopolicygym.protocol import CheckpointFile, LimitsSection, LoadFailed
from evopolicygym.rollout import EpisodeResult, EpisodeTask, WorkerJob, WorkerPool

# Few, short episodes: the check is about how episodes are played, not about the policy. Two
# play side by side in hidden evaluation (the least that runs sibling worlds).
REPLAY_SEEDS = (11, 12)
REPLAY_STEPS = 20


def random_policy() -> str:
    """The built-in random policy's source (``builtin:random``'s checkpoint)."""
    return (files("evopolicygym.agents.builtin") / "policy_random.py").read_text()


def replay_differences(
    spec: EnvSpec, schemas: SpaceSchemas, source: str | None = None
) -> list[str]:
    """What differs between the train and hidden episodes of ``spec`` played by the policy
    ``source`` (the random policy by default); empty when nothing does. A train episode that
    fails is a difference too (the random policy never fails by itself). Runs real workers:
    about a second, a minute for a browser."""
    code = random_policy() if source is None else source
    checkpoint = [CheckpointFile("policy.py", code.encode())]
    job = WorkerJob(
        checkpoint,
        files_hash(checkpoint),
        schemas.obs_space,
        schemas.action_space,
        {"env": spec.id},
    )
    tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(REPLAY_SEEDS)]
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection())
    try:
        train = pool.run(job, tasks, record=False, max_steps=REPLAY_STEPS)
        hidden = pool.run(job, tasks, record=False, sealed=True, max_steps=REPLAY_STEPS)
    finally:
        pool.close()
    for way, outcome in (("train", train), ("hidden", hidden)):
        if isinstance(outcome, LoadFailed):
            return [f"the random policy did not load in a {way} worker: {outcome.message}"]
    problems = [
        f"train episode {r.index} failed: {r.error.category}: {r.error.message}"
        for r in train
        if r.error is not None
    ]
    problems += [
        f"episode {a.index}: train {_played(a)}, hidden {_played(b)}"
        for a, b in zip(train, hidden, strict=True)
        if _played(a) != _played(b)
    ]
    return problems


def _played(result: EpisodeResult) -> str:
    if result.error is not None:
        return f"{result.error.category} after {result.length} steps ({result.error.message})"
    return f"return {result.episode_return!r} in {result.length} steps"
