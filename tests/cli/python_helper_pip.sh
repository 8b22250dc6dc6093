#!/usr/bin/env bash
# The Python helper installs with pip from the source tree, as docs/user-guide.md says, offline:
# into a fresh virtual environment of Debian's python3 (its setuptools and wheel from the system,
# --no-build-isolation, --no-index: nothing fetched), from a copy of python/ (pip's build files
# stay out of the tree), then imports from the environment, not from the tree.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$SAFE_SOURCE_DIR/python" "$tmp/src"
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv" ||
    fail "python3 -m venv failed (apt-get install python3-venv)"
out=$("$tmp/venv/bin/pip" install --no-build-isolation --no-index --no-deps "$tmp/src" 2>&1) ||
    fail "pip install of python/ failed: $out"
where=$(cd "$tmp" && PYTHONPATH='' "$tmp/venv/bin/python" -c 'import safe_slurm; print(safe_slurm.__file__)')
[[ $where == "$tmp/venv/"* ]] || fail "safe_slurm imported from $where, not from the virtual environment"
version=$("$tmp/venv/bin/pip" show safe-slurm | sed -n 's/^Version: //p')
[[ -n $version ]] || fail "pip does not list safe-slurm"
echo "PASS: python_helper_pip (safe-slurm $version installed with pip, imported from $where)"
