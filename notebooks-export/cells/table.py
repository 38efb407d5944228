for tw in (False, True):
    print(f"{'decisions with t >= w' if tw else 'all decisions'} ({SET})")
    print("router        " + "".join(f"{'w=' + str(w):>9}" for w in windows))
    for e in eps:
        print(f"{'oracle ' + format(e, 'g'):14}" + "".join(f"{rate(dep[e] > w, w if tw else None):9.4f}" for w in windows))
    if gate is not None:
        print(f"{'learned':14}" + "".join(f"{rate(gate != 0, w if tw else None):9.4f}" for w in windows))
