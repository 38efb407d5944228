"""Data at rest is checked, and a damaged trace is one line (issue 26, section 3).

- aha verify passes on recorded traces (observe with every optional dataset,
  a sweep grid) and says what it checked.
- A flipped bit in a chunk of any dataset: h5py (HDF5 itself) and aha verify
  find it, naming the dataset and the chunk's tokens; report and merge stop
  with one line.
- Flips all over the file (superblock, object headers, chunk indexes,
  attributes, the string dataset) and a truncated file: one line and exit 1,
  or nothing changed -- never a signal.
- Values that cannot be, behind valid checksums (rewritten with h5py): a
  position, d_eps beyond position + 1 or a native window, a token id, a gate,
  doc_offsets, doc_index, a string: report, plot, merge, notebook and verify
  say one line naming the dataset, within 1 GiB of address space (one bad
  position once made report allocate 5.4 GB).
- A string attribute of several values (a damaged dataspace): one line naming
  it (it overran a buffer and aborted).
- A format-1 trace (variable-length strings, no checksums, no coordinates)
  still reports the same numbers; verify says it carries no checksums; merge
  rewrites it as format 2 with coordinates, which verifies.
- The global heap, which holds only the axes' attachments (no checksum):
  flips there change nothing verify or report says.
Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import json
import os
import random
import resource
import shutil
import subprocess
import tempfile

import h5py
import numpy as np

from ahatest import AHA, ROOT, aha, attr_str, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_verify_")
TINY = os.path.join(ROOT, "tests", "fixtures", "tiny")
rng = np.random.default_rng(26)
DATA = tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, n).tolist() for n in (40, 17, 33)])
OBS = os.path.join(TMP, "observe.h5")
GRID = os.path.join(TMP, "grid.h5")
aha("record", os.path.join(TINY, "llama_aha"), DATA, "-o", OBS, "--windows", "2,4,8", "--eps", "0.01,0.1", "--werr",
    "--mass", "--sinks", "1", "--ctx", 32, "--quiet")
aha("sweep", os.path.join(TINY, "llama_aha"), DATA, "-o", GRID, "--windows", "4,8", "--ctx", 32, "--quiet",
    "--policies", "oracle:0.1 random:0.5 learned:0.4 local")


def limited():
    """The address space a child may use: 1 GiB (a tiny trace needs far less)."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def run(*args):
    return subprocess.run([AHA, *map(str, args)], capture_output=True, cwd=ROOT, preexec_fn=limited)


def one_line(r, pattern=None):
    """r failed with exit 1 and one stderr line (containing pattern): never a signal."""
    err = r.stderr.decode(errors="replace").strip()
    assert r.returncode == 1, f"exit {r.returncode}: {err[-400:]}"
    assert "\n" not in err, f"more than one line: {err[-600:]}"
    assert pattern is None or pattern in err, f"want {pattern!r}: {err}"
    return err


def copy(src, name):
    return shutil.copy(src, os.path.join(TMP, name))


def flip(path, at, bit=0):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ (1 << bit)]))


COORDS = {"token", "doc", "layer", "head", "eps", "window"}  # a complete trace's dimension scales


