"""A seccomp-bpf filter for processes that run policy code, assembled by hand (no libseccomp
needed, so it works from any interpreter).

Refused with ``EPERM``: sockets of any family but ``AF_UNIX`` (no network, no netlink, no raw
packets), ``ptrace`` and ``process_vm_readv``/``writev`` (no reading or patching another
process), namespaces and mounts (``unshare``, ``setns``, ``mount``..., ``clone`` with a
``CLONE_NEW*`` flag), kernel-facing calls no policy needs (``bpf``, ``perf_event_open``,
``userfaultfd``, ``io_uring_*``, keyrings, modules, ``kexec``, ``reboot``, swap, accounting),
objects that hold memory outside ``RLIMIT_AS`` or outlive the process and its sandbox
(``memfd_create``, System V shared memory, message queues and semaphores, POSIX message queues),
and ``sched_setaffinity`` (a policy plays on the CPU its lane claimed; its worker moves it there
before the filter, and a sealed worker moves its policy process from outside).
``clone3`` answers ``ENOSYS`` (its flags sit in memory the filter cannot read; the C library then
falls back to ``clone``). System calls of another ABI (i386, x32) are refused too.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

# Syscall numbers, from the kernel's uapi headers (x86_64: asm/unistd_64.h; aarch64:
# asm-generic/unistd.h).
_X86_64 = {
    "socket": 41,
    "socketpair": 53,
    "clone": 56,
    "clone3": 435,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "quotactl": 179,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "fanotify_init": 300,
    "mount_setattr": 442,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "syslog": 103,
    "kcmp": 312,
    "pidfd_getfd": 438,
    "memfd_create": 319,
    "shmget": 29,
    "shmat": 30,
    "shmdt": 67,
    "shmctl": 31,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "semget": 64,
    "semop": 65,
    "semtimedop": 220,
    "semctl": 66,
    "mq_open": 240,
    "sched_setaffinity": 203,
}
_AARCH64 = {
    "socket": 198,
    "socketpair": 199,
    "clone": 220,
    "clone3": 435,
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "unshare": 97,
    "setns": 268,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "bpf": 280,
    "perf_event_open": 241,
    "userfaultfd": 282,
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "kexec_load": 104,
    "kexec_file_load": 294,
    "init_module": 105,
    "finit_module": 273,
    "delete_module": 106,
    "reboot": 142,
    "swapon": 224,
    "swapoff": 225,
    "acct": 89,
    "quotactl": 60,
    "open_by_handle_at": 265,
    "name_to_handle_at": 264,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "fanotify_init": 262,
    "mount_setattr": 442,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "syslog": 116,
    "kcmp": 272,
    "pidfd_getfd": 438,
    "memfd_create": 279,
    "shmget": 194,
    "shmat": 196,
    "shmdt": 197,
    "shmctl": 195,
    "msgget": 186,
    "msgsnd": 189,
    "msgrcv": 188,
    "msgctl": 187,
    "semget": 190,
    "semop": 193,
    "semtimedop": 192,
    "semctl": 191,
    "mq_open": 180,
    "sched_setaffinity": 122,
}
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}
_SECCOMP_SYSCALL = {"x86_64": 317, "aarch64": 277}
_SPECIAL = {"socket", "socketpair", "clone", "clone3"}

_AF_UNIX = 1
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
_CLONE_NAMESPACES |= 0x20000000 | 0x40000000
_X32_SYSCALL_BIT = 0x40000000

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16
_INSTRUCTION_BYTES = 8  # struct sock_filter: u16 code, u8 jt, u8 jf, u32 k


class SeccompUnavailable(RuntimeError):
    """This machine's architecture or kernel cannot take the filter."""


def supported() -> bool:
    return platform.machine() in _ARCHES


def _program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions, jumps resolved."""
    audit_arch, numbers = _ARCHES[machine]
    denied = [nr for name, nr in numbers.items() if name not in _SPECIAL]
    # Layout: header, one check per denied call, the special cases, then the return blocks
    # (classic BPF jumps only forward).
    program: list[tuple[str, int, object, object, int]] = []

    def emit(code: int, k: int = 0, jt: object = 0, jf: object = 0) -> None:
        program.append(("", code, jt, jf, k))

    emit(_LD_W_ABS, _OFFSET_ARCH)
    emit(_JEQ_K, audit_arch, 0, "enosys")
    emit(_LD_W_ABS, _OFFSET_NR)
    if machine == "x86_64":
        emit(_JGE_K, _X32_SYSCALL_BIT, "eperm", 0)
    for nr in denied:
        emit(_JEQ_K, nr, "eperm", 0)
    emit(_JEQ_K, numbers["socket"], "socket", 0)
    emit(_JEQ_K, numbers["socketpair"], "socket", 0)
    emit(_JEQ_K, numbers["clone"], "clone", 0)
    emit(_JEQ_K, numbers["clone3"], "enosys", 0)
    labels: dict[str, int] = {}

    def label(name: str) -> None:
        labels[name] = len(program)

    emit(_RET_K, _RET_ALLOW)
    label("socket")
    emit(_LD_W_ABS, _OFFSET_ARG0)
    emit(_JEQ_K, _AF_UNIX, "allow", "eperm")
    label("clone")
    emit(_LD_W_ABS, _OFFSET_ARG0)
    emit(_JSET_K, _CLONE_NAMESPACES, "eperm", "allow")
    label("allow")
    emit(_RET_K, _RET_ALLOW)
    label("eperm")
    emit(_RET_K, _RET_ERRNO | errno.EPERM)
    label("enosys")
    emit(_RET_K, _RET_ERRNO | errno.ENOSYS)

    resolved = []
    for position, (_, code, jt, jf, k) in enumerate(program):

        def offset(target: object, position: int = position) -> int:
            if isinstance(target, int):
                return target
            distance = labels[str(target)] - position - 1
            if not 0 <= distance <= 255:
                raise AssertionError("seccomp jump out of range")
            return distance

        resolved.append((code, offset(jt), offset(jf), k))
    return resolved


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def compile_filter() -> bytes:
    """The filter for this machine's architecture, as the kernel takes it; raises
    :class:`SeccompUnavailable` on another architecture."""
    machine = platform.machine()
    if machine not in _ARCHES:
        raise SeccompUnavailable(f"no seccomp filter for the {machine} architecture")
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in _program(machine))


def install_filter(program: bytes | None = None) -> None:
    """Install the filter (``program``, compiled now when None) on this process and all its
    threads (needs ``no_new_privs`` or ``CAP_SYS_ADMIN``). Irreversible; inherited by every
    child."""
    raw = compile_filter() if program is None else program
    buffer = ctypes.create_string_buffer(raw, len(raw))
    prog = _SockFprog(len(raw) // _INSTRUCTION_BYTES, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog): every thread at once.
    result = libc.syscall(_SECCOMP_SYSCALL[platform.machine()], 1, 1, ctypes.byref(prog))
    if result != 0:
        code = ctypes.get_errno()
        raise SeccompUnavailable(f"seccomp filter refused: {os.strerror(code)}")
