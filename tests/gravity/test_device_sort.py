"""Device radix sort and exclusive scan (cl/sort.cl) against numpy."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.errors import UserInputError

from hybridtree.gravity.tree.device_sort import TUNING, Tuning, exclusive_scan, radix_sort

#: The GPU tuning (4-bit digits, work-groups of 256), run here on the CPU device.
GPU_TUNING = TUNING["gpu"]
#: Tiny tiles and scan blocks: many tiles per digit, many chunks in the one-group
#: scan of block sums, and 3-bit digits that leave a narrower last pass.
TINY = Tuning(wg=4, items=8, scan_items=4, radix_bits=3)
#: The same with the other order of radix_scatter's stores than the device's default
#: (GPUs store in the tile's sorted order, CPUs in input order): both orders run here.
TINY_OTHER = Tuning(wg=4, items=8, scan_items=4, radix_bits=3, sorted_stores=0)
GPU_OTHER = Tuning(wg=256, items=8, scan_items=8, radix_bits=4, sorted_stores=0)
CPU_OTHER = Tuning(wg=4, items=1024, scan_items=256, radix_bits=8, sorted_stores=1)


def _read(rt, buf: cl.Buffer, n: int, dtype) -> np.ndarray:
    out = np.empty(n, dtype)
    if n:
        cl.enqueue_copy(rt.queue, out, buf)
    return out


def _check_sort(rt, keys: np.ndarray, key_bits: int = 63, tuning: Tuning | None = None) -> None:
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    n = len(keys)
    dev_keys = rt.to_device(keys)
    sorted_buf, order_buf = radix_sort(rt, dev_keys, n, key_bits, tuning=tuning)
    order = _read(rt, order_buf, n, np.uint32)
    sorted_keys = _read(rt, sorted_buf, n, np.uint64)
    used = keys if key_bits == 64 else keys & np.uint64((1 << key_bits) - 1)
    ref = np.argsort(used, kind="stable")
    np.testing.assert_array_equal(order, ref)
    np.testing.assert_array_equal(sorted_keys, keys[ref])
    np.testing.assert_array_equal(_read(rt, dev_keys, n, np.uint64), keys)  # input untouched


def _random63(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**63, n, dtype=np.uint64)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 100_003])
def test_sort_random_63_bit_keys(runtime, n):
    _check_sort(runtime, _random63(np.random.default_rng(n), n))


def test_sort_many_duplicates_is_stable(runtime):
    keys = np.random.default_rng(1).integers(0, 16, 100_003).astype(np.uint64)
    _check_sort(runtime, keys)


def test_sort_keys_differing_only_in_top_bits(runtime):
    top = np.random.default_rng(2).integers(0, 32, 20_000).astype(np.uint64)
    _check_sort(runtime, top << np.uint64(58))


def test_sort_keys_differing_only_in_bit_0(runtime):
    base = np.uint64(0x5A5A_5A5A_5A5A_5A5A & ~1)
    keys = base | np.random.default_rng(3).integers(0, 2, 20_000).astype(np.uint64)
    _check_sort(runtime, keys)


@pytest.mark.parametrize("key_bits", [1, 7, 20, 33])
def test_sort_fewer_key_bits(runtime, key_bits):
    keys = np.random.default_rng(key_bits).integers(0, 2**key_bits, 30_001, dtype=np.uint64)
    _check_sort(runtime, keys, key_bits)


def test_sort_ignores_bits_above_key_bits(runtime):
    _check_sort(runtime, _random63(np.random.default_rng(4), 10_000), key_bits=30)


def test_sort_full_64_bit_keys(runtime):
    keys = np.random.default_rng(5).integers(0, 2**64, 10_000, dtype=np.uint64)
    _check_sort(runtime, keys, key_bits=64)


@pytest.mark.parametrize("tuning", [GPU_TUNING, TINY, TINY_OTHER, GPU_OTHER, CPU_OTHER],
                         ids=["gpu-tuning", "tiny", "tiny-other-stores", "gpu-other-stores",
                              "cpu-other-stores"])
def test_sort_other_tunings(runtime, tuning):
    rng = np.random.default_rng(6)
    _check_sort(runtime, _random63(rng, 20_011), tuning=tuning)
    _check_sort(runtime, rng.integers(0, 16, 20_011).astype(np.uint64), tuning=tuning)
    _check_sort(runtime, rng.integers(0, 2**10, 5_000).astype(np.uint64), 10, tuning=tuning)
    _check_sort(runtime, _random63(rng, 3), tuning=tuning)


@pytest.mark.parametrize("key_bits", [0, 65])
def test_sort_rejects_bad_key_bits(runtime, key_bits):
    with pytest.raises(ValueError, match="key_bits"):
        radix_sort(runtime, runtime.to_device(np.zeros(4, np.uint64)), 4, key_bits)


def _check_scan(rt, values: np.ndarray, tuning: Tuning | None = None,
                give_out: bool = False) -> None:
    values = np.ascontiguousarray(values, dtype=np.uint32)
    n = len(values)
    out = rt.empty(4 * (n + 1)) if give_out else None
    res, total = exclusive_scan(rt, rt.to_device(values), n, out, tuning=tuning)
    if give_out:
        assert res is out
    ref = np.zeros(n + 1, np.uint64)
    np.cumsum(values, dtype=np.uint64, out=ref[1:])
    np.testing.assert_array_equal(_read(rt, res, n + 1, np.uint32), ref)
    assert total == int(ref[-1])


@pytest.mark.parametrize("n", [0, 1, 5, 1000, 300_001])
def test_exclusive_scan(runtime, n):
    _check_scan(runtime, np.random.default_rng(n).integers(0, 1000, n))


def test_exclusive_scan_into_given_buffer_with_large_values(runtime):
    # Total 2^32 - 1: the largest sum uint32 offsets can hold.
    values = np.full(257, (2**32 - 1) // 257, np.uint32)
    _check_scan(runtime, values, give_out=True)
    _check_scan(runtime, np.zeros(0, np.uint32), give_out=True)


@pytest.mark.parametrize("tuning", [GPU_TUNING, TINY], ids=["gpu-tuning", "tiny"])
def test_exclusive_scan_other_tunings(runtime, tuning):
    rng = np.random.default_rng(7)
    for n in (1, 17, 300_001):
        _check_scan(runtime, rng.integers(0, 1000, n), tuning=tuning)


def test_tuning_from_the_environment(runtime, monkeypatch):
    keys = np.random.default_rng(5).integers(0, 2**63, 5000, dtype=np.uint64)
    monkeypatch.setenv("HYBRIDTREE_SORT_TUNING", "8,16,8,6")
    _, order = radix_sort(runtime, runtime.to_device(keys), len(keys), 63)
    got = np.empty(len(keys), np.uint32)
    cl.enqueue_copy(runtime.queue, got, order)
    assert np.array_equal(got, np.argsort(keys, kind="stable"))
    monkeypatch.setenv("HYBRIDTREE_SORT_TUNING", "8,16,8,9")
    with pytest.raises(UserInputError, match="HYBRIDTREE_SORT_TUNING.*radix_bits"):
        radix_sort(runtime, runtime.to_device(keys), len(keys), 63)
