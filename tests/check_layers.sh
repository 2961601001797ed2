#!/usr/bin/env bash
# The layers' rule, checked on every #include of the project's own headers:
# each folder includes only what sits below it (docs/architecture.md, "Layout").
#   traces/      traces/
#   sim/engine/  sim/engine/
#   models/      sim/engine/ models/ traces/
#   workloads/   workloads/ traces/
#   sim/         sim/ (not sim/cli/) sim/engine/ models/ workloads/ traces/
#   tools/       everything but sim/cli/
#   sim/cli/, tests/: everything
# Prints each include that runs back up, as FILE:LINE: INCLUDE, and fails on any.
#
# Usage: tests/check_layers.sh SOURCE_DIR
set -uo pipefail
cd "${1:?usage: check_layers.sh SOURCE_DIR}"

# The folders a file in LAYER may include from, as one extended regular expression.
allowed() {
  case $1 in
    traces/*) echo '^traces/' ;;
    sim/engine/*) echo '^sim/engine/' ;;
    models/*) echo '^(sim/engine|models|traces)/' ;;
    workloads/*) echo '^(workloads|traces)/' ;;
    sim/cli/*) echo '.' ;;
    sim/*) echo '^(sim/(engine|compare)/|sim/[^/]+$|models/|workloads/|traces/)' ;;
    tools/*) echo '^(sim/(engine|compare)/|sim/[^/]+$|models/|workloads/|traces/|tools/)' ;;
    *) echo '.' ;;
  esac
}

violations=0 checked=0
while IFS= read -r -d '' file; do
  rule=$(allowed "$file")
  [ "$rule" = . ] && continue
  while IFS=: read -r line include; do
    checked=$((checked + 1))
    if ! [[ $include =~ $rule ]]; then
      echo "$file:$line: includes $include"
      violations=$((violations + 1))
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(traces|sim|models|workloads|tools|tests)/' "$file" |
           sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1:\2/')
done < <(find $(ls -d traces sim models workloads tools 2>/dev/null) -path traces/datasets -prune -o \
           -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.in' \) -print0 | sort -z)
echo "check_layers: $checked project includes, $violations running back up"
[ "$violations" -eq 0 ]
