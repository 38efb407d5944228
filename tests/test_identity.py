"""Is this the same run? Inputs identified by content (the model's files, each
dataset document, the router file: SHA-256 fingerprints checked against
hashlib), on resume, merge and combined reports; completeness carried through
resume and merge (an unfinished input refused, an empty shard a complete one);
per-document rows in the dataset's order with their source; a router file run
only as it was fitted. Prints PASS/FAIL lines (tests/run.sh counts them)."""
import hashlib
import json
import os
import shutil
import tempfile

import h5py
import numpy as np

from ahatest import ROOT, aha, attr_str, assert_same_trace, check, finish, tok_model, tokfile

TMP = tempfile.mkdtemp(prefix="aha_identity_")
TINY = os.path.join(ROOT, "tests/fixtures/tiny")
MODEL = os.path.join(TINY, "llama_gqa")  # vocab 128, no tokenizer: token files
RNG = np.random.default_rng(26)
DOCS = [RNG.integers(0, 128, size=n).tolist() for n in (40, 30, 50)]
COMMON = ["--ctx", 32, "--windows", "4,8", "--route", "random:0.3", "--window", 4, "--quiet"]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def sha_file(path):
    return sha(open(path, "rb").read())


def tmp(name):
    return os.path.join(TMP, name)


def stopped(out, data, *args, model=MODEL):
    """A run stopped by a bad token id (the document after DOCS[1]): an unfinished trace."""
    r = aha("record", model, data, "-o", out, "--force", *COMMON, *args, ok=False)
    assert r.returncode == 1 and "out of range" in r.stderr, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] == 0 and f.attrs["n_docs"] > 0
    return out


def one_line(r, want):
    assert r.returncode == 1 and want in r.stderr and r.stderr.count("\n") == 1, (want, r.stderr)


def sha256sum(folder, names):
    """What sha256sum prints for these files of folder, sorted by name."""
    return "".join(f"{sha_file(os.path.join(folder, n))}  {n}\n" for n in sorted(names))


def test_fingerprints():
    # every input's digest as hashlib computes it: the model's files (sha256sum's lines, names relative
    # to the model's path), each document as the reader gives it (text bytes; token ids as <i4), the
    # dataset over the documents' digests, the router file; each document's source relative to the dataset
    model = tmp("tok_model")  # every file the loader reads: config.json, weights, tokenizer.json, tokenizer_config.json
    tok_model(model, {"add_bos_token": False})
    data = tmp("folder")
    os.makedirs(os.path.join(data, "sub"))
    open(os.path.join(data, "a.txt"), "w").write("hello world, hello trace")
    lines = [{"text": "one line of text"}, None, {"text": "and the \u00e9 second"}]  # a blank line between
    open(os.path.join(data, "sub", "b.jsonl"), "w").write("".join(json.dumps(x) + "\n" if x else "\n" for x in lines))
    toks = [[5, 6, 7, 8], [9, 10, 11]]
    tokfile(os.path.join(data, "c.tok"), toks)
    out = tmp("fp.h5")
    aha("record", model, data, "-o", out, "--windows", 4, "--quiet")
    docs = [("a.txt", b"hello world, hello trace"), ("c.tok#1", np.asarray(toks[0], "<i4").tobytes()),
            ("c.tok#2", np.asarray(toks[1], "<i4").tobytes()), ("sub/b.jsonl:1", "one line of text".encode()),
            ("sub/b.jsonl:3", "and the \u00e9 second".encode())]
    with h5py.File(out, "r") as f:
        a = {k: attr_str(v) for k, v in f.attrs.items()}
        assert a["model_sha256"] == sha256sum(model, ["config.json", "model.safetensors", "tokenizer.json",
                                                      "tokenizer_config.json"]), a["model_sha256"]
        assert list(f["doc_index"][...]) == list(range(5))
        assert list(f["doc_source"].asstr()[...]) == [s for s, _ in docs]
        assert list(f["doc_sha256"].asstr()[...]) == [sha(b) for _, b in docs]
        assert a["dataset_sha256"] == sha("".join(sha(b) for _, b in docs).encode())
        assert a["router_sha256"] == "" and a["router_file"] == ""
    # a sharded model: its index and each shard; a GGUF: its file, by name; a router file; a dataset of one file
    data = tokfile(tmp("d.tok"), DOCS)
    router = tmp("fp_router.st")
    aha("fit", MODEL, data, "-o", router, "--window", 4, "--ctx", 32, "--quiet")
    for name, files in (("llama_sharded_bf16", ["config.json", "model-00001-of-00002.safetensors",
                                                 "model-00002-of-00002.safetensors", "model.safetensors.index.json"]),
                        ("llama_gguf", ["model.gguf"])):
        aha("record", os.path.join(TINY, name, "model.gguf" if "gguf" in name else ""), data, "-o", out, "--force",
            "--windows", 4, "--ctx", 32, "--quiet")
        with h5py.File(out, "r") as f:
            assert attr_str(f.attrs["model_sha256"]) == sha256sum(os.path.join(TINY, name), files), attr_str(f.attrs["model_sha256"])
            assert f["doc_source"].asstr()[0] == "d.tok#1"
    aha("record", MODEL, data, "-o", out, "--force", "--windows", 4, "--ctx", 32, "--router", router, "--quiet")
    with h5py.File(out, "r") as f:
        assert attr_str(f.attrs["router_sha256"]) == sha_file(router)


