#!/usr/bin/env python3
"""The README's library snippets are copies of regions of examples/, which
CI builds and runs: a snippet marked

    <!-- from examples/FILE.cpp [NAME] -->
    ```cpp
    ...
    ```

must equal the lines between the two `// [NAME]` markers of that file
(dedented). Prints each mismatch; exits 1 if any. --fix rewrites the
snippets from the files instead."""
import pathlib
import re
import sys
import textwrap

root = pathlib.Path(__file__).resolve().parent.parent
readme = (root / "README.md").read_text().splitlines()
marker = re.compile(r"<!-- from (\S+) \[(\w+)\] -->")
fix = "--fix" in sys.argv[1:]
failures, checked = 0, 0
for i, line in enumerate(readme):
    m = marker.fullmatch(line.strip())
    if not m:
        continue
    path, name = m.groups()
    source = (root / path).read_text().splitlines()
    tags = [j for j, s in enumerate(source) if s.strip() == f"// [{name}]"]
    if len(tags) != 2:
        print(f"README.md:{i + 1}: {path} has {len(tags)} '// [{name}]' markers, not 2")
        failures += 1
        continue
    region = textwrap.dedent("\n".join(source[tags[0] + 1:tags[1]]))
    if not readme[i + 1].startswith("```"):
        print(f"README.md:{i + 2}: a code block must follow the marker")
        failures += 1
        continue
    end = next(j for j in range(i + 2, len(readme)) if readme[j].startswith("```"))
    block = "\n".join(readme[i + 2:end])
    checked += 1
    if block != region and fix:
        readme[i + 2:end] = region.split("\n")
    elif block != region:
        print(f"README.md:{i + 3}: the snippet differs from {path} [{name}]:")
        print(region)
        failures += 1
if fix:
    (root / "README.md").write_text("\n".join(readme) + "\n")
print(f"README snippets: {checked} checked against examples/, {failures} differ")
sys.exit(1 if failures or checked == 0 else 0)
