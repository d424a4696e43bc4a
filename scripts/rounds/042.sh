# round 42: issue 30: the paper's cosmological sphere with the defaults (relative α = 0.002), with quadrupoles, and geometric θ = 0.6 (the paper's); linear growth against D(a) and the isolated sphere's linear theory.  Variants as arguments: bash scripts/gpu_round.sh 42 mono quad
shift
for v in "$@"; do
  case $v in mono) S=();; quad) S=(--set 'gravity.multipole="quadrupole"');;
              geo) S=(--set 'gravity.opening="geometric"');;
              qgeo) S=(--set 'gravity.opening="geometric"' --set 'gravity.multipole="quadrupole"');; esac
  py cs_$v 330 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs_$v "${S[@]}" --json "$D/cs_$v.json"
  cp /tmp/cs_$v/diagnostics.csv "$D/cs_${v}_diagnostics.csv" 2>/dev/null
  py growth_$v 200 scripts/bench/growth.py configs/cosmo_sphere.toml /tmp/cs_$v --json "$D/growth_$v.json"
done
