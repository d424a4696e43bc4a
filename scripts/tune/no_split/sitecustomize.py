"""Every Python process started with this folder on PYTHONPATH walks with the relative
walks' split off (walk_kernels.RELATIVE_SPLIT emptied): the A/B partner of a benchmark
run with the defaults, child processes included (a tuning aid).

    PYTHONPATH=scripts/tune/no_split:. python scripts/bench/step.py runs --device nvidia ...
"""

from hybridtree.gravity import walk_kernels

walk_kernels.RELATIVE_SPLIT.clear()
