"""Every Python process started with this folder on PYTHONPATH walks relative lists with
one work-item per group (walk_kernels.RELATIVE_WALK emptied: no COOP), the A/B partner of
a benchmark run with the defaults, child processes included (a tuning aid).

    PYTHONPATH=scripts/tune/serial_walk:. python scripts/bench/step.py runs --device nvidia ...
"""

from hybridtree.gravity import walk_kernels

walk_kernels.RELATIVE_WALK.clear()
