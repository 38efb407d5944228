"""scripts/bench_hf_route.py without PyTorch (make bench runs the route
itself, and compares its d_eps with aha record's there): its vectorised d_eps
equals the definition (docs/architecture.md) row by row, and its token file is
the one the tests write for aha (ahatest.tokfile). Prints PASS/FAIL lines
(tests/run.sh counts them).
"""
import importlib.util
import os
import tempfile

import numpy as np

from ahatest import ROOT, check, finish, tokfile

spec = importlib.util.spec_from_file_location("bench_hf_route", os.path.join(ROOT, "scripts/bench_hf_route.py"))
route = importlib.util.module_from_spec(spec)
spec.loader.exec_module(route)


def definition(row, t, e):
    """min { w >= 1 : m_out(w) <= eps }, sinks 0, m_out summed key by key in
    float64 as aha does; eps >= 1 never exceeded (aha_dep_threshold)."""
    lim = np.inf if e >= 1 else float(np.float32(e))
    for w in range(1, t + 2):
        m = 0.0
        for j in range(t - w + 1):
            m += float(row[j])
        if m <= lim:
            return w
    raise AssertionError("m_out(t + 1) is an empty sum")


def causal(h, n, rng):
    """Softmax rows of h heads over n keys, keys past each row's position 0;
    some rows peaked on their first key or their last (mass far or near)."""
    x = rng.normal(0, 3, (h, n, n))
    x[0, n // 2, 0] = 40
    x[1 % h, n // 3, n // 3] = 40
    x[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = -np.inf
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)


def d_eps_is_the_definition():
    eps = (0.0, 0.01, 0.05, 0.1, 0.5, 1.0)
    p = causal(3, 48, np.random.default_rng(7))
    d = route.d_eps(p, eps)
    assert d.shape == (len(eps), 3, 48), d.shape
    for i, e in enumerate(eps):
        for h in range(3):
            for t in range(48):
                want = definition(p[h, t], t, e)
                assert d[i, h, t] == want, f"eps {e}, head {h}, t {t}: {d[i, h, t]}, the definition {want}"
    assert (d[-1] == 1).all() and (d[0][:, 1:] > 1).any(), "eps 1: all 1; eps 0: global where far mass is > 0"


def token_file_is_ahatests():
    with tempfile.TemporaryDirectory() as tmp:
        ids = [1, 49151, 0, 7, 300]
        route.write_tokens(os.path.join(tmp, "a.tok"), ids)
        tokfile(os.path.join(tmp, "b.tok"), [ids])
        assert open(os.path.join(tmp, "a.tok"), "rb").read() == open(os.path.join(tmp, "b.tok"), "rb").read()
        assert route.read_tokens(os.path.join(tmp, "a.tok"), 3).tolist() == ids[:3]


check("bench_hf_route: vectorised d_eps equals the definition, key by key (eps 0 to 1, far and near peaks)",
      d_eps_is_the_definition)
check("bench_hf_route: its token file is ahatest.tokfile's, and reads back its first N ids", token_file_is_ahatests)
finish()
