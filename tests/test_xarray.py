"""A trace opens in xarray (h5netcdf engine) as named, aligned arrays.

A sweep recorded from the tiny llama_aha fixture, opened with
xr.open_datatree: every dataset's axes are named after what they index
(layer, token, head, doc) by the trace's dimension scales, so d_eps of one
layer and head, the full run's NLL and each routed run's gates align on the
one `token` axis without relabelling; their values equal h5py's, their
dtypes are the file's (no _FillValue turning uint32 into float64), and no
axis is a phony dimension. docs/trace-format.md's recipe, as written there.
Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import os
import shutil
import tempfile
import warnings

import h5py
import numpy as np
import xarray as xr

from ahatest import ROOT, aha, check, finish, tokfile

TMP = tempfile.mkdtemp(prefix="aha_xarray_")
rng = np.random.default_rng(38)
DATA = tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, n).tolist() for n in (40, 17, 33)])
TRACE = os.path.join(TMP, "trace.h5")
aha("sweep", os.path.join(ROOT, "tests", "fixtures", "tiny", "llama_aha"), DATA, "-o", TRACE, "--windows", "2,4,8",
    "--route", "oracle", "--eps", "0.01,0.1", "--werr", "--ctx", 32, "--quiet")
LAYER, HEAD = 1, 2
AXES = {"token", "layer", "head", "doc", "eps", "window", "doc_offsets"}  # doc_offsets: its own coordinate


def open_tree():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a phony dimension (an unnamed axis) warns: none may
        return xr.open_datatree(TRACE, engine="h5netcdf")


def test_recipe():
    t = open_tree()
    with h5py.File(TRACE, "r") as f:
        routed = [r for r in f["runs"] if "gate" in f["runs"][r]]
        assert len(routed) == 3, routed  # w2, w4, w8: oracle at each window
        x = xr.Dataset({"d_eps": t["dependency/eps_0.01"], "nll": t["runs/full/nll"],
                        **{f"gate_{r}": t[f"runs/{r}/gate"] for r in routed}}).sel(layer=LAYER, head=HEAD)
        T = len(f["tokens"])
        assert dict(x.sizes) == {"token": T}, dict(x.sizes)
        assert np.array_equal(x["token"], np.arange(T)), "token: the trace's token index"
        assert x["d_eps"].dtype == np.uint32 and x["nll"].dtype == np.float32, (x["d_eps"].dtype, x["nll"].dtype)
        assert np.array_equal(x["d_eps"], f["dependency/eps_0.01"][LAYER, :, HEAD])
        assert np.array_equal(x["nll"], f["runs/full/nll"][:], equal_nan=True)
        for r in routed:
            assert x[f"gate_{r}"].dtype == np.uint8
            assert np.array_equal(x[f"gate_{r}"], f["runs"][r]["gate"][LAYER, :, HEAD]), r
        # one document by its tokens, through the coordinate: document 1 is tokens offs[1]..offs[2]-1
        offs = f["doc_offsets"][:]
        doc = x.sel(token=slice(offs[1], offs[2] - 1))
        assert np.array_equal(doc["d_eps"], f["dependency/eps_0.01"][LAYER, offs[1]:offs[2], HEAD])


def test_axes():
    t = open_tree()
    with h5py.File(TRACE, "r") as f:
        L, H = int(f.attrs["n_layers"]), int(f.attrs["n_heads"])
        for node in t.subtree:
            assert set(node.ds.dims) <= AXES, f"{node.path}: axes {sorted(node.ds.dims)}"
        for name in ("gate", "router_logit", "dependency/eps_0.1", "window_error/w_4", "runs/w2/gate"):
            assert t[name].dims == ("layer", "token", "head"), (name, t[name].dims)
            assert t[name].dtype == f[name].dtype, (name, t[name].dtype, f[name].dtype)
        for name in ("tokens", "position", "token_text", "runs/w8/kl"):
            assert t[name].dims == ("token",), (name, t[name].dims)
        for name in ("doc_index", "doc_source", "doc_sha256"):
            assert t[name].dims == ("doc",), (name, t[name].dims)
        root = t.ds
        assert np.array_equal(root["layer"], np.arange(L)) and np.array_equal(root["head"], np.arange(H))
        assert np.array_equal(root["eps"], f.attrs["eps"]) and np.array_equal(root["window"], f.attrs["windows"])
        assert np.array_equal(root["doc"], np.arange(len(f["doc_index"])))
        assert np.array_equal(root["doc_offsets"], f["doc_offsets"][:])


check("xarray: d_eps of one layer and head, NLL and the routed runs' gates aligned on token; h5py's values",
      test_recipe)
check("xarray: every axis named (layer, token, head, doc), dtypes the file's, coordinates' values", test_axes)
shutil.rmtree(TMP, ignore_errors=True)
finish()
