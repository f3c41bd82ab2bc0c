#!/usr/bin/env bash
# Fetch the ALFWorld games with the official downloader (needs internet and
# `pip install alfworld==0.4.2`), then point memrl-bench at them.
# Usage: scripts/fetch_alfworld.sh [target folder, default ~/.cache/alfworld]
set -euo pipefail
target="${1:-$HOME/.cache/alfworld}"
command -v alfworld-download >/dev/null || { echo "alfworld-download not found: pip install alfworld==0.4.2" >&2; exit 1; }
alfworld-download --data-dir "$target"
test -d "$target/json_2.1.1/valid_seen" || { echo "download finished but $target/json_2.1.1/valid_seen is missing" >&2; exit 1; }
echo "ALFWorld games are in $target/json_2.1.1. Use them with: export ALFWORLD_DATA=$target (or env.data_dir=$target)"
