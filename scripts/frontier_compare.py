"""The fitted router against the baselines at matched sparsity (scripts/frontier.sh):
from `aha report --format json` of sweep grids, per trace and window, each
fitted (learned) point's perplexity change beside each baseline's at the same
fraction global over decisions with t >= w (the baseline's line linearly
interpolated between its grid points, all-local as its fraction-0 point; '-'
outside its range), then the smallest fraction global within delta per policy.
Prints markdown. usage: frontier_compare.py REPORT.json"""
import json
import os
import sys

BASELINES = ["random", "topk", "werr"]


def line(points):
    """[(fraction t >= w, ppl change)] sorted by fraction."""
    return sorted((p["fraction_t_ge_w"], p["ppl_change"]) for p in points)


def at(pts, f):
    """pts linearly interpolated at fraction f, None outside their range."""
    for (f0, y0), (f1, y1) in zip(pts, pts[1:]):
        if f0 <= f <= f1:
            return y0 if f1 == f0 else y0 + (y1 - y0) * (f - f0) / (f1 - f0)
    return None


def pct(x):
    return "-" if x is None else f"{100 * x:+.2f}%"


def main(path):
    rep = json.load(open(path))
    for t in rep["traces"]:
        fr = t.get("frontier")
        if not fr:
            continue
        data = os.path.basename(str(t["dataset"]))
        for w in sorted({ln["window"] for ln in fr["lines"]}):
            lines = {ln["policy"]: ln for ln in fr["lines"] if ln["window"] == w}
            local = line(lines["local"]["points"]) if "local" in lines else []
            base = {b: local + line(lines[b]["points"]) for b in BASELINES if b in lines}
            print(f"\n### {data}, w={w}, sinks {t['sinks']}, ctx {t['ctx']}: perplexity change at matched "
                  f"fraction global (t >= w)\n")
            print("| fitted tau | global (t >= w) | fitted | " + " | ".join(base) + " | beats |")
            print("|---:|---:|---:|" + "---:|" * len(base) + "---|")
            for p in sorted(lines["learned"]["points"], key=lambda p: p["fraction_t_ge_w"]):
                f, y = p["fraction_t_ge_w"], p["ppl_change"]
                ys = {b: at(pts, f) for b, pts in base.items()}
                beats = [b for b, v in ys.items() if v is not None and y < v]
                print(f"| {p['param']:.4g} | {f:.3f} | {pct(y)} | " + " | ".join(pct(v) for v in ys.values()) +
                      f" | {', '.join(beats) or 'none'} |")
            print(f"\nsmallest fraction global with perplexity change <= {100 * fr['delta']:+g}%:\n")
            print("| policy | all decisions | t >= w | how |")
            print("|---|---:|---:|---|")
            for name, ln in lines.items():
                a, b = ln.get("smallest_all") or {}, ln.get("smallest_t_ge_w") or {}
                fa, fb = a.get("fraction"), b.get("fraction")
                print(f"| {name} | {'-' if fa is None else f'{fa:.3f}'} | {'-' if fb is None else f'{fb:.3f}'} | "
                      f"{a.get('how', 'not reached within the grid')} |")


main(sys.argv[1])
