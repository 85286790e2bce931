"""The sandbox an agent CLI runs in (docs/operations/security.md): its own network, no
capability, Landlock and seccomp, applied by a tiny exec wrapper.

    python -I sandbox.py [--read PATH]... [--write PATH]... [--connect PORT]...
                         [--proxy PORT --channel FD] -- CMD [ARG ...]
    python -m council.agents.runtimes.sandbox ... -- CMD [ARG ...]      (the same)

With ``--proxy`` the wrapper first moves into a network namespace of its own (and, run
by a user other than root, a user namespace that maps only that user), whose one
interface is its own loopback, brings it up and listens there on 127.0.0.1:PORT; it
hands that listening socket to the worker over the Unix socket ``FD``, and the
worker's provider proxy serves it (``proxy.py``: a socket stays in the namespace it
was made in, so the proxy accepts the CLI's connections there and reaches the provider
from its own). So the CLI reaches its proxy and nothing else, by host and port: no
other address, local (127.0.0.2, Redis, Postgres) or remote, is in its namespace.
Then it drops every capability — the bounding and ambient sets emptied, the permitted,
effective and inheritable ones cleared — so a CLI started by a worker running as root
holds none (``CapEff`` 0; no raw sockets, no netlink); sets ``no_new_privs``,
restricts itself with a Landlock ruleset and a seccomp filter and ``exec``s CMD, which inherits all of it
with its children; none of it can be lifted. Under it a process may

- read (and execute) only the ``--read`` paths and a minimal system set
  (``/usr``, ``/lib*``, ``/bin``, ``/sbin``, a few files of ``/etc``, the
  harmless ``/dev`` nodes, ``/proc/self`` of the CLI's own process and a few
  global ``/proc`` files);
- write only beneath the ``--write`` paths (its isolated home, its output
  and temporary folders) and to ``/dev/null``;
- connect over TCP only to the ``--connect`` ports (kernel ABI 4 and later);
- not send signals to, connect to the abstract Unix sockets of, or ptrace
  any process outside it (ABI 6 and later; ptrace is refused on every ABI),
  which also keeps it from ``/proc/<pid>/environ`` of Council's processes;
- not create a Unix socket (a seccomp filter: Landlock does not govern
  connecting to one by its path, such as a database's), nor use io_uring.

It does not hide what every process may see: ``uname``, the process list's ids.
Without ``--proxy`` (a CLI on its own login, which talks to its provider itself) it
keeps the machine's network, limited to the ``--connect`` ports, UDP (DNS) included.
Standard library only (``ctypes`` syscalls), so it starts in milliseconds.
``COUNCIL_AGENT_SANDBOX=off`` (read by the caller, never here) runs a CLI without it.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import socket
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

MODE_ENV = "COUNCIL_AGENT_SANDBOX"

# syscall numbers: the same on x86_64 and aarch64 (the generic table)
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_CAPSET, _CAP_VERSION_3 = {"x86_64": 126, "aarch64": 91}, 0x20080522

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ALL_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_READ = EXECUTE | READ_FILE | READ_DIR
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

SYSTEM_READ = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/alternatives",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/version",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
)
SYSTEM_WRITE = ("/dev/null",)


class SandboxError(RuntimeError):
    """The sandbox cannot be set up here (no Landlock, or a rule refused)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    if platform.system() != "Linux":
        return 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return int(version) if version > 0 else 0


def unavailable_reason() -> str | None:
    """Why this machine cannot sandbox an agent CLI (None: it can)."""
    found = abi()
    if found == 0:
        return (
            f"this kernel ({platform.release()}) has no Landlock (or it is disabled), so an agent CLI "
            f"cannot be sandboxed; set {MODE_ENV}=off to run CLIs unsandboxed (they could then read "
            "anything this user can)"
        )
    return None