def test_resume_by_content():
    # a resume compares the inputs by content: a changed dataset names its first changed document and
    # source, a changed model file names that file, a refitted router is --router; moved ones resume
    data = tokfile(tmp("r.tok"), DOCS[:2] + [[5, 10**6, 7]] + DOCS[2:])
    out = stopped(tmp("r.h5"), data)
    changed = [list(d) for d in DOCS]
    changed[1][3] += 1
    tokfile(data, changed[:2] + [[5, 10**6, 7]] + DOCS[2:])
    r = aha("record", MODEL, data, "-o", out, "--resume", "--skip-bad", *COMMON, ok=False)
    one_line(r, f"cannot resume: the dataset (DATA) differs: {data}: document 1 (r.tok#2) is not the one the trace recorded")
    tokfile(data, DOCS[:2] + [[5, 10**6, 7]] + DOCS[2:] + [DOCS[0]])  # one document more
    r = aha("record", MODEL, data, "-o", out, "--resume", "--skip-bad", *COMMON, ok=False)
    one_line(r, "documents after them changed, or documents were added or removed (5 now)")
    # the model: another folder whose config.json differs by a byte the loader ignores
    model = tmp("model_copy")
    shutil.copytree(MODEL, model)
    with open(os.path.join(model, "config.json"), "a") as f:
        f.write("\n")
    tokfile(data, DOCS[:2] + [[5, 10**6, 7]] + DOCS[2:])
    r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", *COMMON, ok=False)
    one_line(r, "cannot resume: the model's config.json differs (trace: sha256 ")
    # moved, unchanged: the dataset and the model at other paths resume, to the uninterrupted run's data
    shutil.copy(os.path.join(MODEL, "config.json"), os.path.join(model, "config.json"))
    moved = shutil.copy(data, tmp("r_moved.tok"))
    aha("record", model, moved, "-o", out, "--resume", "--skip-bad", *COMMON)
    ref = tmp("r_ref.h5")
    aha("record", MODEL, data, "-o", ref, "--force", "--skip-bad", *COMMON)
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        assert f.attrs["complete"] == 1 and attr_str(f.attrs["model"]) == model and attr_str(f.attrs["dataset"]) == moved
        for key in ("tokens", "doc_index", "doc_sha256", "dependency/eps_0.01", "runs/w4/gate"):
            assert np.array_equal(f[key][...], g[key][...]), key
        for key in ("model_sha256", "dataset_sha256"):
            assert attr_str(f.attrs[key]) == attr_str(g.attrs[key]), key
        # each document's source is where it was read: the first run's, then the moved file's
        n = len(f["doc_index"])
        assert list(f["doc_source"].asstr()[...]) == ["r.tok#1"] * 2 + ["r.tok#2"] + ["r_moved.tok#4"] * (n - 3)
    # the router file refitted at the same path; and a resume that drops --router
    router, fit_data = tmp("r_router.st"), tokfile(tmp("r_fit.tok"), DOCS)
    aha("fit", MODEL, fit_data, "-o", router, "--window", 4, "--ctx", 32, "--quiet")
    out = stopped(tmp("r_router.h5"), data, "--router", router)
    aha("fit", MODEL, fit_data, "-o", router, "--window", 4, "--ctx", 32, "--quiet", "--target-global", 0.3, "--force")
    r = aha("record", MODEL, data, "-o", out, "--resume", "--skip-bad", *COMMON, "--router", router, ok=False)
    one_line(r, f"cannot resume: --router differs (trace: {router}, sha256 ")
    r = aha("record", MODEL, data, "-o", out, "--resume", "--skip-bad", *COMMON, ok=False)
    one_line(r, f"cannot resume: --router differs (trace: {router}; now: none)")


