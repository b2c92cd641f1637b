"""The farm installs beside the package index's `schema` package: one import root, no clash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WHEELS = Path(os.environ.get("FARM_WHEEL_CACHE", Path.home() / ".cache" / "mcp-farm" / "wheels"))
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".tools", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
)


def run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.integration
def test_farm_and_the_index_schema_package_share_one_virtualenv(tmp_path: Path) -> None:
    schema_wheels = sorted(WHEELS.glob("schema-*.whl"))
    assert schema_wheels, f"no schema wheel in {WHEELS}: run `bash scripts/setup.sh --dev`"

    # Build the farm's wheel from a copy, so the build leaves nothing in the checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=COPY_IGNORE)
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        tmp_path / "dist",
        source,
    )
    farm_wheel = next((tmp_path / "dist").glob("mcp_farm-*.whl"))

    # A bare virtualenv that borrows the farm's dependencies from this one by a plain path line
    # (the farm's own editable hook there is not run), then gets both packages installed.
    scratch = tmp_path / "venv"
    venv.create(scratch, with_pip=False)
    bin_dir = scratch / "bin"
    python = bin_dir / "python"
    site = Path(
        run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        farm_wheel,
        schema_wheels[-1],
    )

    probe = (
        "import schema, mcp_farm.schema, mcp_farm.scheduler.cli.app\n"
        "print(schema.Schema(int).validate(3), mcp_farm.schema.__file__)\n"
    )
    out = run(python, "-c", probe, cwd=tmp_path)
    assert out.split()[0] == "3"
    assert str(site) in out  # the farm that answered is the installed wheel, not the checkout
    assert "Usage: farm" in run(bin_dir / "farm", "--help", cwd=tmp_path)


@pytest.mark.integration
def test_setup_prints_only_the_farms_own_lines() -> None:
    """A second `setup.sh` (the first ran before the tests) reinstalls the farm editable: no
    build-backend banner, and no pip warning about the machine's own configuration, reaches
    the person who runs it."""
    done = subprocess.run(
        ["bash", "scripts/setup.sh", "--dev"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert lines == ["ready: .venv/bin/farm"]