def chunks(path):
    """{dataset: [(byte offset, size) of each stored chunk]} of a complete trace."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, o):
            if isinstance(o, h5py.Dataset):
                out[name] = [(o.id.get_chunk_info(i).byte_offset, o.id.get_chunk_info(i).size)
                             for i in range(o.id.get_num_chunks())]
        f.visititems(visit)
    return out


def test_verify_ok():
    for path in (OBS, GRID):
        r = aha("verify", path)
        with h5py.File(path, "r") as f:
            T, n = len(f["tokens"]), len(f["doc_offsets"]) - 1
        want = f"{path}: ok (format 2, complete, {n} documents, {T} tokens, "
        assert r.stdout.startswith(want) and "chunks checked)" in r.stdout, r.stdout
        assert r.stdout.count("\n") == 1, r.stdout
    unsorted = os.path.join(TMP, "unsorted.h5")  # the window coordinate holds --windows as given
    aha("record", os.path.join(TINY, "llama_aha"), DATA, "-o", unsorted, "--windows", "8,2,4", "--ctx", 32, "--quiet")
    assert aha("verify", unsorted).stdout.startswith(unsorted + ": ok"), "windows not ascending"
    both = aha("verify", OBS, GRID).stdout.splitlines()
    assert len(both) == 2 and both[1].startswith(GRID + ": ok"), both


def test_data_flips():
    """One flipped bit in the middle of a chunk of each dataset: found by HDF5 and by aha, named."""
    tested = 0
    for name, where in chunks(OBS).items():
        off, size = where[0]
        bad = copy(OBS, "flip_" + name.replace("/", "_") + ".h5")
        flip(bad, off + size // 2, 3)
        try:
            with h5py.File(bad, "r") as f:
                f[name][...]
            raise AssertionError(f"{name}: h5py read the flipped chunk")
        except OSError as e:  # HDF5 2.0 says "filter returned failure during read"
            assert "filter" in str(e) or "checksum" in str(e), f"{name}: {e}"
        one_line(run("verify", bad), f"{bad}: {name}")
        merged = os.path.join(TMP, "m.h5")
        r = run("merge", bad, "-o", merged, "--force")
        if name in COORDS:  # merge reads no coordinate: it writes its own, whole
            assert r.returncode == 0 and "ok (format 2" in aha("verify", merged).stdout, r.stderr
            os.remove(merged)
        else:
            one_line(r, name)
        assert not os.path.exists(merged), "merge left a file"
        tested += 1
    assert tested >= 21, f"only {tested} datasets"  # tokens ... mass_sinks, runs/full/{nll,kl}, the coordinates
    bad = copy(OBS, "coord.h5")  # a coordinate's value changed behind a valid checksum
    with h5py.File(bad, "r+") as f:
        f["token"][5] = 7
    one_line(run("verify", bad), f"{bad}: token (a coordinate) holds 7 at 5, not 5")
    for name in ("dependency/eps_0.01", "position", "token_text", "tokens", "gate"):  # what report reads
        bad = os.path.join(TMP, "flip_" + name.replace("/", "_") + ".h5")
        err = one_line(run("report", bad), name)
        assert "checksum" in err, err


def test_anywhere():
    """Flips all over the file (seeded): each is found (one line, exit 1) or changes nothing the
    readers use; none is a signal. A truncated file is one line."""
    size = os.path.getsize(OBS)
    want = json.loads(aha("report", OBS, "--out-format", "json").stdout)
    picks = random.Random(26).sample(range(size), 120)
    found = 0
    for at in picks:
        bad = copy(OBS, "any.h5")
        flip(bad, at, at % 8)
        for cmd in (("verify", bad), ("report", bad, "--out-format", "json")):
            r = run(*cmd)
            if r.returncode == 0 and cmd[0] == "report":
                got = json.loads(r.stdout)
                got["traces"][0]["files"] = want["traces"][0]["files"]
                assert got == want, f"flip at {at}: report exit 0 with other numbers"
            elif r.returncode != 0:
                one_line(r, "any.h5")
                found += cmd[0] == "verify"
    cut = copy(OBS, "cut.h5")
    with open(cut, "r+b") as f:
        f.truncate(size * 2 // 3)
    for cmd in ("verify", "report"):
        one_line(run(cmd, cut), "cut.h5")


def test_heap():
    """HDF5's global heap (no checksum) holds only the axes' attachments (DIMENSION_LIST's references),
    which no aha command reads: bits flipped all over it change nothing verify or report says, never a
    signal or a hang; xarray reads them (tests/test_xarray.py)."""
    with open(OBS, "rb") as f:
        data = f.read()
    at, n = data.find(b"GCOL"), data.count(b"GCOL")
    assert at > 0 and n == 1, f"{n} global heap collections"
    size = int.from_bytes(data[at + 8:at + 16], "little")
    with h5py.File(OBS, "r") as f:
        refs = sum(o.ndim for o in f.values() if isinstance(o, h5py.Dataset) and "DIMENSION_LIST" in o.attrs)
    assert refs > 0, "no attachments"
    want = json.loads(aha("report", OBS, "--out-format", "json").stdout)
    used = 16 + 24 * refs  # its header, then per attachment an object: 16 bytes of header, an 8-byte reference
    # byte 25: the first object's size, whose flip hangs HDF5 1.10 when it reads the heap
    for off in [25] + random.Random(38).sample(range(min(size, used)), 23):
        bad = copy(OBS, "heap.h5")
        flip(bad, at + off, off % 8)
        r = subprocess.run([AHA, "verify", bad], capture_output=True, timeout=120, preexec_fn=limited)
        assert r.returncode == 0 and b": ok (format 2" in r.stdout, f"heap byte {off}: verify {r.returncode} {r.stderr}"
        r = subprocess.run([AHA, "report", bad, "--out-format", "json"], capture_output=True, timeout=120,
                           preexec_fn=limited)
        got = json.loads(r.stdout)
        got["traces"][0]["files"] = want["traces"][0]["files"]
        assert r.returncode == 0 and got == want, f"heap byte {off}: report changed"


def test_metadata_damage():
    """Metadata that fails its checksum is said to be damage, as a chunk's is, never "not an aha trace"
    (item 8 of issue 35): bits of the root's attribute "format" and of the bytes around it (its object
    header), flipped one at a time; a foreign HDF5 file is still foreign."""
    with open(OBS, "rb") as f:
        at = f.read().find(b"aha-trace")
    assert at > 0
    damaged = 0
    for off in range(at - 64, at + 64, 3):
        bad = copy(OBS, "meta.h5")
        flip(bad, off, off % 8)
        for cmd in (("verify", bad), ("report", bad), ("merge", bad, "-o", os.path.join(TMP, "mm.h5"))):
            r = run(*cmd)
            if r.returncode == 0:
                continue
            err = one_line(r, "meta.h5")
            assert "not an aha trace" not in err, f"flip at {off}, aha {cmd[0]}: {err}"
            damaged += "the file is damaged: its metadata fails its checksum" in err
    assert damaged >= 60, f"only {damaged} flips said to be damaged metadata"
    foreign = os.path.join(TMP, "foreign.h5")
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
        f.attrs["format"] = "something else"
    one_line(run("verify", foreign), 'not an aha trace (root attribute format is not "aha-trace")')


def rewrite(path, name, change):
    """Dataset name of trace path replaced by change(its values), stored as aha stores it (checksums valid)."""
    with h5py.File(path, "r+", libver=("v110", "v110")) as f:  # object headers checksummed, as aha writes them
        d = f[name]
        attrs, chunk, dtype, v = dict(d.attrs), d.chunks, d.dtype, d[...]
        del f[name]
        n = f.create_dataset(name, data=np.asarray(change(v), dtype), chunks=chunk, shuffle=True, compression="gzip",
                             fletcher32=True, maxshape=tuple(None if k == (len(chunk) > 1) else s
                                                             for k, s in enumerate(v.shape)))
        n.attrs.update(attrs)
    return path


def test_invariants():
    every = ("verify", "report", "merge", "plot", "notebook")
    cases = [  # dataset, its values changed, the message, the commands that read it
        ("position", lambda v: np.where(np.arange(len(v)) == 5, (1 << 30) + 5, v), "position at token 5", every),
        ("dependency/eps_0.01", lambda v: np.where(v == v.max(), v + 3, v), "outside 1..position+1", every),
        ("dependency/eps_0.1", lambda v: np.where(v > 0, 0, v), "d_eps 0 outside 1..position+1", every),
        ("tokens", lambda v: np.where(np.arange(len(v)) == 7, 128, v), "token id 128 at token 7 is not below vocab 128",
         every[:4]),
        ("gate", lambda v: np.where(v == 1, 2, v), "gate: 2 at layer", every),
        ("runs/full/nll", lambda v: v, None, ()),  # a rewrite alone changes nothing
        ("doc_offsets", lambda v: np.where(np.arange(len(v)) == 2, v[1], v), "doc_offsets[2] = 32 is not above", every),
        ("doc_offsets", lambda v: np.where(np.arange(len(v)) == 1, v[1] + 1, v), "longer than ctx 32", every),
        ("doc_offsets", lambda v: v + 1, "doc_offsets[0] is 1, not 0", every),
        ("doc_index", lambda v: v[::-1].copy(), "not ascending", ("verify", "merge")),
        ("token_text", lambda v: np.array([b"a\0b"] * len(v), v.dtype), "not a NUL-padded string", every),
    ]
    out = {"merge": ("-o", os.path.join(TMP, "m.h5"), "--force"), "plot": ("-o", os.path.join(TMP, "plots")),
           "notebook": ("-o", os.path.join(TMP, "nb.ipynb"), "--force")}
    for k, (name, change, pattern, cmds) in enumerate(cases):
        bad = rewrite(copy(OBS, f"inv{k}.h5"), name, change)
        if pattern is None:
            aha("verify", bad)
        for cmd in cmds:
            assert one_line(run(cmd, bad, *out.get(cmd, ())), pattern).startswith(f"aha: {bad}: "), (cmd, name)
    # a natively local layer's d_eps is at most its window
    native = make_native(copy(OBS, "native.h5"), [0, 4])
    aha("verify", native)
    rewrite(native, "dependency/eps_0.01", lambda v: np.where((np.arange(2)[:, None, None] == 1) & (v == 4), 5, v))
    one_line(run("report", native), "beyond the layer's native window 4")


def test_string_attr():
    bad = copy(OBS, "attr.h5")
    with h5py.File(bad, "r+") as f:
        f.attrs["architecture"] = np.array([b"x" * 40] * 400)  # 400 values where one is read
    for cmd in ("report", "verify", "info"):
        one_line(run(cmd, bad), "attribute architecture is not a string")


H5DS_ATTRS = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME"}  # HDF5's dimension scales


def format1(src, dst):
    """src as a format-1 trace: strings variable-length (h5py's default), no filters, no text_width."""
    with h5py.File(src, "r") as s, h5py.File(dst, "w", track_order=True) as d:
        def copy_obj(name, o):
            if name in COORDS:  # a format-1 trace has none
                return
            if isinstance(o, h5py.Group):
                g = d.require_group(name)
                for k, v in o.attrs.items():
                    g.attrs[k] = attr_str(v)
            elif h5py.check_string_dtype(o.dtype):
                n = d.create_dataset(name, data=o.asstr()[...], dtype=h5py.string_dtype())
                n.attrs.update({k: attr_str(v) for k, v in o.attrs.items() if k not in H5DS_ATTRS})
            else:
                n = d.create_dataset(name, data=o[...], chunks=o.chunks, maxshape=o.maxshape)
                n.attrs.update({k: attr_str(v) for k, v in o.attrs.items() if k not in H5DS_ATTRS})
        s.visititems(copy_obj)
        for k, v in s.attrs.items():
            if k != "text_width":
                d.attrs[k] = attr_str(v)
        d.attrs["format_version"] = 1
    return dst


def test_format1():
    old = format1(OBS, os.path.join(TMP, "v1.h5"))
    want, got = (json.loads(aha("report", p, "--out-format", "json").stdout)["traces"][0] for p in (OBS, old))
    for k in ("routers", "long_tail", "runs", "tokens", "mass"):
        assert want[k] == got[k], k
    r = aha("verify", old).stdout
    assert "ok (format 1" in r and "carries no checksums" in r, r
    new = os.path.join(TMP, "v1_merged.h5")
    aha("merge", old, "-o", new, "--force")
    r = aha("verify", new).stdout
    assert "ok (format 2" in r and "chunks checked" in r and "no checksums" not in r, r
    with h5py.File(new, "r") as f, h5py.File(OBS, "r") as o:
        assert f["token_text"].dtype == o["token_text"].dtype, (f["token_text"].dtype, o["token_text"].dtype)
        assert (f["token_text"][...] == o["token_text"][...]).all()
        assert f.attrs["text_width"] == o.attrs["text_width"]
        assert "token" not in h5py.File(old, "r") and f["token"].is_scale, "merge writes the coordinates"
        assert [s.name for s in f["dependency/eps_0.01"].dims[1].values()] == ["/token"], "merge attaches them"


check("verify: ok on a recorded trace and a sweep grid; one line each", test_verify_ok)
check("checksums: a flipped bit in a chunk of each dataset is found by h5py and aha verify, named; report and merge "
      "stop with one line", test_data_flips)
check("damage anywhere (metadata, strings, truncation): one line or nothing changed, never a signal", test_anywhere)
check("values that cannot be behind valid checksums: one line naming the dataset from verify, report, merge, plot, "
      "notebook; within 1 GiB", test_invariants)
check("the global heap (the axes' attachments, no checksum): a flipped bit there changes nothing verify or report "
      "says", test_heap)
check("metadata failing its checksum: said to be damage (verify, report, merge), a foreign file still foreign",
      test_metadata_damage)
check("a string attribute of 400 values: one line naming it", test_string_attr)
check("format 1 (global-heap strings, no checksums): same report; verify says so; merge rewrites it as format 2",
      test_format1)
shutil.rmtree(TMP, ignore_errors=True)
finish()
