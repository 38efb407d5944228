fig, ax = plt.subplots(figsize=(8, 5))
for e in eps:
    d = np.sort(dep[e][GL].ravel()); w = np.arange(1, d[-1] + 1)
    ax.loglog(w, 1 - np.searchsorted(d, w, side="right") / d.size,
              label=f"{'all' if len(GL) == L else 'global'} layers, eps {e:g}")
for ls in [GL[g * len(GL) // 3:(g + 1) * len(GL) // 3] for g in range(3)] if len(GL) >= 3 else []:  # thirds of GL
    d = np.sort(dep[eps[0]][ls].ravel()); w = np.arange(1, d[-1] + 1)
    ax.loglog(w, 1 - np.searchsorted(d, w, side="right") / d.size, "--", label=f"layers {ls[0]}-{ls[-1]}, eps {eps[0]:g}")
ax.set_title(f"Long tail of d_eps (all decisions; {SET})", fontsize=9)
ax.set_xlabel("window w (tokens)"); ax.set_ylabel("P(d_eps > w)"); ax.grid(alpha=.3); ax.legend()
plt.show()
