#!/usr/bin/env bash
# Time-boxed fuzzing of every parser of outside input (fuzz/fuzz_targets/): each target runs
# for SECONDS (default 45) from the seeds of tests/corpus and its own corpus, and any crash,
# panic, timeout or out-of-memory fails the script. Needs cargo-fuzz (installed here when
# missing and crates.io is reachable; without it the script says so and exits 0, as CI may
# run where nothing can be installed). Nightly features through RUSTC_BOOTSTRAP=1.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-45}"
shift || true

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  if ! cargo install cargo-fuzz --locked >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz cannot be installed here; fuzzing skipped" >&2
    exit 0
  fi
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list)
fi

# Seeds: the malformed-input corpus, by the kind of file each target reads.
seed() {
  local t="$1" dir="fuzz/corpus/$1"
  mkdir -p "$dir"
  case "$t" in
    read_manifest) find tests/corpus examples -name 'manifest.json' -exec cp -t "$dir" {} + 2>/dev/null || true ;;
    read_rank) find tests/corpus -name '*.mpst' -exec cp -t "$dir" {} + 2>/dev/null || true ;;
    platform) find tests/corpus examples -name '*.xml' -exec cp -t "$dir" {} + 2>/dev/null || true ;;
    study) find tests/corpus examples -name '*.toml' -exec cp -t "$dir" {} + 2>/dev/null || true ;;
    *) ;;
  esac
}

export RUSTC_BOOTSTRAP=1
(cd fuzz && cargo fuzz build --release)
failed=()
for t in "${targets[@]}"; do
  seed "$t"
  echo "fuzz: $t for ${secs}s" >&2
  if ! (cd fuzz && cargo fuzz run --release "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"../target/fuzz-$t.log" 2>&1); then
    failed+=("$t")
    tail -40 "target/fuzz-$t.log" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs}s each: nothing found" >&2