def test_combine_by_content():
    # shards of different datasets neither merge nor report together; shards whose model was at
    # another path (the same files) do
    data, other = tokfile(tmp("c.tok"), DOCS), tmp("c_other.tok")
    changed = [list(d) for d in DOCS]
    changed[2][0] += 1
    tokfile(other, changed)
    a, b = tmp("c0.h5"), tmp("c1.h5")
    aha("record", MODEL, data, "-o", a, "--shard", "0/2", "--force", *COMMON)
    aha("record", MODEL, other, "-o", b, "--shard", "1/2", "--force", *COMMON)
    for cmd in (("merge", a, b, "-o", tmp("c_bad.h5")), ("report", a, b), ("plot", a, b, "-o", tmp("c_plots"))):
        r = aha(*cmd, ok=False)
        one_line(r, f"{a} and {b} differ in the dataset (DATA) ({data}, sha256 ")
    assert not os.path.exists(tmp("c_bad.h5"))
    model = tmp("c_model")
    shutil.copytree(MODEL, model)
    aha("record", model, data, "-o", b, "--shard", "1/2", "--force", *COMMON)
    whole = tmp("c_whole.h5")
    aha("record", MODEL, data, "-o", whole, "--force", *COMMON)
    merged = tmp("c_merged.h5")
    aha("merge", b, a, "-o", merged)
    with h5py.File(merged, "r") as f, h5py.File(whole, "r") as g:
        for key in ("tokens", "doc_index", "doc_source", "doc_sha256", "runs/w4/gate", "runs/w4/nll"):
            assert np.array_equal(f[key][...], g[key][...], equal_nan=f[key].dtype.kind == "f"), key


def test_merge_unfinished():
    # a merge never writes an unfinished input out as complete: refused, naming it, how far it got, and
    # what finishes it (alone, and an unfinished shard beside a complete one)
    data = tokfile(tmp("u.tok"), DOCS[:2] + [[5, 10**6, 7]] + DOCS[2:])
    whole = stopped(tmp("u.h5"), data)
    s0 = stopped(tmp("u0.h5"), data, "--shard", "0/2")
    s1 = tmp("u1.h5")
    aha("record", MODEL, data, "-o", s1, "--shard", "1/2", "--force", "--skip-bad", *COMMON)
    for ins, bad, n in (([whole], whole, 3), ([s1, s0], s0, 2)):
        out = tmp("u_merged.h5")
        r = aha("merge", *ins, "-o", out, ok=False)
        one_line(r, f"{bad}: unfinished ({n} contexts, ")
        assert "aha record --resume" in r.stderr and not os.path.exists(out), r.stderr
    rep = json.loads(aha("report", s0, s1, "--out-format", "json").stdout)["traces"][0]
    assert rep["complete"] is False, "a combined report says a shard is unfinished"


