# round 48: issue 31, session 17: a 256^3 box of 100 Mpc/h from z = 49 to 0 (the speed target), its P(k)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py box256 480 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 --set gravity.eps=0.0186 \
    --set output.dir="$D/box256"
py pk256 60 -m hybridtree pk "$D/box256/snapshot_0003.hdf5" --out "$D/pk256_z0.txt"
rm -f "$D"/box256/snapshot_*.hdf5
