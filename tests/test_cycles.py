"""No two files of a folder call each other, even through others: inside each
source folder the calls between its files go one way, as the include rows do
between folders (tests/test_layout.sh). Read from the objects `make` built
(build/obj): file A uses file B when A's object needs a symbol B's defines;
a cycle is a strongly connected set of more than one file. Prints one
PASS/FAIL line per folder (tests/run.sh counts them).
"""
import glob
import os
import subprocess

from ahatest import ROOT, check, finish

OBJ = os.path.join(ROOT, "build", "obj")
# Cycles not ended yet, each to be removed here when it is (a listed cycle
# that is gone fails too, so the list only shrinks): none.
KNOWN = {}


def uses(objs):
    """{file: files whose symbols it uses}, file = object name without .o."""
    defs, undef = {}, {}
    for o in objs:
        name = os.path.basename(o)[:-2]
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == "U":
                undef.setdefault(name, set()).add(f[1])
    return {n: {defs[s] for s in undef.get(n, ()) if s in defs and defs[s] != n}
            for n in (os.path.basename(o)[:-2] for o in objs)}


def cycles(g):
    """The strongly connected sets of more than one node of graph g (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v roots a component: what the stack holds down to it
            comp = set()
            while v not in comp:
                comp.add(stack.pop())
            on.difference_update(comp)
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_folder(folder):
    objs = [o for o in sorted(glob.glob(os.path.join(OBJ, folder, "*.o")))  # of sources that are there: no stale one
            if os.path.exists(os.path.join(ROOT, folder, os.path.basename(o)[:-2] + ".c"))]
    found = cycles(uses(objs))
    known = KNOWN.get(folder)
    new = [c for c in found if c != known]
    assert not new, f"{folder}: files that call each other: {[sorted(c) for c in new]}"
    assert not known or known in found, f"{folder}: {sorted(known)} no longer a cycle: remove it from KNOWN"


folders = sorted({os.path.relpath(os.path.dirname(o), OBJ) for o in glob.glob(os.path.join(OBJ, "**", "*.o"), recursive=True)})
assert "analyze" in folders and "plots" in folders, f"no objects under {OBJ}: run make first"
for d in folders:
    if d != ".":
        check(f"calls inside {d}/ go one way (no cycle between its files)", lambda d=d: test_folder(d))
finish()
