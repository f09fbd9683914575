"""Fixtures of the Python tests: the module from the build tree (ctest puts
build/<preset>/python on PYTHONPATH) and a small random GGUF model written
by the `nascent` program (NASCENT_CLI)."""
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("NASCENT_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("NASCENT_CLI (the nascent program) is not set")
    return path


@pytest.fixture(scope="session")
def tiny_model(cli, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "tiny.gguf")
    subprocess.run([cli, "make-model", path, "--seed", "3"], check=True,
                   stdout=subprocess.DEVNULL)
    return path
