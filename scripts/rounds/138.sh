# round 138: issue 58, session 34: `hybridtree halos` of a 256^3 box at z = 0 with the device FOF (cl/fof.cl)
# against the host's k-d trees (the code before, 3362489's build/old = acf8aa7), the same catalogue on
# both paths, and `hybridtree pk`
code new
py box256 150 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
S="$D/box256/snapshot_0003.hdf5"
HYBRIDTREE_DEVICE=nvidia py analysis_new 120 scripts/bench/analysis.py "$S" --repeat 3 --breakdown
py fof_same 120 -c "import numpy as np; from hybridtree.analysis.halos import find_halos; \
from hybridtree.analysis.halos.fof_device import halo_runtime; s='$S'; d=find_halos(s, runtime=halo_runtime()); \
h=find_halos(s); print(len(h.group_len), 'groups;', 'differ:', [k for k in ('group_len','group_len_type','group_mass',\
'group_mass_type','group_pos','group_vel','ids','offsets') if not np.array_equal(getattr(d,k), getattr(h,k))])"
code old
HYBRIDTREE_DEVICE=nvidia py analysis_old 80 scripts/bench/analysis.py "$S" --repeat 2
code new
HYBRIDTREE_DEVICE=nvidia py analysis_new2 80 scripts/bench/analysis.py "$S" --repeat 2
rm -rf "$D/box256"
