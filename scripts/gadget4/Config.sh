# GADGET-4 compile-time configuration for the hybridtree reference runs.
# Periodic TreePM, dark matter only, N-GenIC ICs (2LPT, grid pre-IC), FOF + P(k) at every output.
# build.sh rewrites the two lines PMGRID=... and NGENIC=... per particle-grid size N (PMGRID = NGENIC = N).

# Basic operation
PERIODIC
SELFGRAVITY
NTYPES=6
GADGET2_HEADER

# TreePM: PM mesh (varied: = N), default ASMTH=1.25, RCUT=7.0, MULTIPOLE_ORDER=1;
# TREEPM_NOTIMESPLIT is deliberately OFF -> long-range PM force on the global (largest) step, tree on individual steps
PMGRID=64

# Softening: one class (all types)
NSOFTCLASSES=1

# Precision: full double internally, double FFTs, double output (so the IC file is bit-exact in positions)
DOUBLEPRECISION=1
DOUBLEPRECISION_FFTW
OUTPUT_IN_DOUBLEPRECISION
IDS_64BIT

# Outputs
# NOTE: in this GADGET-4 version OUTPUT_POTENTIAL alone only adds a "Potential" dataset that is all ZERO;
# add EVALPOTENTIAL as well to get real values (costs a little every step). run64 was made with exactly this file.
OUTPUT_POTENTIAL
#EVALPOTENTIAL
#OUTPUT_ACCELERATION
POWERSPEC_ON_OUTPUT

# On-the-fly FOF
FOF
FOF_PRIMARY_LINK_TYPES=2
FOF_SECONDARY_LINK_TYPES=1+16+32
FOF_GROUP_MIN_LEN=32
FOF_LINKLENGTH=0.2

# Initial conditions via built-in N-GenIC (FFT grid = N), 2LPT, regular grid as pre-IC
NGENIC=64
NGENIC_2LPT
CREATE_GRID
