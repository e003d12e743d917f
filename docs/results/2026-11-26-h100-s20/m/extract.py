"""ckpt/extract.py NAME SECTION: the shell code blocks of GPU-RUN.md's SECTION (checkpoint|final) of branch NAME."""
import re, subprocess, sys
name, sec = sys.argv[1], sys.argv[2]
text = subprocess.run(["git", "show", f"{name}:GPU-RUN.md"], capture_output=True, text=True, cwd="/work/main").stdout
parts = re.split(r"^## ", text, flags=re.M)
body = next(p for p in parts[1:] if p.lower().startswith(sec))
blocks = re.findall(r"```[a-z]*\n(.*?)```", body, flags=re.S)
print(". ckpt/env.sh >/dev/null\nexport B\n" + "\n".join(blocks))
