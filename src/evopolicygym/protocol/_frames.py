"""Messages between the judge and its sandboxed processes, declared once and decoded on both
sides (msgspec: typed, validated, and cheap enough for per-step traffic).

Three channels, each a stream of length-prefixed MessagePack frames (``sandbox.Channel``):

* **host** (judge <-> lane host): the host is a pristine process inside a lane's sandbox that
  has imported every library and forks workers on request. :class:`Spawn` / :class:`Spawned`
  (the reply carries three file descriptors: the child's channel, its stdout and its stderr),
  :class:`Kill`, :class:`Exited` (sent whenever a child ends, with its wait status).
* **worker** (judge <-> environment worker): :class:`WorkerUp` once the environment is built,
  then per checkpoint :class:`Load` -> :class:`Loaded` | :class:`LoadFailed`, then
  :class:`RunEpisodes` -> one :class:`EpisodeDone` per task, in completion order.
* **policy** (inside a sealed worker, hidden evaluation only): the worker asks its pristine
  policy zygote for a policy process ahead of need (:class:`ForkPolicy` -> :class:`PolicyForked`,
  later :class:`PolicyEnded`); the policy process prepares and waits for its :class:`Load`,
  answers :class:`PolicyLoaded` | :class:`LoadFailed`, then lock-step :class:`Step` ->
  :class:`Acted`.
  These two are sent every round of lock-step evaluation.

Everything a sandboxed process sends is untrusted: decoders reject unknown message types,
unknown fields and wrong types, and the judge caps frame sizes.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ._verdicts import EpisodeErrorKind, Verdict


class _Message(msgspec.Struct, tag_field="op", forbid_unknown_fields=True):
    """Base of every framed message; ``op`` on the wire names the message type."""


# -- host channel ------------------------------------------------------------------------------


class HostUp(_Message, tag="host_up"):
    """The host imported its libraries and waits for :class:`Spawn` requests; ``modules``
    lists the files they were imported from (the judge fingerprints them)."""

    pid: int
    modules: list[str] = []


class Spawn(_Message, tag="spawn"):
    """Fork a child that calls ``entry`` (``"module:function"``) with its channel descriptor and
    ``argument``. ``child`` is the judge's name for it, unique per host."""

    child: int
    entry: str
    argument: bytes


class Spawned(_Message, tag="spawned"):
    """Reply to :class:`Spawn`, carrying the child's channel, stdout and stderr descriptors."""

    child: int
    pid: int


class SpawnFailed(_Message, tag="spawn_failed"):
    """Reply to :class:`Spawn` when the host could not fork (the lane's process cap is full,
    say, while a policy holds every slot); the host itself goes on serving."""

    child: int
    message: str


class Kill(_Message, tag="kill"):
    """Kill a child and every process it left behind."""

    child: int


class Exited(_Message, tag="exited"):
    """A child ended (by itself or by :class:`Kill`). ``status`` is its raw wait status;
    ``strays`` counts descendants the host had to kill after it."""

    child: int
    status: int
    strays: int


HostReply = HostUp | Spawned | SpawnFailed | Exited
HostRequest = Spawn | Kill


# -- worker channel ----------------------------------------------------------------------------


class WorkerConfig(msgspec.Struct, forbid_unknown_fields=True):
    """What a worker is started with (the ``argument`` of its :class:`Spawn`). Holds no path
    of the run and no seed. ``core`` is the CPU the worker plays on once its checkpoint arrives
    (a sealed worker's policy process shares it), ``boot_cpus`` the CPUs it runs on until then
    (None: its host's); ``slots`` is how many episodes a sealed worker steps in lock step;
    ``landlock_abi`` and ``seccomp`` say which hardening policy code runs under (from the
    isolation plan)."""

    env_spec: dict[str, Any]
    limits: dict[str, Any]
    sealed: bool
    core: int | None = None
    boot_cpus: list[int] | None = None
    slots: int = 1
    landlock_abi: int = 0
    seccomp: bool = False


