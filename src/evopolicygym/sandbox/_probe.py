"""Self test run by the isolation probe inside a candidate sandbox: apply the policy
hardening to this process, check that it holds, and print one JSON line."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

from . import _landlock, _seccomp
from ._harden import drop_capabilities, no_new_privileges, policy_paths


def main() -> None:
    no_new_privileges()
    if os.geteuid() == 0:
        drop_capabilities()
    abi = _landlock.abi_version()
    if abi:
        readable, writable = policy_paths(Path(tempfile.gettempdir()))
        _landlock.restrict(readable, writable, abi)
    _seccomp.install_filter()
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        refused = False
    except PermissionError:
        refused = True
    socket.socketpair()[0].close()
    print(json.dumps({"seccomp": refused, "landlock_abi": abi, "uid": os.getuid()}))


if __name__ == "__main__":
    main()