def test_complete_resume():
    # --resume on a complete trace or shard compares every setting and input as on an unfinished one
    # (a differing one is an error naming the flag), then says there is nothing left to record
    data = tokfile(tmp("k.tok"), DOCS)
    for shard in ([], ["--shard", "1/2"]):
        out = tmp(f"k{len(shard)}.h5")
        aha("record", MODEL, data, "-o", out, "--force", *COMMON, *shard)
        before = open(out, "rb").read()
        r = aha("record", MODEL, data, "-o", out, "--resume", *COMMON, *shard, "--eps", "0.3", ok=False)
        one_line(r, f"{out}: cannot resume: --eps differs (trace: 0.01,0.05,0.1; now: 0.3)")
        other = tokfile(tmp("k_other.tok"), DOCS[:2])
        r = aha("record", MODEL, other, "-o", out, "--resume", *COMMON, *shard, ok=False)
        one_line(r, "cannot resume: the dataset (DATA) differs")
        r = aha("record", MODEL, data, "-o", out, "--resume", *[x for x in COMMON if x != "--quiet"], *shard)
        assert r.stderr == f"{out}: complete, nothing left to record\n", r.stderr
        assert open(out, "rb").read() == before, "a complete trace was modified"
    # its runs too: a sweep grid of other runs
    out = tmp("k_sweep.h5")
    grid = ["--ctx", 32, "--windows", 4, "--quiet"]
    aha("sweep", MODEL, data, "-o", out, "--force", *grid, "--policies", "oracle:0.1 local")
    r = aha("sweep", MODEL, data, "-o", out, "--resume", *grid, "--policies", "oracle:0.1", ok=False)
    # the grid is the router attribute (named for both flags), compared before the runs
    one_line(r, "cannot resume: --route / --policies differs (trace: grid oracle:0.1 local; now: grid oracle:0.1)")


def summary_lines(stdout):
    return [x for x in stdout.splitlines() if x.startswith(("fraction", "routed"))]


def test_resume_summary():
    # after --resume the summary describes the whole trace, as the uninterrupted run's does
    model = os.path.join(TINY, "llama_aha")  # a learned router: its line too
    data = tokfile(tmp("s.tok"), DOCS[:2] + [[5, 10**6, 7]] + DOCS[2:])
    out = stopped(tmp("s.h5"), data, model=model)
    r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", *COMMON)
    ref = aha("record", model, data, "-o", tmp("s_ref.h5"), "--force", "--skip-bad", *COMMON)
    assert "resumed: with the 3 contexts (70 tokens) recorded before, the lines below describe the whole trace, " \
           "5 contexts" in r.stdout, r.stdout
    got, want = summary_lines(r.stdout), summary_lines(ref.stdout)
    assert len(want) == 4 and got == want, (got, want)


