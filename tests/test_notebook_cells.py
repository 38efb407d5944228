"""The notebook's Python cells (notebooks-export/cells/*.py, which ./aha
embeds at build time) compile as Python, and every placeholder they hold
(AHA_<NAME>, a Python name there) is one that notebooks-export/notebook.c
fills. tests/test_notebook.py checks the cells of a written notebook against
them. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import glob
import os
import py_compile
import re
import tempfile

from ahatest import ROOT, check, finish

CELLS = sorted(glob.glob(os.path.join(ROOT, "notebooks-export", "cells", "*.py")))
TMP = tempfile.mkdtemp(prefix="aha_cells_")


def test_compiles(path):
    py_compile.compile(path, cfile=os.path.join(TMP, os.path.basename(path) + "c"), doraise=True)


def test_placeholders():
    src = open(os.path.join(ROOT, "notebooks-export", "notebook.c")).read()
    filled = set(re.findall(r'"(AHA_[A-Z_]+)"', src))
    for path in CELLS:
        used = set(re.findall(r"\bAHA_[A-Z_]+\b", open(path).read()))
        assert used <= filled, f"{path}: {sorted(used - filled)} not filled by notebook.c (it fills {sorted(filled)})"


def test_present():
    assert len(CELLS) >= 10, f"{len(CELLS)} cells in notebooks-export/cells"  # setup, table and a cell per figure


check("the notebook's cells are files: notebooks-export/cells/*.py", test_present)
for p in CELLS:
    check(f"notebook cell {os.path.basename(p)} compiles as Python", lambda p=p: test_compiles(p))
check("every placeholder of the cells is one notebook.c fills", test_placeholders)
finish()
