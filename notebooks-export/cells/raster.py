w, doc, n = AHA_RASTER_WINDOW, AHA_DOC, AHA_TOKENS
t0 = offsets[doc]; n = min(n, offsets[doc + 1] - t0)
r = (dep[eps[0]][:, t0:t0 + n, :] > w).astype(int)
if gate is not None:
    r += 2 * (gate[:, t0:t0 + n, :] != 0)
text = f[DS["token_text"]].asstr()[t0:t0 + n]
fig, ax = plt.subplots(figsize=(8, 5))
colors = ["white", "#d62728", "#1f77b4", "#6a3d9a"][: 2 if gate is None else 4]  # local, oracle, learned, both
ax.imshow(r.transpose(0, 2, 1).reshape(L * H, n), aspect="auto", interpolation="nearest",
          cmap=matplotlib.colors.ListedColormap(colors), vmin=0, vmax=len(colors) - 1)
step = max(1, n // 40)
ax.set_xticks(range(0, n, step), [repr(s)[1:-1] for s in text[::step]], rotation=90, fontsize=7)
ax.set_yticks([l * H for l in range(L)], [f"L{l} local" if LW[l] else f"L{l}" for l in range(L)], fontsize=7)
ax.set_title(f"document {doc}, w = {w} (oracle eps {eps[0]:g}; {SET})", fontsize=9)
plt.show()