def test_empty_shard():
    # a shard that has no documents is a complete trace of none: report, plot and merge take it among
    # the others (merged: the whole trace); alone a report says there are no decisions, a plot refuses in
    # one line; left out, it is missing; --max-tokens that leaves a shard nothing: the same
    data = tokfile(tmp("e.tok"), DOCS)
    whole = tmp("e_whole.h5")
    aha("record", MODEL, data, "-o", whole, "--force", *COMMON)
    parts = [tmp(f"e{i}.h5") for i in range(4)]
    for i, p in enumerate(parts):
        aha("record", MODEL, data, "-o", p, "--shard", f"{i}/4", "--force", *COMMON)
    with h5py.File(parts[3], "r") as f:
        assert (f.attrs["complete"], f.attrs["n_docs"], attr_str(f.attrs["shard"])) == (1, 0, "3/4")
    merged = tmp("e_merged.h5")
    aha("merge", *reversed(parts), "-o", merged)
    assert_same_trace(whole, merged)
    a = json.loads(aha("report", whole, "--out-format", "json").stdout)["traces"][0]
    r = aha("report", *parts, "--out-format", "json")
    b = json.loads(r.stdout)["traces"][0]
    assert r.stderr == "" and b["shards_missing"] == 0 and b["runs"][1]["global_all"] == a["runs"][1]["global_all"]
    assert b["routers"][0]["windows"][0] == a["routers"][0]["windows"][0]
    aha("plot", *parts, "-o", tmp("e_plots"))
    r = aha("report", parts[3], "--out-format", "json")
    one = json.loads(r.stdout)["traces"][0]
    assert one["decisions"] == 0 and one["routers"][0]["windows"][0]["all"]["fraction"] is None, one["routers"][0]
    assert "shards 3/4 of a run, 3 missing" in r.stderr, r.stderr
    assert "**No decisions:** this trace holds no documents" in aha("report", parts[3]).stdout
    r = aha("plot", parts[3], "-o", tmp("e_plot3"), ok=False)
    assert r.returncode == 1 and "nothing to plot: no decisions" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = aha("report", *parts[:3], "--out-format", "json")
    assert "shards 0,1,2/4 of a run, 1 missing: the numbers cover those only" in r.stderr, r.stderr
    r = aha("sweep", MODEL, data, "-o", tmp("e_topk.h5"), "--ctx", 32, "--windows", 4, "--policies", "topk:2",
            "--heads-from", parts[3], ok=False)  # no decisions rank no heads
    one_line(r, f"{parts[3]}: --heads-from: the trace holds no documents")
    # --max-tokens 40: the first document's 40 tokens; shard 1/2 records nothing
    limit = ["--max-tokens", 40]
    aha("record", MODEL, data, "-o", whole, "--force", *COMMON, *limit)
    halves = [tmp(f"e_max{i}.h5") for i in range(2)]
    for i, p in enumerate(halves):
        aha("record", MODEL, data, "-o", p, "--shard", f"{i}/2", "--force", *COMMON, *limit)
    with h5py.File(halves[1], "r") as f:
        assert (f.attrs["complete"], f.attrs["n_docs"]) == (1, 0)
    aha("merge", *halves, "-o", merged, "--force")
    assert_same_trace(whole, merged)


def test_doc_order():
    # per-document rows follow doc_index, never the order of the traces on the command line, and say
    # which document (its number and source) each row is
    data = tokfile(tmp("o.tok"), DOCS + [DOCS[0][:20]])
    whole = tmp("o_whole.h5")
    aha("record", MODEL, data, "-o", whole, "--force", *COMMON)
    parts = [tmp(f"o{i}.h5") for i in range(2)]
    for i, p in enumerate(parts):
        aha("record", MODEL, data, "-o", p, "--shard", f"{i}/2", "--force", *COMMON)
    a = json.loads(aha("report", whole, "--out-format", "json").stdout)["traces"][0]
    b = json.loads(aha("report", parts[1], parts[0], "--out-format", "json").stdout)["traces"][0]
    with h5py.File(whole, "r") as f:
        want = [{"doc_index": int(i), "source": s} for i, s in zip(f["doc_index"][...], f["doc_source"].asstr()[...])]
    assert [d["doc_index"] for d in want] == [0, 0, 1, 2, 2, 3], want
    assert a["docs"] == want and b["docs"] == want, b["docs"]
    for e in range(3):
        for w in range(2):
            assert b["routers"][e]["windows"][w]["per_doc"] == a["routers"][e]["windows"][w]["per_doc"], (e, w)
    md = aha("report", parts[1], parts[0]).stdout
    rows = [x for x in md.splitlines() if x.startswith("| ") and ".tok#" in x]
    assert [x.split(" | ")[:2] for x in rows] == [[f"| {d['doc_index']}", d["source"]] for d in want], rows


def doc_sha256_replaced(path, doc, digest):
    """Trace path with doc_sha256[doc] replaced by digest, stored as aha stores it (checksums valid): what an
    aha before issue 35 wrote when that document was edited while it was recorded."""
    with h5py.File(path, "r+", libver=("v110", "v110")) as f:
        d = f["doc_sha256"]
        attrs, chunk, dtype, v = dict(d.attrs), d.chunks, d.dtype, d[...]
        v[doc] = digest.encode()
        del f["doc_sha256"]
        f.create_dataset("doc_sha256", data=v, dtype=dtype, chunks=chunk, maxshape=(None,), fletcher32=True,
                         shuffle=True, compression="gzip").attrs.update(attrs)
    return path


