"""Shared fixtures: one OpenCL runtime per session (the CPU device in CI)."""

import numpy as np
import pytest

from hybridtree.ics import plummer
from hybridtree.opencl import get_runtime


@pytest.fixture(scope="session")
def runtime():
    return get_runtime()


@pytest.fixture(scope="session")
def plummer_1e5():
    pos, _, mass = plummer(100_000, seed=11)
    return pos, mass


def rel_err(a: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a - ref, axis=1) / np.linalg.norm(ref, axis=1)
