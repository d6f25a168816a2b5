#!/bin/sh
# Runs the main job on the bundled example (inputs/). Until profile
# generation lands this shows what the reader decodes.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
"$BUILD/lbr2prof" script inputs/test.lbr | head -n 5
