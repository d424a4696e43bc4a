"""hybridtree: a gravitational N-body tree code on OpenCL (GPUs and CPUs) with MPI.

Units: G = 1 throughout; lengths, masses and times are in the caller's units.
"""

__version__ = "0.1.0"
