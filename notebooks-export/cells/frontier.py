DELTA = AHA_DELTA  # aha notebook --delta: a relative perplexity change
PAPER = (0.116, 0.0)  # OLMo-2-1B with AHA routers, w=128: 11.6% global, ~0% change
nll = lambda r: f[DS["run_nll"].format(run=r)][...].astype(np.float64)
ppl = lambda r: np.exp(np.nanmean(nll(r)))
full = ppl("full")
lines = {}
for name, g in f[RUNS].items():
    pol = as_str(g.attrs["policy"])
    if pol == "global":
        continue
    w = int(g.attrs["window"]); gt = f[DS["run_gate"].format(run=name)][...][GL]  # global layers only
    lines.setdefault((w, pol.split(":")[0]), []).append((gt.mean(), gt[:, pos >= w, :].mean(), ppl(name) / full - 1,
        f[DS["run_kl"].format(run=name)][...].mean(), name))


def smallest(pts, k):
    """The smallest fraction global (column k) within DELTA: the first run within it, interpolated with the one before."""
    pts = sorted(pts, key=lambda p: (p[k], p[2]))
    i = next((i for i, p in enumerate(pts) if p[2] <= DELTA), None)
    if i is None:
        return float("nan"), "not reached within the grid"
    if i == 0 or pts[i][2] == DELTA:
        return pts[i][k], "at a grid point"
    (x0, y0), (x1, y1) = (pts[i - 1][k], pts[i - 1][2]), (pts[i][k], pts[i][2])
    return x0 + (DELTA - y0) * (x1 - x0) / (y1 - y0), "interpolated"


print(f"smallest fraction global with perplexity change <= {100 * DELTA:+.2f}% ({SET})")
print(f"{'w':>5} {'policy':10} {'all decisions':>14} {'how':28} {'t >= w':>8} how")
for (w, pol), pts in lines.items():
    (a, ha), (b, hb) = smallest(pts, 0), smallest(pts, 1)
    print(f"{w:5d} {pol:10} {a:14.4f} {ha:28} {b:8.4f} {hb}")
ws = sorted({w for w, _ in lines})
fig, axs = plt.subplots(2, len(ws), figsize=(5 * len(ws), 7), squeeze=False)
for j, w in enumerate(ws):
    for (lw, pol), pts in lines.items():
        if lw == w:
            pts = sorted(pts)
            axs[0, j].plot([p[0] for p in pts], [100 * p[2] for p in pts], "o-", label=pol)
            axs[1, j].plot([p[0] for p in pts], [p[3] for p in pts], "o-", label=pol)
    axs[0, j].axhline(100 * DELTA, ls="--", c="gray", label=f"delta {100 * DELTA:+.2f}%")
    axs[0, j].plot(*PAPER, "k*", ms=12, label="paper: OLMo-2-1B AHA, w=128, 11.6% global, ~0% change")
    axs[0, j].set_title(f"w = {w} (all decisions; {SET})", fontsize=9); axs[0, j].set_ylabel("perplexity change (%)")
    axs[1, j].set_ylabel("mean KL (nats)"); axs[1, j].set_xlabel("fraction global (all decisions)")
    for ax in axs[:, j]:
        ax.set_xlim(0, 1); ax.grid(alpha=.3); ax.legend(fontsize=7)
plt.show()
