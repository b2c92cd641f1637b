"""Test-only program (no MCP) started through the relay as a server would be: prints, as one
JSON line, the process state it inherited (umask, limits, nice, CPU affinity, ignored and
blocked signals, hash seed, parent), and the values of modules named with `--module`; then
`--hold` waits until its stdin closes, and `--on-usr1 FILE` waits for SIGUSR1 and writes it
down there before exiting."""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path


def _masks() -> dict[str, str]:
    with open("/proc/self/status", encoding="ascii") as status:
        return {
            k: v.strip()
            for k, _, v in (line.partition(":") for line in status)
            if k in ("SigIgn", "SigBlk")
        }


def main(argv: list[str]) -> None:
    umask = os.umask(0)
    os.umask(umask)
    said = {
        "pid": os.getpid(),
        "parent": os.getppid(),
        "umask": umask,
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "core": list(resource.getrlimit(resource.RLIMIT_CORE)),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "affinity": sorted(os.sched_getaffinity(0)),
        "masks": _masks(),
        "sigint": str(signal.getsignal(signal.SIGINT)),
        "hash": hash("farm"),
        "modules": {},
    }
    while "--module" in argv:
        name = argv.pop(argv.index("--module") + 1)
        argv.remove("--module")
        said["modules"][name] = getattr(importlib.import_module(name), "VALUE", None)
    usr1 = argv[argv.index("--on-usr1") + 1] if "--on-usr1" in argv else None
    if usr1 is not None:
        signal.signal(
            signal.SIGUSR1, lambda signum, _f: (Path(usr1).write_text(str(signum)), sys.exit(0))
        )
    print(json.dumps(said), flush=True)
    if "--hold" in argv:
        sys.stdin.read()
    if usr1 is not None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.05)
        sys.exit(3)


if __name__ == "__main__":
    main(sys.argv[1:])
