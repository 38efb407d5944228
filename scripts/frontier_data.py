"""The frontier's data (scripts/frontier.sh), as JSONL, from the built-in
corpora: the prose corpus split by document in name order, the first half to
fit on (the first ~8000 characters of each, as two ~4000-character
documents; fit-more.jsonl: four), the second half and every other code file
to evaluate on (the first ~3000 / ~2500 characters of each: one context of
at most 1024 tokens); for the frontier at ctx 4096, two whole held-out
documents of each corpus (prose-long.jsonl, code-long.jsonl: ~13500 tokens
each); and, to fit at scale, fit-large.jsonl: the rest of both corpora,
prose and code alternating, without the long documents. Pieces end at
whitespace. usage: frontier_data.py CORPORA OUT_DIR"""
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
    write("fit-more.jsonl", docs("prose", prose[:half], 4000, 4))  # the same books, further into each
    write("prose-eval.jsonl", docs("prose", prose[half:], 3000, 1))
    write("code-eval.jsonl", docs("code", code[::2], 2500, 1))
    long = {"prose": ["licence-gpl-3.txt", "licence-lgpl-2.1.txt"], "code": ["py-fractions.py", "py-heapq.py"]}
    for kind, names in long.items():
        assert set(names) <= set(prose[half:] + code[::2]), names  # held out of fit.jsonl too
        write(f"{kind}-long.jsonl", docs(kind, names, 10**9, 1))

    # Fitting at scale: every other text of both corpora, prose and code
    # alternating, in ~4000-character pieces; an evaluation document's first
    # piece (at least what the evaluation reads of it) is left out, a long
    # document all of it.
    def rest(kind, names, held):
        for name in names:
            if name in long[kind]:
                continue
            with open(os.path.join(root, kind, name), encoding="utf-8") as f:
                ps = pieces(f.read(), 4000, 10**9)
            yield from ps[1:] if name in held else ps

    big = [list(rest("prose", prose, set(prose[half:]))), list(rest("code", code, set(code[::2])))]
    write("fit-large.jsonl", (p for pair in itertools.zip_longest(*big) for p in pair if p is not None))


main(*sys.argv[1:3])
