#!/usr/bin/env bash
# gpu-metrics under valgrind memcheck, against the NVML stand-in: one-shot
# JSON, continuous JSON Lines (sampler thread), table with MIG, the lost-GPU
# path, processes (table and CSV rows, with their /proc lookups), the CUDA
# index under a CUDA_VISIBLE_DEVICES list, and a usage error. Any memcheck
# error or definite/indirect leak fails.
set -euo pipefail
: "${GPU_METRICS:?}" "${NVML_SIM_LIBRARY:?}" "${KGS_SOURCE_DIR:?}"
scen="$KGS_SOURCE_DIR/sim/scenarios"
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
    --track-fds=no)
run() {
  local scenario=$1; shift
  echo "--- $scenario: gpu-metrics $*"
  set +e
  NVML_SIM_SCENARIO="$scen/$scenario.json" "${vg[@]}" "$GPU_METRICS" \
    --nvml-library "$NVML_SIM_LIBRARY" "$@" >/dev/null
  local rc=$?
  set -e
  # 0 and 3 (a lost GPU) are legitimate exits; 99 is valgrind's.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "FAILED: exit $rc"; exit 1
  fi
}
run idle-4xh100 --format json
run mig-a100 --format table
run inference-burst --format jsonl --interval 200ms --count 3
run old-driver --format csv
run gpu-lost --format json --interval 300ms --count 2
run time-slicing-h100 --processes
run time-slicing-h100 --format csv --processes --interval 200ms --count 2
CUDA_VISIBLE_DEVICES=2,0 CUDA_DEVICE_ORDER=PCI_BUS_ID run idle-4xh100 --format csv --quiet
CUDA_VISIBLE_DEVICES=MIG-9b1f7d03 run mig-a100 --format jsonl --device all
# A usage error exits 2 and must not leak either.
set +e
"${vg[@]}" "$GPU_METRICS" --format nope >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAILED: usage error exit $rc"; exit 1; }
echo "valgrind: clean"
