"""What `farm --help` costs in CPU against `celery --help`, measured side by side in one run.

    .venv/bin/python -m bench.cli_cost [--runs 10]

Each command runs `--runs` times, alternating, in a fresh process; the CPU time (user + system)
of each process is read from the kernel's accounting of finished children, and the median of
each command's runs is printed with the spread. The CLI imports its commands' heavy parts
(Celery, SQLAlchemy, the scorecard, the MCP SDK) only when a command runs, so the help costs
about what Python, Typer, Rich and the pydantic contracts cost to import.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    "farm --help": [str(BIN / "farm"), "--help"],
    "celery --help": [str(BIN / "celery"), "--help"],
}


def cpu_of(command: list[str]) -> float:
    """CPU seconds (user + system) one run of `command` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    env_note = "" if "PYTHONDONTWRITEBYTECODE" not in os.environ else " (no bytecode cache)"
    for command in COMMANDS.values():
        cpu_of(command)  # warm the bytecode cache and the page cache once
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            times[name].append(cpu_of(command))
    print(f"CPU per run, median of {args.runs} (min–max){env_note}:")
    for name, samples in times.items():
        print(
            f"  {name:<15} {statistics.median(samples):.3f} s  "
            f"({min(samples):.3f}–{max(samples):.3f})"
        )
    farm, celery = (statistics.median(times[name]) for name in COMMANDS)
    print(f"  farm / celery   {farm / celery:.2f}")


if __name__ == "__main__":
    main()
