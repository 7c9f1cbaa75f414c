"""scripts/drivers-python.sh and the pins it installs."""

import os
import re
import subprocess

import pytest

from conftest import HERE, ROOT

SCRIPT = os.path.join(ROOT, "scripts", "drivers-python.sh")


def test_every_pin_is_exact_and_hashed():
    with open(os.path.join(HERE, "requirements.txt")) as f:
        text = f.read()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
    pins = [b for b in blocks if not b.startswith("#")]
    assert {b.split("==")[0] for b in pins} >= {"redis", "python-redis-lock", "pottery"}
    for b in pins:
        assert re.match(r"^[A-Za-z0-9._-]+==[0-9][^ ;\\]*", b), b
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", b), f"no hash: {b.splitlines()[0]}"


def test_prints_the_installed_venv(driver_python):
    if os.environ.get("LOCKCHAOS_TEST_VERSIONS"):
        pytest.skip("the tests run another set (LOCKCHAOS_TEST_VERSIONS)")
    r = subprocess.run([SCRIPT, "--print-python"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == driver_python, r.stderr
    with open(os.path.join(os.path.dirname(os.path.dirname(driver_python)), "installed")) as f:
        installed = set(f.read().split())
    with open(os.path.join(HERE, "requirements.txt")) as f:
        pinned = set(re.findall(r"^([A-Za-z0-9._-]+==\S+)", f.read(), re.M))
    norm = lambda s: {x.lower().replace("_", "-") for x in s}  # noqa: E731
    assert norm(pinned) <= norm(installed), (pinned, installed)


def test_refuses_bad_arguments():
    for args, says in ((["--version", "redis"], "want PKG==X"), (["--version", "nosuch==1"], "not one of"),
                       (["--bogus"], "unknown argument")):
        r = subprocess.run([SCRIPT] + args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and says in r.stderr and r.stdout == "", (args, r)
