"""Pack each helper branch as a delta over main (files added/changed since the merge base, and a list of
deleted ones) into ckpt/br/<name>.tar.xz + <name>.del; the device overlays it on a copy of the tree."""
import subprocess, sys
for n in sys.argv[1:]:
    base = subprocess.run(["git", "merge-base", "main", n], capture_output=True, text=True).stdout.strip()
    out = subprocess.run(["git", "diff", "--name-status", "--no-renames", base, n], capture_output=True, text=True).stdout
    changed = [l.split("\t")[1] for l in out.splitlines() if l[0] in "AM"]
    deleted = [l.split("\t")[1] for l in out.splitlines() if l[0] == "D"]
    # files changed on main since the base come from the branch's base version (the branch never saw them)
    mainchg = subprocess.run(["git", "diff", "--name-only", "--no-renames", base, "main"], capture_output=True, text=True).stdout.split()
    keep = [f for f in mainchg if f not in changed and f not in deleted and f.startswith(("src/", "tests/", "scripts/"))]
    subprocess.run(f"git archive {n} {' '.join(changed)} | xz -T2 -6 > ckpt/br/{n}.tar.xz", shell=True, check=True)
    open(f"ckpt/br/{n}.del", "w").write("\n".join(deleted) + "\n")
    print(n, len(changed), "changed", len(deleted), "deleted", len(keep), "main-only changes (base kept)")
