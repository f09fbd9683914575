#!/usr/bin/env bash
# Installs the real client of `nascent serve`'s tests: OpenAI's official
# Python package (`openai`, PyPI, Apache-2.0), pinned, into build/serve-venv
# (a venv of Debian's Python). tests/apps/serve_openai_test.py skips, saying
# so, without it. Safe to run again: it returns at once when the pinned
# version imports.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=build/serve-venv
openai_version="${NASCENT_OPENAI_VERSION:-3.51.0}"
if [[ -x "$venv/bin/python3" ]] &&
   "$venv/bin/python3" -c "
import openai
assert openai.__version__ == '$openai_version'" 2>/dev/null; then
  echo "setup_serve: openai $openai_version in $venv"
  exit 0
fi
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "openai==$openai_version"
echo "setup_serve: installed openai $openai_version"
