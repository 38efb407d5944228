rows = []
for name, g in f[RUNS].items():  # xarray's mean skips the NaN NLL of each document's last token
    run = {k: X[DS[k].format(run=name)] for k in ("run_nll", "run_kl", "run_gate") if DS[k].format(run=name) in f}
    rows.append((name, as_str(g.attrs["policy"]), int(g.attrs["window"]), np.exp(float(run["run_nll"].mean())),
                 float(run["run_kl"].mean()), float(run["run_gate"][GL].mean()) if "run_gate" in run else 1.0))
full = [r for r in rows if r[1] == "global"][0]
routed = [r for r in rows if r[1] != "global"]
rt = as_str(f.attrs["router"])  # the policy, or the grid's name
fig, ax = plt.subplots(figsize=(8, 5)); ax2 = ax.twinx()
for k, pol in enumerate(dict.fromkeys(r[1] for r in routed)):  # a line per policy, its runs by fraction global
    pts = sorted((r for r in routed if r[1] == pol), key=lambda r: r[5])
    ax.plot([r[5] for r in pts], [100 * (r[3] / full[3] - 1) for r in pts], "o-", c=f"C{k}", label=f"{pol}: perplexity change")
    ax2.plot([r[5] for r in pts], [r[4] for r in pts], "s--", c=f"C{k}", label=f"{pol}: mean KL")
(h1, l1), (h2, l2) = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()
ax.legend(h1 + h2, l1 + l2, fontsize=7)
ax.set_xlabel("fraction routed global (all decisions)"); ax.set_ylabel("perplexity change (%)"); ax2.set_ylabel("mean KL (nats)")
ax.set_title(f"Quality vs sparsity, routed by {rt} ({SET})", fontsize=9)
plt.show()
