"""The driver kit installs with pip from the repository, on its own, and serves a lock."""

import os
import shutil
import subprocess
import venv

from conftest import HERE


def test_pip_installs_the_kit(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / "bin" / "python")
    # As a team installs it: pip builds it with the setuptools its pyproject pins (from PyPI); the
    # kit itself depends on nothing.
    # From a copy: a build writes build/ and *.egg-info beside its source.
    src = tmp_path / "kit"
    shutil.copytree(os.path.join(HERE, "lcdriver"), src / "lcdriver", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(HERE, "pyproject.toml"), src)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # Imported from the installed copy (not this directory), with its public names.
    r = subprocess.run([py, "-c", "import lcdriver, os; print(os.path.dirname(lcdriver.__file__)); "
                        "from lcdriver import BaseLock, serve, clients, ping_all, LOCKS; print(sorted(LOCKS))"],
                       capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    where, locks = r.stdout.splitlines()
    assert where.startswith(str(env_dir)), where
    assert "redis-py" in locks, locks
