"""Every Python process started with this folder on PYTHONPATH walks every GPU list walk
(geometric ones too) cooperatively: the default WalkTuning of every force engine made
with it gets COOP = $COOP (default 32) in its GPU walk defines, child processes included
(a tuning aid; round 77 measured the cooperative walk with it before it became the
relative walks' default).

    COOP=32 PYTHONPATH=scripts/tune/coop:. python scripts/bench/step.py runs --device nvidia ...
"""

import os

from hybridtree.gravity import engine
from hybridtree.gravity.tuning import TUNING

_COOP = TUNING.for_kind("gpu", walk={**dict(TUNING.gpu.walk),
                                     "COOP": int(os.environ.get("COOP", "32"))})
_INIT = engine.ForceEngine.__init__


def _init(self, *args, tuning=TUNING, **kwargs):
    _INIT(self, *args, tuning=_COOP if tuning is TUNING else tuning, **kwargs)


engine.ForceEngine.__init__ = _init
