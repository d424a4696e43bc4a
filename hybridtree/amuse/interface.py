"""hybridtree as an AMUSE community code: :class:`HybridtreeInterface` (the calls, as
AMUSE's ``GravitationalDynamicsInterface`` and ``GravityFieldInterface`` specify them) and
:class:`Hybridtree` (the code with units, parameters and particle sets that scripts use).

The calls go to a worker process that AMUSE starts (a Python worker: AMUSE's
``PythonCodeInterface`` writes a small script that makes a
:class:`hybridtree.amuse.process.WorkerProcess`); that process owns the OpenCL
device.  AMUSE's sockets channel is the default (it needs no MPI launcher); ``channel_type
="mpi"`` spawns the worker through MPI instead (docs/amuse.md says where that works).
The particle calls take and give whole arrays in one call (AMUSE's default for Python
workers is one call per particle).  Units: AMUSE's ``nbody_system`` (G = 1); a
``unit_converter`` (``nbody_system.nbody_to_si``) converts from SI as for any AMUSE code.

This module imports AMUSE; ``import hybridtree`` does not.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

from amuse.community.interface.gd import (GravitationalDynamics,
                                          GravitationalDynamicsInterface, GravityFieldCode,
                                          GravityFieldInterface)
from amuse.rfi.core import LegacyFunctionSpecification, PythonCodeInterface, legacy_function
from amuse.units import nbody_system

from .process import WorkerProcess

__all__ = ["Hybridtree", "HybridtreeInterface"]

#: the particle calls given whole arrays in the worker (one Python call, not one a particle)
WHOLE_ARRAYS = ("new_particle", "delete_particle", "get_state", "set_state", "get_mass",
                "set_mass", "get_radius", "set_radius", "get_position", "set_position",
                "get_velocity", "set_velocity", "get_acceleration", "get_potential")


def _whole_arrays(name: str) -> legacy_function:
    def specification() -> LegacyFunctionSpecification:
        spec = getattr(GravitationalDynamicsInterface, name).specification_function()
        spec.must_handle_array = True
        return spec
    specification.__name__ = name
    return legacy_function(specification)


def _scalar(name: str, parameter: str, dtype: str, direction: str, doc: str
            ) -> legacy_function:
    def specification() -> LegacyFunctionSpecification:
        spec = LegacyFunctionSpecification()
        spec.addParameter(parameter, dtype=dtype,
                          direction=getattr(LegacyFunctionSpecification, direction))
        spec.result_type = "int32"
        return spec
    specification.__name__ = name
    specification.__doc__ = doc
    return legacy_function(specification)


def _worker_dir() -> str:
    """A folder of this process for the worker script AMUSE writes (AMUSE's default is
    the current directory, which a user's folder or a parallel test would share)."""
    path = tempfile.mkdtemp(prefix="hybridtree-amuse-")
    atexit.register(shutil.rmtree, path, True)
    return path


class HybridtreeInterface(PythonCodeInterface, GravitationalDynamicsInterface,
                          GravityFieldInterface):
    """The calls of the hybridtree worker (N-body units)."""

    def __init__(self, **options: Any):
        options.setdefault("channel_type", "sockets")
        if options["channel_type"] == "sockets":
            # the worker as a plain child process: AMUSE would otherwise start it with the
            # mpiexec its build found, which need not be the MPI mpi4py loads
            options.setdefault("initialize_mpi", False)
        options.setdefault("worker_dir", _worker_dir())
        PythonCodeInterface.__init__(self, WorkerProcess, **options)

    get_theta = _scalar("get_theta", "opening_angle", "float64", "OUT",
                        "The tree's opening angle theta.")
    set_theta = _scalar("set_theta", "opening_angle", "float64", "IN",
                        "The tree's opening angle theta (0 < theta <= 1.2).")
    get_opening = _scalar("get_opening", "opening", "string", "OUT",
                          "The opening criterion: geometric, relative or auto.")
    set_opening = _scalar("set_opening", "opening", "string", "IN",
                          "The opening criterion: geometric, relative or auto.")
    get_alpha = _scalar("get_alpha", "alpha", "float64", "OUT",
                        "The relative criterion's tolerance.")
    set_alpha = _scalar("set_alpha", "alpha", "float64", "IN",
                        "The relative criterion's tolerance.")
    set_time_step = _scalar("set_time_step", "time_step", "float64", "IN",
                            "The leapfrog's fixed step.")
    get_device = _scalar("get_device", "device", "string", "OUT",
                         "The OpenCL device asked for ('' = hybridtree's choice).")
    set_device = _scalar("set_device", "device", "string", "IN",
                         "The OpenCL device: as hybridtree's device setting.")
    get_number_of_particles = _scalar("get_number_of_particles", "number_of_particles",
                                      "int32", "OUT", "How many particles the code holds.")


for _name in WHOLE_ARRAYS:
    setattr(HybridtreeInterface, _name, _whole_arrays(_name))


class Hybridtree(GravitationalDynamics, GravityFieldCode):
    """hybridtree in AMUSE: ``Hybridtree(unit_converter=None, **options)``; parameters
    ``epsilon_squared``, ``opening_angle``, ``opening``, ``alpha``, ``timestep``,
    ``begin_time``, ``device``.

    ``evolve_model(t)`` takes whole steps of ``timestep`` to the first step's end at or
    after t (``model_time`` says where it stopped)."""

    def __init__(self, unit_converter: Any = None, **options: Any):
        GravitationalDynamics.__init__(self, HybridtreeInterface(**options), unit_converter,
                                       **options)

    def define_state(self, handler: Any) -> None:
        GravitationalDynamics.define_state(self, handler)
        GravityFieldCode.define_state(self, handler)
        for method in ("get_acceleration", "get_radius", "get_number_of_particles"):
            handler.add_method("RUN", method)

    def define_parameters(self, handler: Any) -> None:
        handler.add_method_parameter(
            "get_eps2", "set_eps2", "epsilon_squared",
            "Plummer softening length squared", default_value=(0.01 ** 2) | nbody_system.length ** 2)
        handler.add_method_parameter(
            "get_theta", "set_theta", "opening_angle",
            "the tree's opening angle (geometric criterion)", default_value=0.5)
        handler.add_method_parameter(
            "get_opening", "set_opening", "opening",
            "the opening criterion: geometric (opening_angle), relative (GADGET's, alpha; "
            "opening_angle for the first force) or auto (a run's default)",
            default_value="geometric")
        handler.add_method_parameter(
            "get_alpha", "set_alpha", "alpha",
            "the relative criterion's tolerance on a cell's force error", default_value=0.003)
        handler.add_method_parameter(
            "get_time_step", "set_time_step", "timestep",
            "the leapfrog's fixed step", default_value=(1.0 / 128) | nbody_system.time)
        handler.add_method_parameter(
            "get_begin_time", "set_begin_time", "begin_time",
            "model time to start the simulation at", default_value=0.0 | nbody_system.time)
        handler.add_method_parameter(
            "get_device", "set_device", "device",
            "the OpenCL device (hybridtree's device setting; '' = its own choice)",
            default_value="")

    def define_methods(self, handler: Any) -> None:
        GravitationalDynamics.define_methods(self, handler)
        handler.add_method("get_eps2", (), (nbody_system.length ** 2, handler.ERROR_CODE))
        handler.add_method("set_eps2", (nbody_system.length ** 2,), (handler.ERROR_CODE,))
        handler.add_method("get_theta", (), (handler.NO_UNIT, handler.ERROR_CODE))
        handler.add_method("set_theta", (handler.NO_UNIT,), (handler.ERROR_CODE,))
        handler.add_method("set_time_step", (nbody_system.time,), (handler.ERROR_CODE,))
        for name in ("opening", "alpha"):
            handler.add_method(f"get_{name}", (), (handler.NO_UNIT, handler.ERROR_CODE))
            handler.add_method(f"set_{name}", (handler.NO_UNIT,), (handler.ERROR_CODE,))
        handler.add_method("get_begin_time", (), (nbody_system.time, handler.ERROR_CODE))
        handler.add_method("set_begin_time", (nbody_system.time,), (handler.ERROR_CODE,))
        handler.add_method("get_device", (), (handler.NO_UNIT, handler.ERROR_CODE))
        handler.add_method("set_device", (handler.NO_UNIT,), (handler.ERROR_CODE,))
