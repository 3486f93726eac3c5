#!/usr/bin/env bash
# Fails (listing the files) when any tracked C++ file differs from clang-format's output.
# With --fix, rewrites them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1
mapfile -t files < <(git ls-files '*.h' '*.cc' | grep -v '^tests/fuzz/corpus/')
# One clang-format per file, one per core at a time.
if [ $fix -eq 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 16 clang-format -i
  bad=()
else
  mapfile -t bad < <(printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 16 sh -c \
    'for f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh | sort)
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) need clang-format (tools/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"
