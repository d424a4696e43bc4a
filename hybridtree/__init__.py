"""hybridtree: a gravitational N-body tree code on OpenCL (GPUs and CPUs) with MPI.

Units: G = 1 throughout; lengths, masses and times are in the caller's units.
"""

__version__ = "0.1.0"

__all__ = ["Simulation", "__version__"]


def __getattr__(name: str):
    # lazily, so that ``import hybridtree`` stays light (no OpenCL, no h5py)
    if name == "Simulation":
        from .simulation import Simulation
        return Simulation
    raise AttributeError(f"module 'hybridtree' has no attribute {name!r}")
