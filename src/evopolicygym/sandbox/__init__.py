"""Isolation of untrusted code: isolation levels and their probe, lane hosts (sandboxed fork
servers), the hardening a process applies before it runs policy code, process-tree control,
the typed message channel, and tree operations that never follow what untrusted code planted.

Names are loaded on first use (PEP 562): the probe that runs inside a candidate sandbox imports
only what it applies, not the message models, so it starts in milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evopolicygym._lazy import lazy_exports

_EXPORTS = {
    "bwrap_prefix": "_bwrap",
    "interpreter_paths": "_bwrap",
    "DEFAULT_MAX_BYTES": "_framing",
    "Channel": "_framing",
    "ChannelClosed": "_framing",
    "FrameError": "_framing",
    "FrameTimeout": "_framing",
    "channel_pair": "_framing",
    "TreeLimits": "_fstree",
    "TreeRefused": "_fstree",
    "copy_tree": "_fstree",
    "open_directory": "_fstree",
    "opened_directory": "_fstree",
    "real_directory": "_fstree",
    "remove_entry": "_fstree",
    "remove_path": "_fstree",
    "write_file": "_fstree",
    "harden": "_harden",
    "lower_rlimits": "_harden",
    "HostError": "_launch",
    "HostProcess": "_launch",
    "SpawnRefused": "_launch",
    "SpawnedChild": "_launch",
    "sandbox_environment": "_launch",
    "IsolationLevel": "_levels",
    "IsolationPlan": "_levels",
    "IsolationUnavailable": "_levels",
    "probe": "_levels",
    "probe_soon": "_levels",
    "become_subreaper": "_proctree",
    "children": "_proctree",
    "die_with_parent": "_proctree",
    "forbid_inspection": "_proctree",
    "kill_descendants": "_proctree",
    "reap": "_proctree",
    "sweep_children": "_proctree",
    "wait_exit": "_proctree",
}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Channel",
    "ChannelClosed",
    "FrameError",
    "FrameTimeout",
    "HostError",
    "HostProcess",
    "IsolationLevel",
    "IsolationPlan",
    "IsolationUnavailable",
    "SpawnRefused",
    "SpawnedChild",
    "TreeLimits",
    "TreeRefused",
    "become_subreaper",
    "bwrap_prefix",
    "channel_pair",
    "children",
    "copy_tree",
    "die_with_parent",
    "forbid_inspection",
    "harden",
    "interpreter_paths",
    "kill_descendants",
    "lower_rlimits",
    "open_directory",
    "opened_directory",
    "probe",
    "probe_soon",
    "real_directory",
    "reap",
    "remove_entry",
    "remove_path",
    "sandbox_environment",
    "sweep_children",
    "wait_exit",
    "write_file",
]

if TYPE_CHECKING:
    from ._bwrap import bwrap_prefix, interpreter_paths
    from ._framing import (
        DEFAULT_MAX_BYTES,
        Channel,
        ChannelClosed,
        FrameError,
        FrameTimeout,
        channel_pair,
    )
    from ._fstree import (
        TreeLimits,
        TreeRefused,
        copy_tree,
        open_directory,
        opened_directory,
        real_directory,
        remove_entry,
        remove_path,
        write_file,
    )
    from ._harden import harden, lower_rlimits
    from ._launch import (
        HostError,
        HostProcess,
        SpawnedChild,
        SpawnRefused,
        sandbox_environment,
    )
    from ._levels import IsolationLevel, IsolationPlan, IsolationUnavailable, probe, probe_soon
    from ._proctree import (
        become_subreaper,
        children,
        die_with_parent,
        forbid_inspection,
        kill_descendants,
        reap,
        sweep_children,
        wait_exit,
    )


__getattr__ = lazy_exports(__name__, _EXPORTS)
