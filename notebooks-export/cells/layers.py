ws = AHA_WINDOWS
fig, ax = plt.subplots(figsize=(8, 5))
for k, w in enumerate(ws):
    rate = (dep[eps[0]][:, pos >= w, :] > w).mean(axis=(1, 2)); rate[LW > 0] = np.nan  # natively local: no bars
    ax.bar(np.arange(L) + (k - len(ws) / 2 + .5) / (len(ws) + 1), rate, 1 / (len(ws) + 1), label=f"w = {w}")
ax.set_xlabel("layer"); ax.set_ylabel("fraction global"); ax.set_ylim(0, 1.05); ax.legend()
ax.set_title(f"oracle eps {eps[0]:g}, decisions with t >= w; {SET}", fontsize=9)
plt.show()
