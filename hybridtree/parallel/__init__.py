"""Many processes with MPI (mpi4py): communicator, domain decomposition, LET, parallel forces.

Everything here also runs as one process without mpi4py (:func:`world` then returns a
one-process communicator).
"""

from .comm import CollectiveError, Comm, node_local_rank, world
from .domain import PARTICLE_DTYPE, Domains, decompose, exchange, grid_shape
from .engine import ParallelEngine
from .forces import ParallelForces, parallel_accelerations

__all__ = ["CollectiveError", "Comm", "Domains", "PARTICLE_DTYPE", "ParallelEngine",
           "ParallelForces", "decompose", "exchange", "grid_shape", "node_local_rank",
           "parallel_accelerations", "world"]
