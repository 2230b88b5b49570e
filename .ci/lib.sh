# What .ci/run counts and how, in functions of their own so that test/repo/ci-run.test.ts runs
# them on a fake suite. Source it after scripts/lib.sh, set CI_WORK to an empty folder, call
# ci_begin, then ci_pass for each pass and ci_end last (docs/reliability.md#what-ci-counts).
#
# What counts is what tap counts in its closing `# { total: … }` line, read with tap's own parser:
# every test point at any depth (t.ok, t.equal, a skip, a todo), not a test file's or a subtest's
# closing point, which repeats what the points inside it said. Such a closing point counts, as one
# assertion, only when it says something they did not: a file that exited non-zero although every
# assertion in it passed, an empty subtest. A file that timed out counts one failed assertion: tap
# drops its output and prints `not ok - timeout!` naming it (`expired:`).

CI_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The quarantine: test files that are run once more, alone, when they fail (the file's header).
CI_QUARANTINE="${CI_QUARANTINE:-.ci/quarantine}"

# The raw TAP output of a tap run (any other lines, such as make's, are ignored) as one line per
# test file: `<file>\t<passed>\t<failed>\t<skipped>\t<todo>`, counted by tap's own parser
# (.ci/tap-counts.mjs), so the sums are tap's closing line. With a second argument, the failed
# assertions are written there, `<file>\t<name>` a line.
tap_file_counts() {
  node "$CI_LIB_DIR/tap-counts.mjs" ${2:+"$2"} <"$1"
}

# tap's own closing count of a run, as `<total> <pass> <fail> <skip> <todo>`; nothing when the
# output has none.
tap_summary() {
  local line field out=""
  line="$(grep -E '^# \{ total: [0-9]+' "$1" | tail -n 1)"
  [ -n "$line" ] || return 0
  for field in total pass fail skip todo; do
    out="$out $(printf '%s\n' "$line" | sed -nE "s/.*[{,] $field: ([0-9]+).*/\\1/p" | grep . || echo 0)"
  done
  echo "${out# }"
}

# The sums of a counts file (tap_file_counts): `<passed> <failed> <skipped> <todo> <files>`.
counts_sum() {
  awk -F'\t' '{ p += $2; f += $3; s += $4; t += $5; n++ }
    END { printf "%d %d %d %d %d\n", p, f, s, t, n }' "$1"
}

# Notes something wrong that no assertion counts; each note is one failure in the closing line.
ci_fail() {
  printf '%s\n' "$*" >>"$CI_WORK/extra"
}

# The quarantine's entries, `<file>\t<date>\t<reason>`; a line that is not one (nor blank, nor a
# comment), or that names no file, is a failure: an entry must say when and why.
ci_quarantine_entries() {
  [ -f "$CI_QUARANTINE" ] || return 0
  local n=0 line path date reason
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case "$line" in '' | '#'*) continue ;; esac
    read -r path date reason <<<"$line"
    if [[ ! "$date" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || [ -z "$reason" ]; then
      ci_fail "$CI_QUARANTINE line $n is not \`<test file> <YYYY-MM-DD> <reason>\`: $line"
    elif [ ! -f "$path" ]; then
      ci_fail "$CI_QUARANTINE line $n names $path, which does not exist"
    else
      printf '%s\t%s\t%s\n' "$path" "$date" "$reason"
    fi
  done <"$CI_QUARANTINE"
}

ci_begin() {
  : >"$CI_WORK/extra"
  : >"$CI_WORK/hits"
  : >"$CI_WORK/passes"
  ci_quarantine_entries >"$CI_WORK/quarantine"
  # How a quarantined file is run again; the test of this file runs its own tap.
  declare -p CI_TAP >/dev/null 2>&1 || CI_TAP=(npx tap)
}

# The files of a counts file with a failed assertion.
failed_in() {
  awk -F'\t' '$3 > 0 { print $1 }' "$1"
}

# Counts one run's output into <log>.counts and notes what its assertions do not say: a non-zero
# exit with no failed assertion (a lint error, tap itself failing), no tap output at all, or a
# count that differs from tap's closing line (this file would then miscount).
ci_count_run() {
  local label="$1" log="$2" status="$3" p f s t n summary
  : >"$log.failures"
  tap_file_counts "$log" "$log.failures" >"$log.counts"
  read -r p f s t n <<<"$(counts_sum "$log.counts")"
  summary="$(tap_summary "$log")"
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    ci_fail "$label exited with $status and no assertion failed"
  fi
  if [ -z "$summary" ]; then
    [ "$status" -ne 0 ] || ci_fail "$label printed no tap summary"
  elif [ "$summary" != "$((p + f + s + t)) $p $f $s $t" ]; then
    ci_fail "$label: counted $p passed, $f failed, $s skipped, $t todo;" \
      "tap's closing line says (total pass fail skip todo) $summary"
  fi
}

# Lists a run's failed files and its failed assertions, so that the end of its output shows them.
list_failures() {
  [ -n "$(failed_in "$1.counts")" ] || return 0
  echo "failed files:"
  failed_in "$1.counts" | sed 's/^/  /'
  echo "failed assertions:"
  grep -E '^ +not ok ' "$1" | grep -vE ' # (TODO|SKIP)' | head -n 40
}

# ci_pass <id> <label> <command…>: runs the command (a tap run, or `make test`, which ends in one),
# shows its output and counts its assertions per file into $CI_WORK/<id>.counts. A failure is a
# failure: nothing is run again, except a file of the quarantine, once, alone, with CI_TAP; its
# counts then come from that run, and the hit is listed on the closing lines.
ci_pass() {
  local id="$1" label="$2" log="$CI_WORK/$1.log" status file entry again kind
  shift 2
  printf '%s\t%s\n' "$id" "$label" >>"$CI_WORK/passes"
  "$@" </dev/null | tee "$log"
  status="${PIPESTATUS[0]}"
  ci_count_run "$label" "$log" "$status"
  list_failures "$log"
  cp "$log.counts" "$CI_WORK/$id.counts"
  cp "$log.failures" "$CI_WORK/$id.failures"
  while IFS= read -r file; do
    entry="$(awk -F'\t' -v f="$file" '$1 == f { print $2 " " $3; exit }' "$CI_WORK/quarantine")"
    [ -n "$entry" ] || continue
    again="$log.again.$(printf '%s' "$file" | tr -c 'A-Za-z0-9.' _)"
    say "again, alone (quarantined $entry): $file"
    "${CI_TAP[@]}" "$file" </dev/null | tee "$again"
    status="${PIPESTATUS[0]}"
    ci_count_run "$label, $file alone" "$again" "$status"
    list_failures "$again"
    for kind in counts failures; do
      awk -F'\t' -v f="$file" '$1 != f' "$CI_WORK/$id.$kind" >"$CI_WORK/$id.$kind.tmp"
      cat "$again.$kind" >>"$CI_WORK/$id.$kind.tmp"
      mv "$CI_WORK/$id.$kind.tmp" "$CI_WORK/$id.$kind"
    done
    if [ -n "$(failed_in "$again.counts")" ] || [ "$status" -ne 0 ]; then
      echo "quarantined $file failed in $label and again alone (entry: $entry)" >>"$CI_WORK/hits"
    else
      echo "quarantined $file failed in $label and passed alone (entry: $entry)" >>"$CI_WORK/hits"
    fi
  done < <(failed_in "$log.counts")
}

# The closing lines and, last, `N passed, N failed`. A file run in more than one pass counts once,
# with the counts of the pass in which it failed most (the first on a tie): a failure in any pass
# is a failure, and no assertion is counted twice. Each failed file is followed by the names of
# its failed assertions in that pass (ten at most), as the end of a long log is what gets read.
# Skips and todos are in neither number. Returns non-zero when anything failed.
ci_end() {
  local id label p f s t n merged="$CI_WORK/merged" passed failed extra file
  while IFS=$'\t' read -r id label; do
    read -r p f s t n <<<"$(counts_sum "$CI_WORK/$id.counts")"
    echo "$label: $p passed, $f failed, $s skipped, $t todo, in $n files"
  done <"$CI_WORK/passes"
  # <file> <passed> <failed> <skipped> <todo> <pass label> <pass id> <runs>, one line a file.
  while IFS=$'\t' read -r id label; do
    awk -F'\t' -v OFS='\t' -v l="$label" -v i="$id" '{ print $0, l, i }' "$CI_WORK/$id.counts"
  done <"$CI_WORK/passes" | awk -F'\t' '
    !($1 in rec) { order[++n] = $1; rec[$1] = $0; fail[$1] = $3; runs[$1] = 1; next }
    { runs[$1]++ }
    $3 > fail[$1] { rec[$1] = $0; fail[$1] = $3 }
    END { for (i = 1; i <= n; i++) print rec[order[i]] "\t" runs[order[i]] }
  ' >"$merged"
  n="$(awk -F'\t' '$8 > 1' "$merged" | wc -l)"
  [ "$n" -eq 0 ] ||
    echo "files run in more than one pass: $n; each counts once, from the pass in which it failed most"
  cat "$CI_WORK/hits"
  while IFS=$'\t' read -r file p f s t label id _; do
    [ "$f" -gt 0 ] || continue
    echo "failed: $file: $f of $((p + f)) assertions ($label)"
    awk -F'\t' -v f="$file" '$1 == f { print "  not ok: " $2 }' "$CI_WORK/$id.failures" | head -n 10
  done <"$merged"
  sed 's/^/failed: /' "$CI_WORK/extra"
  passed="$(awk -F'\t' '{ s += $2 } END { print s + 0 }' "$merged")"
  failed="$(awk -F'\t' '{ s += $3 } END { print s + 0 }' "$merged")"
  extra="$(wc -l <"$CI_WORK/extra")"
  failed=$((failed + extra))
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# What starts a gateway in a test: an in-process one (test/helpers/in-process.ts, gateway-app.ts),
# one built by hand (gatewayRole, chooseServer), or an engine process whose roles name it or are
# all of them (test/helpers/broadcast.ts stage).
GATEWAY_MARKERS="inProcessGateway\\(|gatewayWith\\(|gatewayRole\\(|chooseServer\\(|\\bstage\\(|ALL_ROLES|'gateway'"

# The test files that start a gateway: the file itself or a module of test/ it imports names a
# marker. The server-mode suites (test/clickhouse-server/*-suite.test.ts) run such files again
# against the ClickHouse stand-in from a process of their own and name none.
gateway_test_files() {
  local f rel dep sources
  for f in $(find test -name '*.test.ts' | sort); do
    sources=("$f")
    for rel in $(grep -ohE "from '\\.{1,2}/[^']+\\.ts'" "$f" | sed -E "s/^from '(.*)'\$/\\1/"); do
      dep="$(realpath -m --relative-to=. "$(dirname "$f")/$rel")"
      case "$dep" in test/*.test.ts) ;; test/*) [ -f "$dep" ] && sources+=("$dep") ;; esac
    done
    grep -qE "$GATEWAY_MARKERS" "${sources[@]}" && echo "$f"
  done
}
