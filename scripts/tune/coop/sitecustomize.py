"""Every Python process started with this folder on PYTHONPATH walks every GPU list walk
(geometric ones too) cooperatively: walk_kernels.WALK_SETTINGS["gpu"]["COOP"] = $COOP
(default 32), child processes included (a tuning aid; round 77 measured the cooperative
walk with it before it became the relative walks' default).

    COOP=32 PYTHONPATH=scripts/tune/coop:. python scripts/bench/step.py runs --device nvidia ...
"""

import os

from hybridtree.gravity import walk_kernels

walk_kernels.WALK_SETTINGS["gpu"]["COOP"] = int(os.environ.get("COOP", "32"))
