# round 49: issue 31, session 17: the configs' 512 steps: configs/cosmo_box.toml (128^3) and the 256^3 box, each with P(k) and halos
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for n in 128 256; do
  py box$n 330 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=$n \
      --set gravity.eps=$(python3 -c "print(100 / 0.7 / $n / 30)") --set output.dir="$D/box$n"
  py pk$n 60 -m hybridtree pk "$D/box$n/snapshot_0003.hdf5" --out "$D/pk${n}_z0.txt"
  py halos$n 200 -m hybridtree halos "$D/box$n/snapshot_0003.hdf5"
  rm -f "$D"/box$n/snapshot_*.hdf5
done
