w = AHA_HEAT_WINDOW
rate = (dep[eps[0]][:, pos >= w, :] > w).mean(axis=1)  # [L, H], decisions with t >= w
rate[LW > 0] = np.nan  # natively local layers: blank rows
fig, ax = plt.subplots(figsize=(8, 5))
im = ax.imshow(rate, origin="lower", aspect="auto", vmax=1)
ax.set_yticks(range(L), [f"{l} local" if LW[l] else str(l) for l in range(L)], fontsize=7)
fig.colorbar(im, label="fraction global"); ax.set_xlabel("head"); ax.set_ylabel("layer")
ax.set_title(f"oracle eps {eps[0]:g}, w = {w}, decisions with t >= w; {SET}", fontsize=9)
plt.show()
