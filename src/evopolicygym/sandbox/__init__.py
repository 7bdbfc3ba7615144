"""Isolation of untrusted code: isolation levels and their probe, lane hosts (sandboxed fork
servers), the hardening a process applies before it runs policy code, process-tree control and
the typed message channel."""

from ._bwrap import bwrap_prefix, interpreter_paths
from ._framing import Channel, FrameError, FrameTimeout, channel_pair
from ._harden import harden, lower_rlimits
from ._launch import HostError, HostProcess, SpawnedChild, sandbox_environment
from ._levels import IsolationLevel, IsolationPlan, IsolationUnavailable, probe
from ._proctree import (
    become_subreaper,
    die_with_parent,
    forbid_inspection,
    kill_descendants,
    reap,
    sweep_children,
)

__all__ = [
    "Channel",
    "FrameError",
    "FrameTimeout",
    "HostError",
    "HostProcess",
    "IsolationLevel",
    "IsolationPlan",
    "IsolationUnavailable",
    "SpawnedChild",
    "become_subreaper",
    "bwrap_prefix",
    "channel_pair",
    "die_with_parent",
    "forbid_inspection",
    "harden",
    "interpreter_paths",
    "kill_descendants",
    "lower_rlimits",
    "probe",
    "reap",
    "sandbox_environment",
    "sweep_children",
]
