"""The OpenCL drivers and what they show: the drivers pip installs without registering
them with the ICD loader (Intel's CPU runtime, ``intel-opencl-rt``, part of the ``cpu``
extra; registered when this module is imported, :func:`register_pip_drivers`), and each
device's description (:func:`list_devices`: kind, vendor key, limits, simulator or not).

:mod:`hybridtree.device.choice` chooses among these devices."""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import sysconfig
from pathlib import Path

import pyopencl as cl

from .runtime import DeviceInfo, check_environment, user_cache_dir

__all__ = ["PIP_DRIVERS", "VENDOR_WORDS", "list_devices", "register_pip_drivers"]

# the name the choice's messages always had (hybridtree.device.choice)
logger = logging.getLogger("hybridtree.device.choice")


# --- drivers pip installs without registering them -------------------------------------

#: Shared libraries of OpenCL drivers that pip puts under an environment's ``lib/``
#: without a working ICD file: Intel's CPU runtime (its packaged ICD file names a
#: placeholder path, /opt/anaconda1anaconda2anaconda3/lib/libintelocl.so).
PIP_DRIVERS = ("libintelocl.so",)


def _pip_driver_libraries() -> list[Path]:
    """The :data:`PIP_DRIVERS` installed in this Python environment."""
    found: list[Path] = []
    for base in (sysconfig.get_path("data"), sys.prefix):
        for name in PIP_DRIVERS:
            lib = Path(base) / "lib" / name
            if lib.is_file() and lib.resolve() not in {f.resolve() for f in found}:
                found.append(lib)
    return found


#: why register_pip_drivers could not register the pip drivers (at most one line)
_UNREGISTERED: list[str] = []


def register_pip_drivers(libs: list[Path] | None = None) -> Path | None:
    """Make the ICD loader see the OpenCL drivers pip installed into this environment
    (:data:`PIP_DRIVERS`) beside the system's: a folder of ICD files (copies of the
    system's, from ``OPENCL_VENDOR_PATH`` or ``/etc/OpenCL/vendors``, plus one per pip
    driver) in the user cache, named by its contents, becomes ``OCL_ICD_VENDORS``.
    pyopencl's own PoCL is found by the loader whatever that folder holds.

    Nothing is done when ``OCL_ICD_VENDORS`` is set (the user's or a parent process's
    choice of drivers: one ICD file there hides every other driver) or no pip driver is
    installed.  Must run before the first platform query of the process (the loader reads
    its configuration once); this module calls it when imported.  ``libs``: the pip
    drivers' libraries (default: those found in this environment).  Returns the folder,
    or None."""
    if os.environ.get("OCL_ICD_VENDORS"):
        return None
    libs = _pip_driver_libraries() if libs is None else libs
    if not libs:
        return None
    system = Path(os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors")
    icds: dict[str, str] = {}
    if system.is_dir():
        for f in sorted(system.glob("*.icd")):
            try:
                icds[f.name] = f.read_text()
            except OSError:
                continue
    registered = " ".join(icds.values())
    added = False
    for lib in libs:
        if lib.name in registered:          # the system registers such a driver already
            continue
        icds[f"hybridtree-{lib.name.split('.')[0]}.icd"] = f"{lib}\n"
        added = True
    if not added:
        return None
    digest = hashlib.sha256(repr(sorted(icds.items())).encode()).hexdigest()[:16]
    folder = user_cache_dir() / f"opencl-vendors-{digest}"
    try:
        if not folder.is_dir():
            tmp = folder.with_name(f".{folder.name}-{os.getpid()}")
            tmp.mkdir(parents=True, exist_ok=True)
            for name, text in icds.items():
                (tmp / name).write_text(text)
            try:
                tmp.rename(folder)
            except OSError:                 # another process made it first
                for f in tmp.iterdir():
                    f.unlink()
                tmp.rmdir()
    except OSError as exc:
        # said by list_devices, once it knows whether any device is seen: where none is,
        # the error that says so names the cache folder instead (one line)
        _UNREGISTERED[:] = [f"could not register {libs[0]} with the OpenCL loader ({exc}): "
                            f"set OCL_ICD_VENDORS to a folder of ICD files naming it"]
        return None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return folder


register_pip_drivers()


# --- what the drivers show -------------------------------------------------------------

def _kind(device_type: int) -> str:
    if device_type & cl.device_type.GPU:
        return "gpu"
    if device_type & cl.device_type.CPU:
        return "cpu"
    if device_type & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


#: Vendor keys from the platform's name (the driver decides what a device is to the code:
#: PoCL or Intel's runtime on an AMD CPU, Oclgrind), else from the hardware's maker.
_DRIVERS = (("oclgrind", "oclgrind"), ("portable computing language", "pocl"), ("pocl", "pocl"),
            ("intel", "intel"), ("nvidia", "nvidia"), ("advanced micro devices", "amd"),
            ("amd", "amd"), ("apple", "apple"))
_MAKERS = (("nvidia", "nvidia"), ("advanced micro devices", "amd"), ("amd", "amd"),
           ("intel", "intel"), ("apple", "apple"))
#: Words a choice may be: the devices of that vendor key.
VENDOR_WORDS = ("pocl", "intel", "nvidia", "amd", "apple", "oclgrind")


def _vendor(platform: str, name: str, vendor: str = "") -> str:
    """The vendor key of a device from its platform, device and vendor names."""
    for needle, key in _DRIVERS:
        if needle in platform.lower():
            return key
    text = f"{vendor} {name} {platform}".lower()
    for needle, key in _MAKERS:
        if needle in text:
            return key
    return "other"


def _is_simulator(platform: str, name: str, device_type: int) -> bool:
    """Whether a device only simulates or emulates one: Oclgrind (whose type has every
    bit set: GPU, CPU and accelerator at once), Intel's FPGA emulator, and anything
    calling itself a simulator or an emulator."""
    text = f"{platform} {name}".lower()
    if any(w in text for w in ("oclgrind", "simulat", "emulat")):
        return True
    every = cl.device_type.GPU | cl.device_type.CPU | cl.device_type.ACCELERATOR
    return device_type & every == every


def _describe_device(pi: int, di: int, platform: cl.Platform, d: cl.Device) -> DeviceInfo:
    def get(attr: str, default=0):
        try:
            return getattr(d, attr)
        except (cl.Error, AttributeError):      # a driver that does not answer a query
            return default

    pname, name = platform.name.strip(), d.name.strip()
    return DeviceInfo(pi, di, pname, name, _kind(d.type), int(d.max_compute_units),
                      d.version.strip(), vendor=_vendor(pname, name, str(get("vendor", ""))),
                      max_work_group_size=int(get("max_work_group_size")),
                      local_mem_size=int(get("local_mem_size")),
                      global_mem_size=int(get("global_mem_size")),
                      max_mem_alloc_size=int(get("max_mem_alloc_size")),
                      fp64="cl_khr_fp64" in str(get("extensions", "")).split(),
                      simulator=_is_simulator(pname, name, int(d.type)),
                      driver=str(get("driver_version", "")).strip())


def list_devices() -> list[DeviceInfo]:
    """All OpenCL devices of all platforms (an empty list when there is no ICD);
    :class:`EnvironmentSettingError` first where an environment variable of the OpenCL
    layer cannot be used (:func:`check_environment`)."""
    check_environment()
    out: list[DeviceInfo] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD loader or no platform
        return out
    for pi, p in enumerate(platforms):
        try:
            devices = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devices):
            out.append(_describe_device(pi, di, p, d))
    if out and _UNREGISTERED:
        logger.warning("%s", _UNREGISTERED.pop())
    return out
