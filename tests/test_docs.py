"""The README and docs/: every relative link, every #anchor and every
repository path they name exists, nothing points outside the repository, the
README stays a short front door listing exactly the commands aha.c has, and
measurements (their load averages) live on docs/benchmarks.md only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ahatest import ROOT, check, finish  # noqa: E402

# The README is the front door; the detail is in docs/. 200 lines holds the
# question, two commands, one recipe, a line per command and the links.
README_MAX_LINES = 200
BENCHMARKS = os.path.join(ROOT, "docs", "benchmarks.md")


def ignored_prefixes():
    """The anchored entries of .gitignore (build/, models/, datasets/corpora/,
    demo-out/ ...): paths made by set-up or by a run, absent from a fresh
    clone, so a page may name them without the test requiring them."""
    out = []
    for line in open(os.path.join(ROOT, ".gitignore")):
        line = line.strip()
        if line.startswith("/"):
            out.append(line[1:].rstrip("/"))
    return out


IGNORED = ignored_prefixes()


def is_ignored(rel):
    return any(rel == p or rel.startswith(p + "/") for p in IGNORED)


def pages():
    """README.md, docs/*.md and every other Markdown file of the tree (e.g.
    kernels/cuda/README.md), outside ignored and hidden folders."""
    found = []
    for d, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(d, ROOT)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".")
                         and not is_ignored(os.path.normpath(os.path.join(rel, x))))
        found += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md")]
    return found


FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def prose(text):
    """The text a renderer turns into links: fenced blocks and code spans out."""
    return SPAN.sub("", FENCE.sub("", text))


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped (code
    spans keep their text), spaces to hyphens."""
    s = heading.replace("`", "").strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    """Every heading's anchor, with GitHub's -1, -2 ... for repeats."""
    seen, out = {}, set()
    for h in HEADING.findall(FENCE.sub("", open(path, encoding="utf-8").read())):
        s = slug(h)
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def inside(path):
    return os.path.realpath(path).startswith(os.path.realpath(ROOT) + os.sep)


def link_problems(page):
    """Each relative link: its file exists inside the repository, and its
    #anchor is a heading of the page it names."""
    bad = []
    for target in LINK.findall(prose(open(page, encoding="utf-8").read())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check
            continue
        where, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), where)) if where else page
        if where.startswith("/") or not inside(dest):
            bad.append(f"{target}: outside the repository")
        elif not os.path.exists(dest):
            bad.append(f"{target}: no such file")
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            bad.append(f"{target}: no heading #{frag} in {os.path.relpath(dest, ROOT)}")
    return bad


# a word that names a file or folder of the repository: a top-level entry of
# the tree, then path components; globs and placeholders are not paths
PATHLIKE = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.+-]+)*/?$")


def path_problems(page):
    """Each repository path the page names in code (spans and blocks) exists,
    unless set-up or a run makes it (.gitignore)."""
    text = open(page, encoding="utf-8").read()
    code = " ".join(SPAN.findall(FENCE.sub("", text))) + " " + " ".join(FENCE.findall(text))
    tops = {e for e in os.listdir(ROOT) if not e.startswith(".")} - {"README.md"}
    bad = set()
    for word in code.split():
        word = word.strip(".,;:()'\"")
        if "/" not in word or not PATHLIKE.match(word) or word.split("/")[0] not in tops:
            continue
        rel = os.path.normpath(word)
        if not is_ignored(rel) and not os.path.exists(os.path.join(ROOT, rel)):
            bad.add(word)
    return sorted(bad)


def commands():
    """The subcommands of aha.c's table, as `aha --help` lists them."""
    src = open(os.path.join(ROOT, "aha.c"), encoding="utf-8").read()
    return re.findall(r'^\s*\{"([a-z]+)",\s*\w+,\s*"', src, re.M)


def test_links():
    bad = [f"{os.path.relpath(p, ROOT)}: {b}" for p in pages() for b in link_problems(p)]
    assert not bad, "\n".join(bad)


def test_paths():
    bad = [f"{os.path.relpath(p, ROOT)}: `{b}` does not exist" for p in pages() for b in path_problems(p)]
    assert not bad, "\n".join(bad)


def test_front_door():
    n = sum(1 for _ in open(os.path.join(ROOT, "README.md"), encoding="utf-8"))
    assert n <= README_MAX_LINES, f"README.md has {n} lines, more than {README_MAX_LINES}: move detail to docs/"


def test_commands():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    have = commands()
    assert len(have) >= 10, f"aha.c's command table not found: {have}"
    rows = re.findall(r"^\| `aha ([a-z]+)", readme, re.M)
    missing = [c for c in have if c not in rows and f"`{c}`" not in readme]
    extra = [r for r in rows if r not in have]
    assert not missing and not extra, f"README's commands: missing {missing}, not in aha.c {extra}"


def test_measurements_on_benchmarks():
    bad = [os.path.relpath(p, ROOT) for p in pages()
           if p != BENCHMARKS and "load average" in open(p, encoding="utf-8").read()]
    assert not bad, f"a figure's load average outside docs/benchmarks.md: {bad}"


check("docs: every relative link and #anchor resolves inside the repository", test_links)
check("docs: every repository path named in code exists", test_paths)
check(f"docs: README.md is a front door of at most {README_MAX_LINES} lines", test_front_door)
check("docs: README lists every command of aha.c's table, and no other", test_commands)
check("docs: measurements' conditions (load average) only in docs/benchmarks.md", test_measurements_on_benchmarks)
finish()
