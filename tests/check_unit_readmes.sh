#!/usr/bin/env bash
# Each models/<unit>/README.md names every parameter of its unit (from
# `atomsim config describe`) and every statistic its unit registers (the
# add_counter/add_integral/add_busy/add_constant calls of its sources and the
# StatIds its headers declare), so that
# a parameter or statistic added without its documentation fails.
# Usage: tests/check_unit_readmes.sh SOURCE_DIR ATOMSIM
set -uo pipefail
cd "${1:?usage: check_unit_readmes.sh SOURCE_DIR ATOMSIM}"
atomsim=${2:?usage: check_unit_readmes.sh SOURCE_DIR ATOMSIM}
missing=0 checked=0
params=$("$atomsim" config describe | awk '{print $1}') || { echo "check_unit_readmes: config describe failed"; exit 1; }
for unit in sm mio l1 interconnect l2 dram dispatch; do
  readme=models/$unit/README.md
  [ -f "$readme" ] || { echo "$readme: missing"; missing=$((missing + 1)); continue; }
  names=$(echo "$params" | grep "^$unit\.")
  names+=$'\n'$(sed -n 's/.*add_\(counter\|integral\|busy\|constant\)("\([a-z_0-9.]*\)".*/\2/p' models/$unit/*.cpp models/$unit/*.hpp)
  names+=$'\n'$(sed -n 's/.*StatId k[A-Za-z0-9]*{"[a-z_0-9]*", "\([a-z_0-9.]*\)"}.*/\1/p' models/$unit/*.hpp)
  for name in $names; do
    checked=$((checked + 1))
    grep -qF "\`$name\`" "$readme" || { echo "$readme: does not name \`$name\`"; missing=$((missing + 1)); }
  done
done
[ -f models/cache/README.md ] || { echo "models/cache/README.md: missing"; missing=$((missing + 1)); }
echo "check_unit_readmes: $checked parameters and statistics, $missing not documented"
[ "$missing" -eq 0 ]
