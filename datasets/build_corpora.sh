#!/usr/bin/env bash
# Build the built-in corpora from Debian packages (the texts are never
# committed; datasets/corpora/ is git-ignored):
#   datasets/corpora/prose/     King James Bible books (public domain) and the
#                               long licence texts of /usr/share/common-licenses
#   datasets/corpora/code/      Python standard-library modules and libxcrypt C
#   datasets/corpora/MANIFEST   per document: path, bytes, package, version, licence
# The selection is fixed, so the corpora are the same wherever the package
# versions are. Idempotent: with the same recipe (this script) and every
# listed file in place, a second run does nothing.
set -euo pipefail
cd "$(dirname "$0")"
out=corpora
recipe=$(sha256sum build_corpora.sh | cut -d' ' -f1)

up_to_date() {
    grep -qx "# recipe $recipe" "$out/MANIFEST" 2>/dev/null || return 1
    local doc bytes rest
    while IFS=$'\t' read -r doc bytes rest; do
        [ "${doc:0:1}" = "#" ] && continue
        [ "$(stat -c %s "$out/$doc" 2>/dev/null)" = "$bytes" ] || return 1
    done <"$out/MANIFEST"
}
if up_to_date; then
    echo "corpora: up to date (datasets/$out)"
    exit 0
fi

# bible-kjv prints the text kept compressed in bible-kjv-text.
../scripts/deb-install.sh bible-kjv bible-kjv-text libxcrypt-source python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/aha-corpora.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/prose" "$tmp/code"
printf '# aha built-in corpora, made by datasets/build_corpora.sh from Debian packages.\n' >"$tmp/MANIFEST"
printf '# document\tbytes\tpackage\tversion\tlicence\n' >>"$tmp/MANIFEST"

# add DOC PACKAGE LICENCE: check DOC (non-empty UTF-8) and list it.
add() {
    local doc=$1 pkg=$2 licence=$3
    [ -s "$tmp/$doc" ] || { echo "corpora: $doc came out empty" >&2; exit 1; }
    iconv -f UTF-8 -t UTF-8 "$tmp/$doc" >/dev/null || { echo "corpora: $doc is not UTF-8" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\t%s\n' "$doc" "$(stat -c %s "$tmp/$doc")" "$pkg" \
        "$(dpkg-query -W -f='${Version}' "$pkg")" "$licence" >>"$tmp/MANIFEST"
}

# Prose: whole books (reference ranges are clamped to the book's last verse),
# 79 columns as the bible program pretty-prints them.
for b in Ruth:ruth Esther:esther Jonah:jonah Ecclesiastes:ecclesiastes Song:song-of-solomon \
         Lamentations:lamentations Daniel:daniel Mark:mark James:james Hebrews:hebrews \
         Philemon:philemon 1John:1-john; do
    doc=prose/kjv-${b#*:}.txt
    bible -l 79 "${b%%:*}1:1-${b%%:*}999:999" </dev/null | sed '/./,$!d' >"$tmp/$doc"
    add "$doc" bible-kjv-text "public domain (King James Version, 1611)"
done
for l in GPL-3 GPL-2 LGPL-2.1 MPL-2.0 Apache-2.0 GFDL-1.3; do
    doc=prose/licence-${l,,}.txt
    cp "/usr/share/common-licenses/$l" "$tmp/$doc"
    add "$doc" base-files "verbatim copying permitted (the licence text's own terms)"
done

# Code: Debian's default Python's standard library and libxcrypt's sources.
py=/usr/lib/$(basename "$(readlink -f /usr/bin/python3)")
for m in argparse textwrap heapq bisect fractions shlex statistics functools contextlib string \
         json/decoder; do
    doc=code/py-${m//\//-}.py
    cp "$py/$m.py" "$tmp/$doc"
    add "$doc" "$(dpkg -S "$py/$m.py" | head -n1 | cut -d: -f1)" "PSF-2.0"
done
for c in lib/crypt-bcrypt.c lib/alg-yescrypt-opt.c lib/alg-sha256.c lib/crypt.c lib/crypt-des.c \
         lib/alg-md5.c lib/crypt-sha512.c lib/crypt-port.h test/gensalt.c; do
    doc=code/c-$(basename "$c")
    cp "/usr/src/libxcrypt/$c" "$tmp/$doc"
    add "$doc" libxcrypt-source \
        "LGPL-2.1+, public domain or BSD per the file's header (/usr/share/doc/libxcrypt-source/copyright)"
done

echo "# recipe $recipe" >>"$tmp/MANIFEST"
chmod 755 "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
for c in prose code; do
    echo "corpora: datasets/$out/$c: $(ls "$out/$c" | wc -l) documents, $(du -sh "$out/$c" | cut -f1)," \
         "$(find "$out/$c" -type f -size +19999c | wc -l) of 20 KB or more"
done