def restrict(read: Sequence[str], write: Sequence[str], connect: Sequence[int]) -> int:
    """Restrict this process (and what it executes) as the module says; the ABI used."""
    version = abi()
    if version == 0:
        raise SandboxError(unavailable_reason() or "no Landlock")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled_fs = _ALL_FS_BY_ABI.get(version, (1 << 16) - 1)
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = ctypes.sizeof(ctypes.c_uint64)  # ABI 1-3 know only the fs field
    if version >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 2 * ctypes.sizeof(ctypes.c_uint64)
    if version >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = ctypes.sizeof(_RulesetAttr)
    fd = libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        raise SandboxError(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path in [*SYSTEM_READ, *read]:
            _allow_path(libc, fd, path, _READ & handled_fs)
        for path in [*SYSTEM_WRITE, *write]:
            _allow_path(libc, fd, path, handled_fs)
        for port in connect if version >= 4 else ():
            rule = _NetPortAttr(_NET_CONNECT_TCP, port)
            if libc.syscall(ctypes.c_long(_ADD_RULE), fd, _RULE_NET_PORT, ctypes.byref(rule), 0) < 0:
                raise SandboxError(f"landlock_add_rule port {port}: {os.strerror(ctypes.get_errno())}")
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SandboxError(f"prctl(no_new_privs): {os.strerror(ctypes.get_errno())}")
        if libc.syscall(ctypes.c_long(_RESTRICT_SELF), fd, 0) < 0:
            raise SandboxError(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
    _no_unix_sockets(libc)
    return version


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


# (AUDIT_ARCH, socket's syscall number) of the architectures the filter knows
_ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
_IO_URING_SETUP = 425
_AF_UNIX = 1


def _no_unix_sockets(libc: ctypes.CDLL) -> None:
    """A seccomp filter: ``socket(AF_UNIX, …)`` fails with EACCES. Landlock does not govern
    connecting to a Unix socket by its path (a database's, say), so the CLI may not make one
    to connect with; ``socketpair`` (its own pipes) still works. ``io_uring_setup`` fails
    too (its operations pass by seccomp), and so does every syscall of another ABI."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        raise SandboxError(f"no seccomp filter for {platform.machine()}")
    audit_arch, socket_nr = arch
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 13  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
    program = [
        (ld, 0, 0, 4),  # 0: arch
        (jeq, 0, 7, audit_arch),  # 1: another ABI -> deny
        (ld, 0, 0, 0),  # 2: syscall number
        (jge, 5, 0, 0x40000000),  # 3: x32 -> deny
        (jeq, 4, 0, _IO_URING_SETUP),  # 4: -> deny
        (jeq, 0, 2, socket_nr),  # 5: not socket -> allow
        (ld, 0, 0, 16),  # 6: socket's domain (args[0], low half)
        (jeq, 1, 0, _AF_UNIX),  # 7: AF_UNIX -> deny
        (ret, 0, 0, allow),  # 8
        (ret, 0, 0, deny),  # 9
    ]
    filters = (_SockFilter * len(program))(*[_SockFilter(*i) for i in program])
    fprog = _SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise SandboxError(f"prctl(seccomp): {os.strerror(ctypes.get_errno())}")


def _allow_path(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # a system path this machine does not have
    except OSError as exc:
        raise SandboxError(f"cannot open {path} for a rule: {exc.strerror}") from None
    try:
        if not Path(f"/proc/self/fd/{target}").is_dir():
            access &= _FILE_RIGHTS
        rule = _PathBeneathAttr(access, target)
        if libc.syscall(ctypes.c_long(_ADD_RULE), ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) < 0:
            raise SandboxError(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(target)


def own_network(proxy_port: int, channel: int) -> None:
    """Move into a network namespace of its own with only its loopback, up; listen there on
    127.0.0.1:``proxy_port`` and hand the listening socket to the worker over ``channel``."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWNET if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise SandboxError(
            f"unshare (a network namespace of its own): {os.strerror(ctypes.get_errno())}"
            + ("" if uid == 0 else " (unprivileged user namespaces may be disabled on this machine)")
        )
    if uid != 0:  # map only this user, as itself
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            Path(f"/proc/self/{name}").write_text(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(control, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(control, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))
    listener = socket.create_server(("127.0.0.1", proxy_port), backlog=64)
    with listener, socket.socket(fileno=channel) as handoff:
        socket.send_fds(handoff, [b"L"], [listener.fileno()])


def no_capabilities() -> None:
    """Drop every capability for good: the bounding set (so an exec as root regains none)
    and the ambient set emptied, then the permitted, effective and inheritable sets cleared."""
    libc = _libc()
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: unknown
            raise SandboxError(f"prctl(PR_CAPBSET_DROP, {cap}): {os.strerror(ctypes.get_errno())}")
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    number = _CAPSET.get(platform.machine())
    if number is None:
        raise SandboxError(f"no capset syscall number for {platform.machine()}")
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two (effective, permitted, inheritable) words, all zero
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)) != 0:
        raise SandboxError(f"capset: {os.strerror(ctypes.get_errno())}")


def wrapper(
    read: Sequence[str], write: Sequence[str], connect: Sequence[int], *, proxy: tuple[int, int] | None = None
) -> list[str]:
    """The argv prefix that runs a command under this sandbox (append ``--`` and the command);
    ``proxy``: (its port, the fd of the Unix socket the listening socket goes back over)."""
    argv = [sys.executable, "-I", str(Path(__file__).resolve())]
    for path in read:
        argv += ["--read", str(path)]
    for path in write:
        argv += ["--write", str(path)]
    for port in connect:
        argv += ["--connect", str(port)]
    if proxy is not None:
        argv += ["--proxy", str(proxy[0]), "--channel", str(proxy[1])]
    return argv


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(
            "usage: sandbox.py [--read P] [--write P] [--connect PORT] [--proxy PORT --channel FD] "
            "-- COMMAND [ARG ...]",
            file=sys.stderr,
        )
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    given: dict[str, list[str]] = {
        "--read": [],
        "--write": [],
        "--connect": [],
        "--proxy": [],
        "--channel": [],
    }
    while options:
        flag = options.pop(0)
        if flag not in given or not options:
            print(f"sandbox: unknown or incomplete option {flag!r}", file=sys.stderr)
            return 2
        given[flag].append(options.pop(0))
    try:
        if given["--proxy"]:
            own_network(int(given["--proxy"][0]), int(given["--channel"][0]))
        no_capabilities()
        restrict(given["--read"], given["--write"], [int(p) for p in given["--connect"]])
    except (SandboxError, ValueError, OSError, IndexError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)  # noqa: S606 (the CLI, by its argv; no shell)
    except OSError as exc:
        print(f"sandbox: cannot start {command[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
