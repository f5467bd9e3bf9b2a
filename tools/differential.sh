#!/usr/bin/env bash
# Differential testing of the model against the device (issue 5):
#   tools/differential.sh N SEED
# generates N random protocols (`pipesim generate`, seeds SEED .. SEED+N-1), runs them on the model
# (`pipesim check`: verdict distribution) and then through `pipesim crosscheck` (model vs GPU), and
# reports how many agree. Disagreeing scenarios are copied to OUT/disagreements/ to be kept as
# regression scenarios.
#
# Environment:
#   PIPESIM=path        the pipesim binary (default: build/verify/pipesim, else build-gen/verify/pipesim)
#   MISTAKE_RATE=R      share of scenarios with a deliberate mistake (default 0.3)
#   OUT=DIR             where the scenarios and logs go (default ${TMPDIR:-/tmp}/pipesim-differential/SEED_N)
#   PER_FILE=1          call crosscheck once per scenario and count its exit codes (0 agree, 1 disagree,
#                       2 unavailable / bad input) instead of parsing one batch run's output
#   CROSSCHECK_ARGS=... extra arguments for `pipesim crosscheck` (e.g. "--timeout-ms 50")
# Exit: 0 every compared scenario agrees, 1 a disagreement, 2 usage error, bad input or no crosscheck.
set -uo pipefail

if [[ $# -lt 2 || ! "$1" =~ ^[0-9]+$ || ! "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 N SEED   (environment: PIPESIM, MISTAKE_RATE, OUT, PER_FILE, CROSSCHECK_ARGS)" >&2
  exit 2
fi
N=$1
SEED=$2
cd "$(dirname "$0")/.."
RATE=${MISTAKE_RATE:-0.3}
if [[ -z "${PIPESIM:-}" ]]; then
  for p in build/verify/pipesim build-gen/verify/pipesim; do
    if [[ -x $p ]]; then PIPESIM=$p; break; fi
  done
fi
if [[ -z "${PIPESIM:-}" || ! -x "$PIPESIM" ]]; then
  echo "differential: no pipesim binary (set PIPESIM=path or build first: tools/setup.sh build)" >&2
  exit 2
fi
OUT=${OUT:-${TMPDIR:-/tmp}/pipesim-differential/${SEED}_${N}}
rm -rf "$OUT/scenarios" "$OUT/disagreements"
mkdir -p "$OUT/scenarios"

# 1. Generate.
"$PIPESIM" generate --seed "$SEED" --count "$N" --out "$OUT/scenarios" --mistake-rate "$RATE" || exit 2

mistake_of() { sed -n 's/^# generated: mistake=\(.*\)$/\1/p' "$1" | head -1; }

# 2. The model: verdict distribution (no scenario has an `expect` line, so "got" is the verdict).
"$PIPESIM" check "$OUT/scenarios" > "$OUT/check.log" 2>&1
check_rc=$?
if [[ $check_rc -eq 2 ]]; then
  echo "differential: pipesim check reported bad input on generated scenarios (a generator bug); see $OUT/check.log" >&2
  grep -m5 'error' "$OUT/check.log" >&2
  exit 2
fi
echo "== model verdicts ($N scenarios, seeds $SEED..$((SEED + N - 1)), mistake rate $RATE)"
sed -n 's/^\(ok\|FAIL\) \+\([^ ]*\) .* got \(.*[^ ]\) \+[0-9.]\+ ms$/\3/p' "$OUT/check.log" | sort | uniq -c | sort -rn
echo "   by mistake (verdict ok / not ok):"
sed -n 's/^\(ok\|FAIL\) \+\([^ ]*\) .*$/\1 \2/p' "$OUT/check.log" | while read -r res file; do
  echo "$(mistake_of "$file") $res"
done | sort | uniq -c | awk '{ n[$2] += $1; if ($3 == "FAIL") bad[$2] += $1 }
  END { for (m in n) printf "   %-26s %4d ok, %4d not ok\n", m, n[m] - bad[m], bad[m] }' | sort

# 3. The device.
if ! "$PIPESIM" --help 2>&1 | grep -qE '^ +crosscheck\b'; then
  echo "== crosscheck: UNAVAILABLE — this pipesim ($PIPESIM) has no 'crosscheck' command; only the model ran"
  exit 2
fi
agree=0; racy=0; disagree=0; model_only=0; skipped=0; unavailable=0; bad=0
mkdir -p "$OUT/disagreements"
keep() { cp "$1" "$OUT/disagreements/"; }
if [[ "${PER_FILE:-0}" == 1 ]]; then
  : > "$OUT/crosscheck.log"
  for f in "$OUT"/scenarios/*.scn; do
    # shellcheck disable=SC2086
    "$PIPESIM" crosscheck ${CROSSCHECK_ARGS:-} "$f" >> "$OUT/crosscheck.log" 2>&1
    rc=$?
    case $rc in
      0) agree=$((agree + 1)) ;;
      1) disagree=$((disagree + 1)); keep "$f" ;;
      *) if grep -q -e 'no GPU' -e 'without CUDA' "$OUT/crosscheck.log"; then
           echo "== crosscheck: UNAVAILABLE — $(grep -m1 -e 'no GPU' -e 'without CUDA' "$OUT/crosscheck.log")"
           exit 2
         fi
         bad=$((bad + 1)) ;;
    esac
  done
else
  # shellcheck disable=SC2086
  "$PIPESIM" crosscheck ${CROSSCHECK_ARGS:-} "$OUT/scenarios" > "$OUT/crosscheck.log" 2>&1
  rc=$?
  if [[ $rc -eq 2 ]] && ! grep -q '^== ' "$OUT/crosscheck.log"; then
    echo "== crosscheck: UNAVAILABLE (exit 2) — $(head -c 400 "$OUT/crosscheck.log")"
    exit 2
  fi
  # Per scenario: a "== FILE" line, later its "verdict model: ... device: ... AGREEMENT" line.
  while IFS=$'\t' read -r file verdict; do
    case $verdict in
      *DISAGREE) disagree=$((disagree + 1)); keep "$file" ;;
      *"model-only rule") model_only=$((model_only + 1)) ;;
      *"agree (timing-dependent)") racy=$((racy + 1)) ;;
      *skipped) skipped=$((skipped + 1)) ;;
      *unavailable) unavailable=$((unavailable + 1)) ;;
      *agree) agree=$((agree + 1)) ;;
    esac
  done < <(awk '/^== /{ f = substr($0, 4) } /^  verdict /{ print f "\t" $0 }' "$OUT/crosscheck.log")
  bad=$(grep -c ': error:' "$OUT/crosscheck.log")
  summary=$(grep -E '^[0-9]+ scenario\(s\) on' "$OUT/crosscheck.log" | tail -1)
  [[ -n "$summary" ]] && echo "== crosscheck says: $summary"
fi
compared=$((agree + racy + disagree))
echo "== differential: $N generated, $compared compared: $agree agree, $racy agree only through an explored interleaving (races), $disagree disagree" \
     "($model_only model-only rule, $skipped skipped, $unavailable unavailable, $bad bad input)"
if [[ $disagree -gt 0 ]]; then
  echo "   disagreeing scenarios kept in $OUT/disagreements/ (mistake: $(for f in "$OUT"/disagreements/*.scn; do mistake_of "$f"; done | sort | uniq -c | tr '\n' ' '))"
fi
echo "   logs: $OUT/check.log $OUT/crosscheck.log"
[[ $bad -gt 0 ]] && exit 2
[[ $disagree -gt 0 ]] && exit 1
exit 0
