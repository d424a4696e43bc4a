"""Gravity: the public call (:func:`accelerations`), the force engine that every force of
a run goes through, direct summation, the hybrid tree's hard/soft split, the tree
(:mod:`.tree`) and its walk (:mod:`.walk`).  Units: G = 1, the caller's."""

from .api import (BUILDS, METHODS, OPENINGS, Forces, accelerations, direct_reference,
                  split_accelerations, validate_particles)
from .engine import ForceEngine, GravitySettings

__all__ = ["BUILDS", "Forces", "ForceEngine", "GravitySettings", "METHODS", "OPENINGS",
           "accelerations", "direct_reference", "split_accelerations", "validate_particles"]
