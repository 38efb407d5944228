"""The frontier's data (scripts/frontier.sh), as JSONL, from the built-in
corpora: the prose corpus split by document in name order, the first half to
fit on (the first ~8000 characters of each, as two ~4000-character
documents), the second half and every other code file to evaluate on (the
first ~3000 / ~2500 characters of each: one context of at most 1024 tokens);
and, to fit at scale, fit-large.jsonl: the rest of both corpora, prose and
code alternating. Pieces end at whitespace. usage: frontier_data.py CORPORA OUT_DIR"""
import itertools
import json
import os
import sys


def pieces(text, n, k):
    """k pieces of about n characters from the start, each ending at whitespace."""
    out, i = [], 0
    while len(out) < k and i < len(text):
        j = min(len(text), i + n)
        while j < len(text) and not text[j].isspace():
            j += 1
        out.append(text[i:j])
        i = j
    return out


def main(root, out):
    os.makedirs(out, exist_ok=True)

    def docs(kind, names, n, k):
        for name in names:
            with open(os.path.join(root, kind, name), encoding="utf-8") as f:
                yield from pieces(f.read(), n, k)

    def write(name, texts):
        with open(os.path.join(out, name), "w") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")

    prose = sorted(os.listdir(os.path.join(root, "prose")))
    code = sorted(os.listdir(os.path.join(root, "code")))
    half = len(prose) // 2
    write("fit.jsonl", docs("prose", prose[:half], 4000, 2))
    write("prose-eval.jsonl", docs("prose", prose[half:], 3000, 1))
    write("code-eval.jsonl", docs("code", code[::2], 2500, 1))

    # Fitting at scale: every other text of both corpora, prose and code
    # alternating, in ~4000-character pieces; an evaluation document's first
    # piece (at least what the evaluation reads of it) is left out.
    def rest(kind, names, held):
        for name in names:
            with open(os.path.join(root, kind, name), encoding="utf-8") as f:
                ps = pieces(f.read(), 4000, 10**9)
            yield from ps[1:] if name in held else ps

    big = [list(rest("prose", prose, set(prose[half:]))), list(rest("code", code, set(code[::2])))]
    write("fit-large.jsonl", (p for pair in itertools.zip_longest(*big) for p in pair if p is not None))


main(*sys.argv[1:3])
