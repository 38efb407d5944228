#!/usr/bin/env bash
# tests/run.sh itself, on a fake tree of four tests: one passes and skips
# (with a reason) after a second, one fails, one crashes without a FAIL line,
# one (an emulator test, run in the background) passes once and fails once.
# The last line must count all of it as "N passed, N failed, N skipped", the
# skip must be listed again with its reason before it, each test's line must
# end with its seconds, and the exit status must say a test failed. Prints
# PASS/FAIL lines (tests/run.sh counts them).
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests" "$tmp/build/tests" "$tmp/build/gpu/emu"
cp tests/run.sh "$tmp/tests/"
printf '#!/bin/sh\nsleep 1\necho "PASS a one"\necho "SKIP a two: no device here (reason)"\necho "PASS a three"\n' \
    >"$tmp/build/tests/test_a"
printf '#!/bin/sh\necho "PASS b one"\necho "FAIL b two"\nexit 1\n' >"$tmp/build/tests/test_b"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$tmp/build/tests/test_c"
# the emulator's tests run in the background and are reported after the rest
printf '#!/bin/sh\necho "PASS e one"\necho "FAIL e two"\nexit 1\n' >"$tmp/build/gpu/emu/test_forward_emu"
chmod +x "$tmp/build/tests/"test_* "$tmp/build/gpu/emu/test_forward_emu"
out=$(bash "$tmp/tests/run.sh" 2>&1); rc=$?
last=$(tail -n 1 <<<"$out")

check() { # NAME OK: one PASS/FAIL line, with run.sh's output on failure
    if [ "$2" = 1 ]; then echo "PASS $1"; else echo "FAIL $1"; sed 's/^/  | /' <<<"$out"; fi
}
check "run.sh: last line counts passed, failed and skipped" \
    "$([ "$last" = "4 passed, 3 failed, 1 skipped" ] && echo 1)"
check "run.sh: a test run in the background is counted and reported" \
    "$(grep -qE -- '^-- test_forward_emu: 1 passed, 1 failed, 0 skipped in [0-9]+ s$' <<<"$out" && grep -qx 'FAIL e two' <<<"$out" && echo 1)"
check "run.sh: the skip is listed with its reason before the last line" \
    "$(tail -n 3 <<<"$out" | grep -qx 'SKIP a two: no device here (reason)' && echo 1)"
check "run.sh: a per-test line counts its skips" \
    "$(grep -qE -- '^-- test_a: 2 passed, 0 failed, 1 skipped in [0-9]+ s$' <<<"$out" && echo 1)"
check "run.sh: a per-test line ends with its seconds (test_a sleeps 1 s)" \
    "$(grep -qE -- '^-- test_a: .* in [1-9][0-9]* s$' <<<"$out" && echo 1)"
check "run.sh: exits non-zero when a test failed" "$([ "$rc" -ne 0 ] && echo 1)"
