#!/usr/bin/env bash
# Every program may call only the std::filesystem functions the workloads call:
# a PyTorch wheel's libtorch_cpu.so exports its own copy of libstdc++'s
# filesystem code (pytorch/pytorch#133437); the workloads' set is the one run
# against a wheel on a GPU (docs/gpu.md). Prints what a program imports beyond it.
# usage: filesystem_imports.sh WORKLOAD... -- PROGRAM...
set -u
command -v nm >/dev/null || { echo "skipped: no nm"; exit 77; }
imports() { nm -D --undefined-only "$1" | c++filt | grep 'std::filesystem' | sed 's/.*U //' | sort -u; }
allowed=$(mktemp); trap 'rm -f "$allowed"' EXIT
while [ $# -gt 0 ] && [ "$1" != "--" ]; do imports "$1" >> "$allowed"; shift; done
shift
sort -u -o "$allowed" "$allowed"
status=0
for program in "$@"; do
  extra=$(imports "$program" | comm -23 - "$allowed")
  if [ -n "$extra" ]; then
    echo "$(basename "$program") imports std::filesystem functions the workloads do not:"
    echo "$extra"
    status=1
  else
    echo "$(basename "$program"): ok"
  fi
done
exit $status
