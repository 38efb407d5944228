fig, ax = plt.subplots(figsize=(8, 5))
for k, e in enumerate(eps):
    for tw, ls in ((False, "o-"), (True, "o--")):
        ax.plot(windows, [rate(dep[e] > w, w if tw else None) for w in windows], ls, c=f"C{k}", mfc="none" if tw else None,
                label=f"oracle, eps {e:g}, {'decisions with t >= w' if tw else 'all decisions'}")
if gate is not None:
    for tw, ls in ((False, "o-"), (True, "o--")):
        ax.plot(windows, [rate(gate != 0, w if tw else None) for w in windows], ls, c=f"C{len(eps)}",
                label=f"learned router, {'decisions with t >= w' if tw else 'all decisions'}")
ax.axhline(1, ls=":", c="gray", label="all-global (full attention)")
ax.set_xscale("log", base=2); ax.set_ylim(0, 1.05); ax.grid(alpha=.3); ax.legend(fontsize=7)
ax.set_title(f"Sparsity (solid: all decisions, the paper's metric; dashed: t >= w; {SET})", fontsize=9)
ax.set_xlabel("local window w (tokens)"); ax.set_ylabel("fraction needing full attention")
plt.show()
