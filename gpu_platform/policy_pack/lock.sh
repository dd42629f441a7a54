#!/bin/sh
# Pins the policy pack's dependencies (requirements.in) and everything they need, with hashes,
# at the versions the project's uv.lock holds, into requirements.txt, which the engine installs
# with pip. Run it after changing requirements.in or uv.lock; a test checks the two agree.
set -eu
cd "$(dirname "$0")/../.."
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
./uvw export --frozen --no-hashes --no-emit-project --format requirements-txt \
    | sed -n 's/^\([A-Za-z0-9._-]*==[^ ;]*\).*/\1/p' > "$constraints"
./uvw pip compile gpu_platform/policy_pack/requirements.in --constraint "$constraints" \
    --generate-hashes \
    --universal --python-version 3.11 --no-annotate --quiet \
    --custom-compile-command gpu_platform/policy_pack/lock.sh --output-file gpu_platform/policy_pack/requirements.txt