class CheckpointFile(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One file of a checkpoint, by path relative to ``system/``; ``link`` is the target of a
    symbolic link (then ``data`` is empty)."""

    path: str
    data: bytes
    link: str | None = None


class WorkerUp(_Message, tag="worker_up"):
    """The worker built its environment (``env_error`` says why it could not). A train worker
    also sends the schemas of its world's spaces (``World.describe``; None when its world has no
    such method), before it has seen any policy code."""

    env_error: str | None = None
    obs_space: dict[str, Any] | None = None
    action_space: dict[str, Any] | None = None


class Load(_Message, tag="load"):
    """Load a checkpoint: its files (verified against ``tree_hash`` by the judge before
    sending) and the three constructor arguments of ``Policy``. ``episodes``, when not 0, is
    how many episodes the checkpoint will play there: a sealed policy process builds no more
    ``Policy`` instances than that."""

    files: list[CheckpointFile]
    tree_hash: str
    obs_space: dict[str, Any]
    action_space: dict[str, Any]
    env_meta: dict[str, Any]
    episodes: int = 0


class Loaded(_Message, tag="loaded"):
    """``Policy`` was constructed; ``stdout``/``stderr`` hold what the import and ``__init__``
    printed (prepended to the first episode's output). ``instances`` counts the policy objects
    built (sealed evaluation steps several episodes in lock step)."""

    stdout: str = ""
    stderr: str = ""
    instances: int = 1


class LoadFailed(_Message, tag="load_failed"):
    """The checkpoint could not be imported or constructed; the whole call gets ``verdict``."""

    verdict: Verdict
    message: str
    traceback: str | None = None
    stdout: str = ""
    stderr: str = ""


class Task(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One episode: its position in the batch, its case seed and the ``reset`` argument."""

    index: int
    seed: int
    episode_index: int


class RunEpisodes(_Message, tag="run_episodes"):
    """Play ``tasks`` with the loaded checkpoint. ``record`` asks for trajectories;
    ``obs_external``/``compress_images`` choose how recorded observations are stored."""

    tasks: list[Task]
    max_steps: int
    record: bool
    obs_external: bool = False
    compress_images: bool = False


class EpisodeError(msgspec.Struct, forbid_unknown_fields=True):
    """Why an episode ended early, with the policy's traceback when there is one."""

    category: EpisodeErrorKind
    message: str
    traceback: str | None = None
    step_index: int | None = None


class Steps(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The steps of a recorded episode, column by column (the judge writes them as the rows of
    ``trajectory.jsonl``): ``obs`` is empty when the observations are stored in a file."""

    obs: list[Any]
    actions: list[Any]
    rewards: list[float]
    terminated: list[bool]
    truncated: list[bool]
    infos: list[dict[str, Any]]


class EpisodeDone(_Message, tag="episode_done"):
    """One finished (or failed) episode. ``steps`` are its recorded steps and ``observations``
    the ``.npy``/``.npz`` bytes (``obs_format``, the file's suffix) when it was recorded."""

    index: int
    episode_return: float
    length: int
    error: EpisodeError | None = None
    stdout: str = ""
    stderr: str = ""
    obs_format: Literal["npy", "npz"] | None = None
    steps: Steps | None = None
    observations: bytes = b""

    @property
    def timed_out(self) -> bool:
        return self.error is not None and self.error.category in (
            EpisodeErrorKind.ACT_TIMEOUT,
            EpisodeErrorKind.EPISODE_TIMEOUT,
        )


WorkerReply = WorkerUp | Loaded | LoadFailed | EpisodeDone
WorkerRequest = Load | RunEpisodes


# -- policy channel (inside a sealed worker) ---------------------------------------------------


class ForkPolicy(_Message, tag="fork_policy"):
    """Worker -> its policy zygote: fork a sealed policy process that will build ``slots``
    instances of the checkpoint it is then sent (:class:`Load`, on its own channel). Carries two
    descriptors: the policy process's end of that channel, and its marker (a one-page memory
    file the worker maps too; see ``rollout/_sealed.py``). Every policy process gets a marker of
    its own: memory shared with later policy processes would carry what one checkpoint learnt
    in hidden episodes to the next."""

    slots: int


class PolicyForked(_Message, tag="policy_forked"):
    """Zygote -> worker: the policy process started."""

    pid: int


class PolicyEnded(_Message, tag="policy_ended"):
    """Zygote -> worker: a policy process ended with raw wait ``status``."""

    pid: int
    status: int


ZygoteReply = PolicyForked | PolicyEnded


class PolicyLoaded(_Message, tag="policy_loaded"):
    """The sealed policy process built ``instances`` independent ``Policy`` objects."""

    instances: int


class ArrayBlock(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One C-order array as raw bytes (``dtype`` a NumPy dtype string): a round's observations
    or actions, one row per slot, instead of a nested list per slot."""

    dtype: str
    shape: list[int]
    data: bytes


class Step(_Message, tag="step"):
    """One lock-step round: ``resets`` are ``[slot, episode_index, seconds]`` for slots starting
    an episode (called before the round's actions), ``acts`` are ``[slot, observation,
    seconds]``; ``seconds`` is the time limit of that call. With a ``block``, the observations
    are its rows, given to the policy as their list forms (what ``to_jsonsafe`` makes of them),
    and those in ``acts`` are None."""

    resets: list[tuple[int, int, float]]
    acts: list[tuple[int, Any, float]]
    block: ArrayBlock | None = None


class SlotError(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A policy call of one slot failed (``call`` is ``"reset"`` or ``"act"``): the episode
    ends with ``category``."""

    slot: int
    call: str
    category: EpisodeErrorKind
    message: str
    traceback: str | None = None


class Acted(_Message, tag="acted"):
    """Reply to :class:`Step`: one JSON-safe action per entry of ``acts`` (``None`` where that
    slot failed), the failures of resets and actions, and per entry of ``acts`` the seconds that
    slot's calls took this round (its reset and its act): the worker charges each episode's
    wall-time limit with its own calls, not with its neighbours'.

    With a ``block`` (native float64, one row per entry of ``acts``), the actions are its rows:
    each was a list of Python floats, all of one length (what a policy for a vector action
    space returns), and ``actions`` is empty. The worker checks such a reply's shape."""

    actions: list[Any]
    errors: list[SlotError]
    seconds: list[float]
    block: ArrayBlock | None = None


PolicyRequest = Load | Step
PolicyReply = PolicyLoaded | LoadFailed | Acted
