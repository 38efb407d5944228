"""The fitted router against the baselines at matched sparsity (scripts/frontier.sh),
from `aha report --out-format json` of sweep grids. Traces of the same data,
window, sinks, ctx and full-attention perplexity are one set of lines (a
later sweep may add points to a grid). Per set: each fitted (learned)
point's perplexity change beside each baseline's at the same fraction global
over decisions with t >= w (the baseline's line linearly interpolated between
its grid points, all-local as its fraction-0 point; '-' outside its range),
and per policy the smallest fraction global within delta by aha report's rule
(the first point by fraction within delta, interpolated with the one before
it). With --per-layer, per set the fraction global of each layer at the
fitted router's and the window-error oracle's sparsest grid point within
delta. Prints markdown. usage: frontier_compare.py REPORT.json [--per-layer]"""
import json
import os
import sys

BASELINES = ["random", "topk"]  # what a fitted router must beat; the window-error oracle is shown beside


def at(pts, f):
    """[(fraction, change)] sorted, linearly interpolated at f; None outside their range."""
    for (f0, y0), (f1, y1) in zip(pts, pts[1:]):
        if f0 <= f <= f1:
            return y0 if f1 == f0 else y0 + (y1 - y0) * (f - f0) / (f1 - f0)
    return None


def smallest(pts, delta):
    """(fraction, how) of the smallest fraction global with change <= delta."""
    for i, (f, y) in enumerate(pts):
        if y <= delta:
            if i == 0 or y == delta:
                return f, "at a grid point"
            f0, y0 = pts[i - 1]
            return f0 + (f - f0) * (y0 - delta) / (y0 - y), "interpolated"
    return None, "not reached within the grid"


def pct(x):
    return "-" if x is None else f"{100 * x:+.2f}%"


def sets(rep):
    """{(data, window, sinks, ctx, full ppl): {policy: [(fraction all, fraction t >= w, change, param, per layer)]}};
    per layer: each layer's fraction global over all decisions (None: a natively local layer)."""
    out = {}
    for t in rep["traces"]:
        full = next((r["ppl"] for r in t["runs"] if r["name"] == "full"), None)
        for r in t["runs"]:
            if r["name"] == "full" or not r.get("global_t_ge_w"):
                continue
            key = (os.path.basename(str(t["dataset"])), r["window"], t["sinks"], t["ctx"], round(full, 6))
            out.setdefault(key, {}).setdefault(r["policy"], []).append(
                (r["global_all"]["fraction"], r["global_t_ge_w"]["fraction"], r["ppl_change"], r["param"],
                 [p and p["all"]["fraction"] for p in r["per_layer"]]))
    return out


def per_layer(lines, delta):
    """Each layer's fraction global at the sparsest grid point within delta of the fitted router and the oracle."""
    cols = []
    for pol, name in (("learned", "fitted router"), ("werr", "window-error oracle")):
        p = next((p for p in lines.get(pol, []) if p[2] <= delta), None)
        if p:
            cols.append((f"{name} ({pol}:{p[3]:.6g}: {p[0]:.3f} global, {pct(p[2])})", p[4]))
    if not cols:
        return
    print(f"\nper layer, at the sparsest grid point within {100 * delta:+g}% (fraction global over all decisions):\n")
    print("| layer | " + " | ".join(c[0] for c in cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    for layer in range(len(cols[0][1])):
        print(f"| {layer} | " + " | ".join("-" if c[1][layer] is None else f"{c[1][layer]:.3f}" for c in cols) + " |")


def main(path, delta=0.01, layers=False):
    for (data, w, sinks, ctx, full), lines in sorted(sets(json.load(open(path))).items()):
        for pol in lines:
            lines[pol].sort(key=lambda p: p[:4])
        local = [(p[1], p[2]) for p in lines.get("local", [])]
        base = {b: sorted(local + [(p[1], p[2]) for p in lines[b]]) for b in BASELINES + ["werr"] if b in lines}
        print(f"\n### {data}, w={w}, sinks {sinks}, ctx {ctx} (full attention: ppl {full:.4f}); "
              f"perplexity change at matched fraction global (t >= w)\n")
        print("| fitted tau | global (all) | global (t >= w) | fitted | " +
              "".join((b if b in BASELINES else b + " oracle") + " | " for b in base) + "beats |")
        print("|---:|---:|---:|---:|" + "---:|" * len(base) + "---|")
        for fa, f, y, tau, _ in sorted(lines.get("learned", []), key=lambda p: p[1]):
            ys = {b: at(pts, f) for b, pts in base.items()}
            beats = [b for b, v in ys.items() if b in BASELINES and v is not None and y < v]
            print(f"| {tau:.4g} | {fa:.3f} | {f:.3f} | {pct(y)} | " + "".join(pct(v) + " | " for v in ys.values()) +
                  f"{', '.join(beats) or 'none'} |")
        print(f"\nsmallest fraction global with perplexity change <= {100 * delta:+g}%:\n")
        print("| policy | all decisions | t >= w | how |")
        print("|---|---:|---:|---|")
        for pol, pts in lines.items():
            fa, how = smallest([(p[0], p[2]) for p in pts], delta)
            ft, _ = smallest(sorted((p[1], p[2]) for p in pts), delta)
            print(f"| {pol} | {'-' if fa is None else f'{fa:.3f}'} | {'-' if ft is None else f'{ft:.3f}'} | {how} |")
        if layers:
            per_layer(lines, delta)


main(sys.argv[1], layers="--per-layer" in sys.argv[2:])
