import os

import h5py
import numpy as np
import xarray as xr
import matplotlib
import matplotlib.pyplot as plt

# The trace, relative to this notebook's folder (Jupyter runs a notebook there): move them together.
TRACE = AHA_TRACE
if not os.path.exists(TRACE):
    raise FileNotFoundError(f"{TRACE}: not found from {os.getcwd()}: run the notebook from its own folder, or set TRACE")
f = h5py.File(TRACE, "r")
# The same trace as named arrays whose axes (layer, token, head, doc) align across groups (docs/trace-format.md),
# e.g. X[DS["dep"].format(eps="0.01")].sel(layer=3, head=2): d_eps of one head over the tokens.
X = xr.open_datatree(TRACE, engine="h5netcdf")
# The trace's datasets, named as aha's schema names them (docs/trace-format.md):
# {eps} is an eps printed as %g, {window} a window, {run} a run's name.
DS = AHA_DS
RUNS = AHA_RUNS
L, H = int(f.attrs["n_layers"]), int(f.attrs["n_heads"])
SET = f"sinks {int(f.attrs['sinks'])}, ctx {int(f.attrs['ctx'])}" if "ctx" in f.attrs and int(f.attrs["ctx"]) > 0 \
    else f"sinks {int(f.attrs['sinks'])}, ctx not recorded"  # the settings every figure names
# Natively local layers (layer_window > 0: a native sliding window, as Gemma-3's) run their window in every
# mode: the router decides nothing there and d_eps is at most the window, so every count over layers is GL's.
LW = f.attrs["layer_window"] if "layer_window" in f.attrs else np.zeros(L, np.int64)  # older traces: all global
GL = np.flatnonzero(LW == 0)  # the global layers
if len(GL) < L:
    wl = sorted(set(LW[LW > 0].tolist()))
    SET += (f"; global layers only: {len(GL)} of {L}; {L - len(GL)} natively local (window"
            + (f" {wl[0]}" if len(wl) == 1 else f"s {wl[0]}-{wl[-1]}") + ") shown apart")
windows = [int(w) for w in f.attrs["windows"]]
eps = [float(e) for e in f.attrs["eps"]]
pos = f[DS["position"]][...]
offsets = f[DS["doc_offsets"]][...]
dep = {e: f[DS["dep"].format(eps=format(e, "g"))][...] for e in eps}  # [L, T, H] d_eps
gate = f[DS["gate"]][...] if DS["gate"] in f else None  # learned router, [L, T, H]


def rate(g, w=None):
    """Fraction of g [L, T, H] that is set on the global layers: over all decisions (the paper's metric), or
    with w over the decisions with t >= w (where the window drops keys); NaN when there are none."""
    g = g[GL] if w is None else g[GL][:, pos >= w, :]
    return g.mean() if g.size else float("nan")


def as_str(v):
    """A string attribute as str: the trace holds fixed-length UTF-8 strings, which h5py returns as bytes."""
    return v.decode() if isinstance(v, bytes) else v


print(f"{L} layers x {H} heads, {len(pos)} tokens, {len(offsets) - 1} documents; {SET}")