def test_edited_while_recorded():
    # a document edited in place while the run records (after the first pass fingerprinted the dataset,
    # before the run reaches it): the run stops naming it, the trace keeps what was recorded and fits its
    # dataset_sha256; the edited dataset does not resume it, the restored one does
    from ahatest import AHA, durable_docs
    import subprocess
    import time
    docs = [RNG.integers(0, 128, size=int(RNG.integers(20, 60))).tolist() for _ in range(120)]
    data = tokfile(tmp("e.tok"), docs)
    out = tmp("e.h5")
    p = subprocess.Popen([AHA, "record", MODEL, data, "-o", out, *map(str, COMMON)], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while p.poll() is None and (durable_docs(out) or 0) < 2 and time.time() < deadline:
        time.sleep(0.01)
    edited = [list(d) for d in docs]
    edited[110][5] = (edited[110][5] + 1) % 128
    with open(data, "r+b") as f:  # in place, the same length: the reader's mapping sees it
        f.seek(16 + sum(4 + 4 * len(d) for d in docs[:110]) + 4 + 4 * 5)
        f.write(np.int32(edited[110][5]).tobytes())
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 1, f"exit {p.returncode}: the edit went unnoticed"
    assert err.strip().splitlines() == [f"aha: {data}#111: document 110 (e.tok#111) changed while it was recorded "
                                        f"(sha256 {sha(np.asarray(docs[110], '<i4').tobytes())[:16]}... at the first "
                                        f"read, {sha(np.asarray(edited[110], '<i4').tobytes())[:16]}... now); record it "
                                        "again once it is settled"], err
    assert ": ok (format 2, unfinished," in aha("verify", out).stdout
    r = aha("record", MODEL, data, "-o", out, "--resume", *COMMON, ok=False)
    one_line(r, "cannot resume: the dataset (DATA) differs")
    tokfile(data, docs)  # restored
    aha("record", MODEL, data, "-o", out, "--resume", *COMMON)
    assert ": ok (format 2, complete," in aha("verify", out).stdout
    with h5py.File(out, "r") as f:
        assert sorted(set(f["doc_index"][...])) == list(range(120))
        want = [sha(np.asarray(docs[i], "<i4").tobytes()) for i in f["doc_index"][...]]
        assert list(f["doc_sha256"].asstr()[...]) == want
        assert attr_str(f.attrs["dataset_sha256"]) == sha("".join(sha(np.asarray(d, "<i4").tobytes())
                                                                  for d in docs).encode())


def test_dataset_fingerprint_checked():
    # a trace whose documents are not the ones its dataset_sha256 covers (as an aha before issue 35 left
    # one whose document was edited mid-run): verify, report and merge refuse it; the restored dataset does
    # not resume it; shards of which one is such combine into nothing; a dataset_sha256 that is not one
    data = tokfile(tmp("dsfp.tok"), DOCS)
    out = tmp("dsfp.h5")
    aha("record", MODEL, data, "-o", out, "--ctx", 64, "--windows", "4,8", "--quiet")
    ok = shutil.copy(out, tmp("dsfp_ok.h5"))
    doc_sha256_replaced(out, 1, sha(b"an edited document"))
    for cmd in (("verify", out), ("report", out), ("merge", out, "-o", tmp("dsfp_m.h5")), ("plot", out, "-o", tmp("dsfp_p"))):
        one_line(aha(*cmd, ok=False), f"{out}: dataset_sha256 is not the fingerprint of the 3 documents it holds")
    r = aha("record", MODEL, data, "-o", out, "--resume", "--ctx", 64, "--windows", "4,8", "--quiet", ok=False)
    one_line(r, f"cannot resume: the dataset (DATA) differs: {data}: document 1 (dsfp.tok#2) is not the one the trace "
                "recorded")
    s0, s1 = tmp("dsfp0.h5"), tmp("dsfp1.h5")
    for i, s in enumerate((s0, s1)):
        aha("record", MODEL, data, "-o", s, "--ctx", 64, "--windows", "4,8", "--quiet", "--shard", f"{i}/2")
    aha("merge", s0, s1, "-o", tmp("dsfp_whole.h5"))
    doc_sha256_replaced(s1, 0, sha(b"an edited document"))
    for cmd in (("merge", s0, s1, "-o", tmp("dsfp_m2.h5")), ("report", s1, s0)):
        one_line(aha(*cmd, ok=False), "and the other shards: dataset_sha256 is not the fingerprint of the 3 documents "
                                      "they hold")
    assert not os.path.exists(tmp("dsfp_m.h5")) and not os.path.exists(tmp("dsfp_m2.h5"))
    with h5py.File(ok, "r+") as f:
        f.attrs["dataset_sha256"] = np.bytes_(b"not a digest")
    one_line(aha("verify", ok, ok=False), "root attribute dataset_sha256 is not a SHA-256")


def test_router_as_fitted():
    # a router file is routed by only at the window and sinks it was fitted at (it stores both); observe
    # mode, which routes by nothing, warns
    data = tokfile(tmp("f.tok"), DOCS)
    router = tmp("f_router.st")
    aha("fit", MODEL, data, "-o", router, "--window", 4, "--sinks", 0, "--ctx", 32, "--quiet")
    out = tmp("f.h5")
    base = ["--ctx", 32, "--windows", "4,8", "--router", router, "--quiet"]
    r = aha("record", MODEL, data, "-o", out, *base, "--route", "learned", "--window", 8, ok=False)
    one_line(r, f"--window 8: the router file {router} was fitted at window 4; route by it at --window 4")
    r = aha("sweep", MODEL, data, "-o", out, *base, "--route", "learned", ok=False)
    one_line(r, f"--windows 8: the router file {router} was fitted at window 4")
    r = aha("record", MODEL, data, "-o", out, *base, "--route", "learned", "--window", 4, "--sinks", 2, ok=False)
    one_line(r, f"--sinks 2: the router file {router} was fitted with --sinks 0")
    assert not os.path.exists(out)
    aha("record", MODEL, data, "-o", out, *base, "--route", "learned", "--window", 4)
    r = aha("record", MODEL, data, "-o", out, "--force", *base, "--windows", "8,16", "--sinks", 2)
    assert f"{router} was fitted with --sinks 0, this run has --sinks 2" in r.stderr, r.stderr
    assert f"{router} was fitted at window 4, which is not among --windows" in r.stderr, r.stderr


check("fingerprints equal hashlib's: the model's files (folder, shards, GGUF; sha256sum's lines), each document as "
      "read (text, JSONL, tokens) and the dataset over them, the router file; doc_source relative to the dataset",
      test_fingerprints)
check("resume compares inputs by content: a changed dataset names its document and source, a changed model file "
      "names it, a refitted or dropped --router is --router; moved files resume to the uninterrupted run",
      test_resume_by_content)
check("merge, report and plot refuse shards of different datasets (naming it); a model at another path combines",
      test_combine_by_content)
check("merge refuses an unfinished input (alone, or a shard beside a complete one), naming how far it got and "
      "--resume; a combined report says unfinished", test_merge_unfinished)
check("--resume on a complete trace or shard compares every setting, input and run, then: nothing left to record",
      test_complete_resume)
check("after --resume the summary lines describe the whole trace, as the uninterrupted run's do", test_resume_summary)
check("an empty shard (--shard 3/4 of 3 documents, --max-tokens) is complete: merged and reported with the others "
      "as the whole run; alone: no decisions (report), one line (plot); left out: missing", test_empty_shard)
check("per-document rows follow doc_index (shards given in any order) and name each document's source",
      test_doc_order)
check("a router file routes only at the window and sinks it was fitted at; observe mode warns", test_router_as_fitted)
check("a document edited while it is recorded stops the run, naming it; the trace fits its dataset_sha256 and "
      "resumes on the restored dataset only", test_edited_while_recorded)
check("dataset_sha256 against the documents' digests: verify, report, plot, merge and resume refuse a trace or "
      "shards whose documents it does not cover; a dataset_sha256 that is not a SHA-256", test_dataset_fingerprint_checked)
finish()
