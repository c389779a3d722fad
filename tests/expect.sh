# Sourced by the CLI's test scripts: `expect CODE DESCRIPTION -- COMMAND...`
# runs the command with its output in $work/out and $work/err and checks its
# exit code, and for exit 2 the one line on stderr; `fail` counts a failure;
# `same DESCRIPTION FILE1 FILE2` checks two files are equal; `lines FILE`.
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$what: exit $got, expected $want"; cat "$work/err"; return
  fi
  if [ "$want" = 2 ] && [ "$(wc -l <"$work/err")" != 1 ]; then
    fail "$what: expected one line on stderr, got:"; cat "$work/err"; return
  fi
  echo "ok: $what"
  passes=$((passes + 1))
}
same() {  # same DESCRIPTION FILE1 FILE2
  if cmp -s "$2" "$3"; then echo "ok: $1"; passes=$((passes + 1)); else fail "$1: $2 and $3 differ"; fi
}
lines() { wc -l <"$1"; }
