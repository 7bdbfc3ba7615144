"""The cap on a train worker's frames: every recorded episode of the run's environment fits
under it, with its whole output, and it stays far below the 1 GiB any channel accepts."""

import msgspec
import numpy as np
import pytest

from evopolicygym.envs import get_env
from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.protocol import LimitsSection, Task
from evopolicygym.rollout import EpisodeRecorder, Watchdog, externalize, play_episode
from evopolicygym.rollout._bounds import STEP_EXTRA_BYTES, space_bytes, train_message_cap

LIMITS = LimitsSection()
# What a worker's channel encodes an episode result with.
ENCODER = msgspec.msgpack.Encoder(enc_hook=to_jsonsafe)


class LoudSampler:
    """Plays the world's own random actions as float64 arrays (a policy may return any form;
    this one encodes every number at its longest), and prints its whole output allowance
    every episode in 4-byte characters."""

    def __init__(self, world, lean: bool = False):
        self.world, self.lean = world, lean

    def reset(self, episode_index):
        print("\N{MUSICAL SYMBOL G CLEF}" * LIMITS.output_bytes)

    def act(self, obs):
        if self.lean:  # CartPole balanced to its 500-step limit
            return int(obs[2] + 0.5 * obs[3] > 0)
        return np.asarray(self.world.sample(), dtype=np.float64)


@pytest.fixture(scope="module")
def watchdog():
    dog = Watchdog()
    yield dog
    Watchdog.stop()


@pytest.mark.parametrize(
    "env_id",
    [
        "toy",
        "gym/cartpole",
        "gym/pendulum",
        "gym/taxi",
        pytest.param("gymnasium/MiniGrid-DoorKey-16x16-v0", marks=pytest.mark.core),
        pytest.param("gymnasium/FetchPush-v4", marks=pytest.mark.core),
    ],
)
def test_a_recorded_episode_with_all_its_output_fits_the_cap(watchdog, env_id):
    # Promise (SECURITY.md): the judge refuses a train worker's frame over what the run's
    # episodes can need, and a legitimate one always passes: these episodes play to the
    # environment's step cap (MiniGrid: 2560 steps of an image, a direction and a mission
    # string, stored in an .npz), print all they may, and are measured as the worker encodes
    # them. Each part of a step takes less than the bound allows it.
    spec = get_env(env_id)
    schemas = spec.describe()
    world = spec.make_world()
    recorder = EpisodeRecorder(
        world.observe,
        obs_external=spec.obs_storage == "external",
        compress_images=spec.compress_images,
    )
    policy = LoudSampler(world, lean=env_id == "gym/cartpole")
    done = play_episode(
        world,
        policy,
        Task(index=0, seed=3, episode_index=0),
        max_steps=spec.max_episode_steps,
        limits=LIMITS.model_dump(),
        watchdog=watchdog,
        recorder=recorder,
    )
    world.close()
    assert done.error is None and done.length == spec.max_episode_steps
    assert "characters cut" in done.stdout
    frame = 4 + len(ENCODER.encode(done))
    cap = train_message_cap(schemas.obs_space, schemas.action_space, spec.max_episode_steps, LIMITS)
    assert frame <= cap <= 128 * 2**20
    steps, length = done.steps, done.length
    observations = len(done.observations) or len(ENCODER.encode(steps.obs))
    assert observations / length <= space_bytes(schemas.obs_space)
    assert len(ENCODER.encode(steps.actions)) / length <= space_bytes(schemas.action_space)
    rest = ENCODER.encode([steps.rewards, steps.terminated, steps.truncated, steps.infos])
    assert len(rest) / length <= STEP_EXTRA_BYTES


def test_the_cap_never_exceeds_half_the_workers_memory_nor_a_gibibyte():
    # A worker holds a message and its framed copy at once: it cannot send more than half its
    # address space. Pong's 27000 steps of 210 x 160 x 3 frames would need more than either.
    pong = {"type": "Image", "shape": [210, 160, 3], "dtype": "uint8"}
    action = {"type": "Discrete", "n": 6}
    assert train_message_cap(pong, action, 27000, LIMITS) == 2**30
    small = LimitsSection(memory_bytes=2**30)
    assert train_message_cap(pong, action, 27000, small) == 2**29
    assert train_message_cap(action, action, 500, small) < 32 * 2**20


def test_an_image_the_recorder_cannot_stack_fits_its_list_form_bound():
    # A Tuple of an image and a number cannot be stacked into one array: the episode's
    # observations stay in the list form, about 2.3 bytes per pixel value, not 1.
    image = {"type": "Image", "shape": [64, 48, 3], "dtype": "uint8"}
    schema = {"type": "Tuple", "spaces": [image, {"type": "Discrete", "n": 4}]}
    frames = np.random.default_rng(0).integers(128, 256, (20, 64, 48, 3), dtype=np.uint8)
    raw = [(frame, step % 4) for step, frame in enumerate(frames)]
    assert externalize(raw, always=True, compress_images=False) == (None, None)
    listed = len(ENCODER.encode([to_jsonsafe(obs) for obs in raw])) / len(raw)
    assert 2 * frames[0].size < listed <= space_bytes(schema)
    assert space_bytes({"type": "Dict", "spaces": {"image": image}}) == frames[0].size + 36
