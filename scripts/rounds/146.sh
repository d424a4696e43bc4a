# round 146: round 145's snapshots again with OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exported (its
# mpiexec refused to run as root): session 35's code against 3a9ae01 (build/old) bit for bit on the GPU
code old
py snaps_old 110 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 110 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
