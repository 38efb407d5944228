#!/bin/sh
# Fetch Debian's HDF5 / OpenBLAS / PCRE2 / cJSON / utf8proc / zlib packages
# (headers, .so links and the runtime libraries they need) and unpack them
# into a project-local prefix, so that aha builds on a machine that has a
# compiler (and CUDA) but no package registry -- the GPU machine of issue 5.
#
#   scripts/fetch-debs.sh        here, where apt-get reaches Debian's registry
#   -> .deps/debs/*.deb          the downloaded packages (git-ignored)
#   -> .deps/root/usr/...        them unpacked with dpkg-deb -x
#   -> .deps/env.mk              the flags kernels/cuda/cuda.mk and
#                                scripts/gpu-check.sh use when the system
#                                lacks the headers (include it from make)
#
# On the machine without a registry, run `scripts/fetch-debs.sh --unpack`:
# it unpacks what .deps/debs holds (carried there) and downloads nothing.
# The packages are this distribution's (Debian 12, glibc 2.36); they run on
# any x86-64 glibc >= 2.36 (Ubuntu 24.04's CUDA images have 2.39).
set -eu
cd "$(dirname "$0")/.."
DEPS=.deps
DEBS=$DEPS/debs
ROOT=$DEPS/root
mkdir -p "$DEBS" "$ROOT"

# -dev packages: headers and the unversioned .so links; fetched without their
# own dependencies (those are other -dev packages the build does not need).
DEV="libhdf5-dev libopenblas-dev libopenblas-openmp-dev libpcre2-dev libcjson-dev libutf8proc-dev zlib1g-dev libssl-dev"
# Runtime libraries, fetched with their Depends closure below.
RUNTIME="libhdf5-103-1 libhdf5-hl-100 libopenblas0-openmp libpcre2-8-0 libcjson1 libutf8proc2 zlib1g libssl3"
# Part of every glibc system (and of the CUDA images): never shadow these.
BASE='^(libc6|libgomp1|libc-bin|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|debconf|dpkg|perl-base|libcrypt1|tar|coreutils|libselinux1|libpcre2-posix3|libpam.*|login|passwd|adduser|lsb-base|sensible-utils|init-system-helpers|ucf)$'

if [ "${1:-}" != "--unpack" ]; then
    command -v apt-get >/dev/null || { echo "fetch-debs: apt-get not found" >&2; exit 1; }
    # Depends (and PreDepends) closure of the runtime libraries, one name each.
    closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
                  --no-breaks --no-replaces --no-enhances $RUNTIME 2>/dev/null |
              awk '/^[a-z0-9]/ {print $1}' | grep -v ':' | sort -u | grep -Ev "$BASE" || true)
    # Only packages that exist as real (non-virtual) packages.
    want=""
    for p in $DEV $closure; do
        if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then want="$want $p"; fi
    done
    echo "fetch-debs: downloading$(echo $want | wc -w | awk '{print " " $1}') packages into $DEBS"
    (cd "$DEBS" && apt-get download $want >/dev/null)
fi

n=0
for deb in "$DEBS"/*.deb; do
    [ -e "$deb" ] || { echo "fetch-debs: no packages in $DEBS" >&2; exit 1; }
    if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg-deb -x "$deb" "$ROOT"
    else # no dpkg (not a Debian-family system): a .deb is an ar archive
        tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$OLDPWD/$deb")
        tar -xf "$tmp"/data.tar.* -C "$ROOT"
        rm -rf "$tmp"
    fi
    n=$((n + 1))
done
# Absolute symlinks (e.g. libfoo.so -> /usr/lib/...) would point outside the
# prefix: make them relative to it.
find "$ROOT" -type l | while read -r link; do
    target=$(readlink "$link")
    case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$ROOT$target")" "$link" ;;
    esac
done

LIB=$ROOT/usr/lib/x86_64-linux-gnu
# A dependency this machine already has (libcurl, libssl, ...): drop ours, so
# that the binaries' rpath does not shadow the system's copy. The libraries
# the build is for are always kept.
if command -v ldconfig >/dev/null 2>&1; then
    have=$(ldconfig -p 2>/dev/null | awk '{print $1}')
    for f in "$LIB"/lib*.so.*; do
        [ -e "$f" ] || continue
        base=$(basename "$f")
        case "$base" in libhdf5*|libopenblas*|libpcre2*|libcjson*|libutf8proc*|libz.*|libgfortran*|libquadmath*|libaec*|libsz*) continue ;; esac
        soname=$(echo "$base" | sed -E 's/(\.so\.[0-9]+).*/\1/')
        if echo "$have" | grep -qx "$soname"; then rm -f "$f"; fi
    done
fi
ABS=$(pwd)/$ROOT
cat > $DEPS/env.mk <<MK
# Written by scripts/fetch-debs.sh: build against the unpacked packages.
DEPS_ROOT := $ABS
DEPS_CFLAGS := -I$ABS/usr/include -I$ABS/usr/include/hdf5/serial -I$ABS/usr/include/x86_64-linux-gnu/openblas-openmp
# --disable-new-dtags: DT_RPATH, which (unlike DT_RUNPATH) also serves the
# libraries' own dependencies (libhdf5 -> libsz, libopenblas -> libgfortran).
DEPS_LDFLAGS := -Wl,--disable-new-dtags -L$ABS/usr/lib/x86_64-linux-gnu -L$ABS/usr/lib/x86_64-linux-gnu/hdf5/serial -L$ABS/usr/lib/x86_64-linux-gnu/openblas-openmp \\
  -Wl,-rpath,$ABS/usr/lib/x86_64-linux-gnu -Wl,-rpath,$ABS/usr/lib/x86_64-linux-gnu/hdf5/serial -Wl,-rpath,$ABS/usr/lib/x86_64-linux-gnu/openblas-openmp
MK
echo "fetch-debs: unpacked $n packages into $ROOT; flags in $DEPS/env.mk"
ls -d "$LIB"/libhdf5_serial.so* "$LIB"/openblas-openmp/libopenblas*.so* "$LIB"/libpcre2-8.so* \
      "$LIB"/libcjson.so* "$LIB"/libutf8proc.so* 2>/dev/null | sed 's/^/  /'
