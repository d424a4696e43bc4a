"""Octree: Morton keys, sort, cells in depth-first order with next links, moments."""

from .morton import MAX_LEVEL, Cube, bounding_cube, integer_coords, morton_keys
from .octree import MULTIPOLES, Octree, build_tree, leaf_ranges, split_cells

__all__ = ["MAX_LEVEL", "MULTIPOLES", "Cube", "Octree", "bounding_cube", "build_tree",
           "integer_coords", "leaf_ranges", "morton_keys", "split_cells"]
