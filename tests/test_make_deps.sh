#!/usr/bin/env bash
# Header dependencies: when a header changes, make rebuilds the objects and
# programs whose sources include it, directly or through another header,
# and nothing else. What make would do is read from its plan (make -n -W
# HEADER: as if the header had just changed), less what it would do anyway;
# the users are found here independently, from the #include lines. Prints
# PASS/FAIL lines (tests/run.sh counts them).
cd "$(dirname "$0")/.." || exit 2
fail=0

# built "TARGETS" [MAKE ARGS]: the objects and programs make's plan for TARGETS compiles
# (build/provenance, remade on every run, is held old: a plan would rebuild
# version.o, and relink every program, only on its account).
built() {
    local targets=$1; shift
    # shellcheck disable=SC2086
    make -n -o build/provenance "$@" $targets 2>&1 | grep -oE -- ' -o (build/obj/[^ ]*\.o|build/tests/[^ ]*)( |$)' | awk '{print $2}' | sort -u
}

# users HEADER FILES...: those of FILES that include HEADER (its base name),
# directly or through headers that do.
users() {
    local names=("$(basename "$1")") found=" " f h n; shift
    for ((n = 0; n < ${#names[@]}; n++)); do
        for f in $(grep -lE "^#include \"([^\"]*/)?${names[n]//./\\.}\"" "$@" $(git ls-files '*.h')); do
            case $found in *" $f "*) continue ;; esac
            found+="$f "
            h=$(basename "$f")
            [[ $f == *.h ]] && names+=("$h")
        done
    done
    tr ' ' '\n' <<<"$found" | grep -v '\.h$' | grep .
}

# check NAME HEADER "TARGETS" WANT...: touching HEADER rebuilds exactly WANT of TARGETS' plan.
check() {
    local name=$1 header=$2 targets=$3; shift 3
    local before got want
    before=$(built "$targets")
    got=$(comm -23 <(built "$targets" -W "$header") <(echo "$before"))
    want=$(comm -23 <(printf '%s\n' "$@" | sort -u) <(echo "$before"))
    if [ -n "$want" ] && [ "$got" = "$want" ]; then
        echo "PASS make: $name"
    else
        echo "FAIL make: $name"
        echo "  rebuilt: $(tr '\n' ' ' <<<"$got" | head -c 800)"
        echo "  its users: $(tr '\n' ' ' <<<"$want")"
        fail=1
    fi
}

src=$(make -s --no-print-directory print-src) || { echo "FAIL make: print-src failed"; exit 1; }
# objects of the sources of ./aha that include HEADER
obj_users() { users "$1" $src | sed 's|^|build/obj/|; s|\.c$|.o|'; }

check "a common header (strmap.h) rebuilds only the objects that include it, through tokenizer_impl.h too" \
    common/strmap.h aha $(obj_users common/strmap.h)
check "a stage's header (prompt.h) rebuilds only its users" datasets/prompt.h aha $(obj_users datasets/prompt.h)
tests=$(ls tests/test_*.c)
check "a test helper (tests/filebuf.h) rebuilds only the tests that include it" tests/filebuf.h \
    "$(ls tests/test_*.c | sed 's|^tests/|build/tests/|; s|\.c$||' | tr '\n' ' ')" \
    $(users tests/filebuf.h $tests | sed 's|^tests/|build/tests/|; s|\.c$||')

# make demo's build, after the set-up installs Open MPI, is a second make that finds mpicc then: it must
# ask for the MPI library too (its goal mpi: the library, or "MPI skipped" without mpicc), else mpirun
# ./aha is refused until another make
plan=$(make -n -o build/provenance demo 2>&1)
if grep -qE '^make aha mpi( |$)' <<<"$plan"; then
    echo "PASS make: make demo's first build includes the MPI library the set-up made buildable"
else
    echo "FAIL make: make demo's first build includes the MPI library the set-up made buildable"
    echo "  its plan: $(grep -vE '^(cc|clang) ' <<<"$plan" | head -c 600)"
    fail=1
fi
exit $fail
