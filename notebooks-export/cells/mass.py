S, e0 = int(f.attrs["sinks"]), eps[0]
sink = f[DS["mass_sinks"]][...].astype(np.float64)  # [L, T, H] mass on keys 0..S-1
n = len(GL)
groups = [GL[g * n // min(3, n):(g + 1) * n // min(3, n)] for g in range(min(3, n))]  # thirds of GL, as aha report
labels, rows = [], [[], []]
for w in windows:
    far = f[DS["mass_far"].format(window=w)][...].astype(np.float64)  # mass on keys S..t-w
    for ls in [GL] + groups:
        sub = np.zeros(far.shape, bool); sub[np.ix_(ls, pos >= w + S)] = True  # window and sinks do not overlap
        for k, m in enumerate((sub, sub & (dep[e0] > w))):
            s_, f_ = (sink[m].mean(), far[m].mean()) if m.any() else (np.nan, np.nan)
            rows[k].append((s_, 1 - s_ - f_, f_))
        labels.append(f"w{w} " + ("all layers" if ls is GL else f"layers {ls[0]}-{ls[-1]}"))
x = np.arange(len(labels))
fig, axs = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
for ax, r, title in zip(axs, rows, ("decisions with t >= w + sinks", "those the oracle calls global (d_eps > w)")):
    r, bottom = np.array(r), np.zeros(len(labels))
    for k, name in enumerate(("sinks", "window", "far context")):
        ax.bar(x, r[:, k], bottom=bottom, label=name); bottom += np.nan_to_num(r[:, k])
    ax.set_ylim(0, 1); ax.set_ylabel("mean mass"); ax.set_title(f"{title} (oracle eps {e0:g}; {SET})", fontsize=9)
axs[0].legend(fontsize=7); axs[1].set_xticks(x, labels, rotation=60, fontsize=7)
plt.show()
