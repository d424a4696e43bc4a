"""Every Python process started with this folder on PYTHONPATH walks relative lists with
one work-item per group (the default WalkTuning of every force engine made with it has
no GPU relative_walk defines: no COOP), the A/B partner of a benchmark run with the
defaults, child processes included (a tuning aid).

    PYTHONPATH=scripts/tune/serial_walk:. python scripts/bench/step.py runs --device nvidia ...
"""

from hybridtree.gravity import engine
from hybridtree.gravity.tuning import TUNING

_SERIAL = TUNING.for_kind("gpu", relative_walk={})
_INIT = engine.ForceEngine.__init__


def _init(self, *args, tuning=TUNING, **kwargs):
    _INIT(self, *args, tuning=_SERIAL if tuning is TUNING else tuning, **kwargs)


engine.ForceEngine.__init__ = _init
