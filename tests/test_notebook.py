"""aha notebook: a valid nbformat v4 notebook with the run's summary, stored
figures (PNG) and tables, whose Python cells execute without error under
`jupyter nbconvert --execute` against a small trace and print the same table
that was stored. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import base64
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import nbformat
import numpy as np

from ahatest import AHA, ROOT, aha, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_notebook_")


rng = np.random.default_rng(2)
TRACE = os.path.join(TMP, "sweep.h5")
aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"),
    tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, size=n).tolist() for n in (44, 30)]),
    "-o", TRACE, "--windows", "2,4,8", "--route", "oracle", "--force", "--quiet", "--mass")
os.makedirs(os.path.join(TMP, "nb"))
NB = os.path.join(TMP, "nb", "analysis.ipynb")  # in a folder of its own: the trace is "../sweep.h5" from there
aha("notebook", TRACE, "-o", NB)
REP = json.loads(aha("report", TRACE, "--out-format", "json").stdout)["traces"][0]


def outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == kind]


def test_valid():
    nb = nbformat.read(NB, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.metadata.kernelspec.name == "python3"
    first = nb.cells[0]
    assert first.cell_type == "markdown" and REP["model"] in first.source
    w0 = REP["routers"][0]["windows"][0]["all"]["fraction"]
    assert "%.4f" % w0 in first.source, "the summary carries the key numbers"
    # both fractions, each named, with the settings: the paper's (all decisions) and t >= w
    assert "over **all decisions**" in first.source and "**decisions with t >= w**" in first.source, first.source
    assert "sinks 0, ctx 128" in first.source
    t0 = REP["routers"][0]["windows"][0]["t_ge_w"]["fraction"]
    assert "%.4f" % t0 in first.source.split("t >= w**")[1], "the summary has the t >= w table"


def test_stored_figures():
    nb = nbformat.read(NB, as_version=4)
    pngs = [o.data["image/png"] for o in outputs(nb, "display_data")]
    assert len(pngs) == 8, len(pngs)  # the sweep has routed runs and --mass: all eight figures (frontier, mass too)
    for p in pngs:
        assert base64.b64decode(p)[:8] == b"\x89PNG\r\n\x1a\n"
    src = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "h5py.File(TRACE" in src and "plt.show()" in src
    # the trace as the notebook's folder sees it, not where it was when the notebook was written
    assert 'TRACE = "../sweep.h5"\n' in src and TMP not in src and os.path.realpath(TMP) not in src


def test_cells_are_the_files():
    # every code cell is one of notebooks-export/cells/*.py with its placeholders (AHA_<NAME>) filled
    cells = {}
    for path in glob.glob(os.path.join(ROOT, "notebooks-export", "cells", "*.py")):
        parts = re.split(r"\bAHA_[A-Z_]+\b", open(path).read())
        cells[os.path.basename(path)] = re.compile("(.+?)".join(map(re.escape, parts)), re.S)
    nb = nbformat.read(NB, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    made = [next((name for name, rx in cells.items() if rx.fullmatch(src)), None) for src in code]
    assert None not in made, f"code cells not made from a cells/*.py file: {[c[:60] for c, m in zip(code, made) if not m]}"
    assert made[:2] == ["setup.py", "table.py"] and len(set(made)) == len(made) == 10, made  # 8 figures
    assert 'DS = {"tokens": "tokens",' in code[0] and "w = 4\n" in "".join(code), "placeholders filled"


def test_executes():
    # the folder moved elsewhere (trace and notebook together), run from another working directory
    moved = os.path.join(TMP, "moved")
    shutil.copytree(TMP, moved, ignore=shutil.ignore_patterns("moved"))
    out = os.path.join(TMP, "executed.ipynb")
    os.rename(TRACE, TRACE + ".away")  # only the moved copy is there to be found
    try:
        r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                            os.path.join(moved, "nb", "analysis.ipynb"), "--output", out,
                            "--ExecutePreprocessor.timeout=120"], capture_output=True, text=True, cwd=ROOT)
    finally:
        os.rename(TRACE + ".away", TRACE)
    assert r.returncode == 0, r.stderr[-2000:]
    nb = nbformat.read(out, as_version=4)
    errors = outputs(nb, "error")
    assert not errors, [(e.ename, e.evalue) for e in errors]
    images = [o for o in outputs(nb, "display_data") if "image/png" in o.data]
    assert len(images) == 8, f"{len(images)} matplotlib figures"  # mass included (--mass)
    stored = [o.text for o in outputs(nbformat.read(NB, as_version=4), "stream")]
    ran = [o.text for o in outputs(nb, "stream")]
    assert stored[0] in ran, f"stored table {stored[0]!r} not printed by the executed notebook: {ran!r}"


def test_no_overwrite():
    # like a trace: an existing (perhaps edited) notebook is kept without --force
    with open(NB) as f:
        before = f.read()
    edited = before.replace("# Attention context dependency", "# My edited notes", 1)
    with open(NB, "w") as f:
        f.write(edited)
    r = aha("notebook", TRACE, "-o", NB, ok=False)
    assert r.returncode != 0 and f"{NB}: exists (use --force to overwrite)" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert open(NB).read() == edited, "an existing notebook was modified"
    aha("notebook", TRACE, "-o", NB, "--force")
    assert open(NB).read() == before


def test_errors():
    r = aha("notebook", os.path.join(TMP, "missing.h5"), "-o", os.path.join(TMP, "new.ipynb"), ok=False)
    assert r.returncode != 0 and "missing.h5" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = aha("notebook", TRACE, "-o", os.path.join(TMP, "new.ipynb"), "--window", "5", ok=False)
    assert r.returncode != 0 and "window 5 was not recorded" in r.stderr, r.stderr


def test_native_local():
    # layer 1 natively local (make_native: layer_window and its d_eps / gates set with h5py): the summary says
    # so, and the executed Python counts the global layers as the stored table (aha report's numbers) does
    d = os.path.join(TMP, "native")
    os.makedirs(os.path.join(d, "nb"))
    trace = make_native(shutil.copy(TRACE, os.path.join(d, "sweep.h5")), [0, 4])
    nb_path = os.path.join(d, "nb", "analysis.ipynb")
    aha("notebook", trace, "-o", nb_path)
    rep = json.loads(aha("report", trace, "--out-format", "json").stdout)["traces"][0]
    nb = nbformat.read(nb_path, as_version=4)
    label = "global layers only: 1 of 2; 1 natively local (window 4) shown apart"
    assert "**Natively local layers** (`layer_window`): 1 (window 4)." in nb.cells[0].source and label in nb.cells[0].source
    stored = [o.text for o in outputs(nb, "stream")]
    assert label in stored[0] and "%.4f" % rep["routers"][0]["windows"][0]["all"]["fraction"] in stored[0], stored[0]
    assert stored[0] != [o.text for o in outputs(nbformat.read(NB, as_version=4), "stream")][0], "the trick changes the table"
    out = os.path.join(d, "executed.ipynb")
    r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", nb_path, "--output", out,
                        "--ExecutePreprocessor.timeout=120"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    ran = nbformat.read(out, as_version=4)
    assert not outputs(ran, "error"), [(e.ename, e.evalue) for e in outputs(ran, "error")]
    assert stored[0] in [o.text for o in outputs(ran, "stream")], "the executed notebook prints the stored table"


def test_commands_exist():
    # the text names the command that recorded the trace, and only commands that exist (observe and routed
    # traces are aha record's, sweeps aha sweep's; there is no aha observe)
    commands = {l.split()[0] for l in aha("--help").stdout.splitlines()[3:] if l.strip()}
    obs = os.path.join(TMP, "observe.h5")
    aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"), os.path.join(TMP, "d.tok"), "-o", obs,
        "--windows", "2,4", "--quiet")
    nb = os.path.join(TMP, "nb", "observe.ipynb")
    aha("notebook", obs, "-o", nb)
    for path, want in ((NB, "`aha sweep`, mode sweep, router oracle"), (nb, "`aha record`, mode observe, router learned")):
        first = nbformat.read(path, as_version=4).cells[0].source
        assert want in first, first
        named = set(re.findall(r"\baha ([a-z]+)", open(path).read()))
        assert named <= commands, f"{path} names commands that do not exist: {named - commands}"


check("valid nbformat v4 with a summary of the run", test_valid)
check("the summary names the command that recorded the trace; only commands that exist", test_commands_exist)
check("stored outputs: eight PNG figures (mass too), code that loads the trace", test_stored_figures)
check("the code cells are notebooks-export/cells/*.py, placeholders filled", test_cells_are_the_files)
check("executes with nbconvert without errors; prints the stored table", test_executes)
check("natively local layers: the summary names them; the executed cells count the global layers, as the stored table", test_native_local)
check("an existing notebook is never overwritten without --force", test_no_overwrite)
check("bad input: one-line errors", test_errors)
finish()
