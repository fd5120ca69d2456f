"""Shared fixtures for orun's integration tests.

The tests run against real binaries and real model files: ORUN_BIN is the orun executable of the build
under test (tools/test-all sets it), the models come from tests/models.tsv through the cache that
tools/install-deps fills. A missing model is a skip with the reason, never a pass.
"""
import os
import pathlib

import pytest

SRCDIR = pathlib.Path(os.environ.get("ORUN_SRCDIR", pathlib.Path(__file__).resolve().parents[2]))
SHARED = pathlib.Path(os.environ.get("ORUN_SHARED", SRCDIR.parent / "shared"))
CACHE = pathlib.Path(os.environ.get("ORUN_CACHE", pathlib.Path.home() / ".cache" / "orun"))


def read_models():
    """tests/models.tsv as a dict id -> row (file, sha256, bytes, arch, packages)."""
    rows = {}
    for line in (SRCDIR / "tests" / "models.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        mid, file, sha, size, arch, packages = line.split("\t")
        rows[mid] = dict(id=mid, file=file, sha256=sha, bytes=int(size), arch=arch, packages=packages.split())
    return rows


MODELS = read_models()


def model_path(mid):
    """Path of a test model, or pytest.skip naming the file and the install step."""
    row = MODELS[mid]
    p = CACHE / "models" / row["file"]
    if not p.exists() or p.stat().st_size != row["bytes"]:
        pytest.skip(f"test model '{mid}' ({row['file']}) is not in {p.parent}: run tools/install-deps")
    return p


@pytest.fixture(scope="session")
def orun_bin():
    b = os.environ.get("ORUN_BIN")
    if not b:
        b = str(SRCDIR / "build" / "cpu" / "orun")
    if not os.access(b, os.X_OK):
        pytest.fail(f"orun executable not found at {b} (set ORUN_BIN or build with tools/test-all)")
    return b


@pytest.fixture(scope="session")
def srcdir():
    return SRCDIR


def shared_path(rel=""):
    """Path of rel in the shared test data (ORUN_SHARED, else ../shared beside the source tree). A missing one
    fails the test, naming it, as tests/check.h's check_shared_path does for the C tests: never a skip."""
    p = SHARED / rel
    if not p.exists():
        pytest.fail(f"needs ../shared/{rel}: not found at {p} (set ORUN_SHARED)", pytrace=False)
    return p


@pytest.fixture(scope="session")
def shared_dir():
    return shared_path()
