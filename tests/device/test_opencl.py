import pyopencl as cl
import pytest

from hybridtree.device import runtime as runtime_module
from hybridtree.device.choice import choose_device, list_devices
from hybridtree.device.runtime import DeviceError, kernel_source


def test_lists_the_device_ci_has():
    devices = list_devices()
    assert devices, "the test environment must have an OpenCL device"
    assert all(d.kind in ("gpu", "cpu", "accelerator", "other") for d in devices)


def test_unknown_device_error_lists_the_devices():
    with pytest.raises(DeviceError) as exc:
        choose_device("no-such-device-xyz")
    msg = str(exc.value)
    assert "no-such-device-xyz" in msg
    assert list_devices()[0].name in msg


def test_index_and_env_choice(monkeypatch):
    d0 = list_devices()[0]
    assert choose_device(f"{d0.platform_index}:{d0.device_index}") == d0
    monkeypatch.setenv("PYOPENCL_CTX", f"{d0.platform_index}:{d0.device_index}")
    monkeypatch.delenv("HYBRIDTREE_DEVICE", raising=False)
    assert choose_device() == d0
    monkeypatch.setenv("PYOPENCL_CTX", "97:3")
    with pytest.raises(DeviceError, match="does not exist"):
        choose_device()


def test_programs_are_built_once_per_context(runtime):
    a = runtime.program("direct.cl", {"WG": 32, "SPLIT": 0})
    b = runtime.program("direct.cl", {"WG": 32, "SPLIT": 0})
    c = runtime.program("direct.cl", {"WG": 32, "SPLIT": 1})
    assert a is b and a is not c


def test_build_failure_reports_the_log(runtime, monkeypatch):
    monkeypatch.setattr(runtime_module, "kernel_source",
                        lambda name: "__kernel void k() { syntax error }")
    with pytest.raises(DeviceError, match="broken.cl"):
        runtime.program("broken.cl", {})


def test_kernels_use_no_vendor_extensions():
    for name in ("direct.cl", "treewalk.cl"):
        src = kernel_source(name)
        assert "#pragma OPENCL EXTENSION" not in src
        assert "double" not in src
