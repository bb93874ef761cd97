#!/usr/bin/env bash
# Builds the toolpulse container image from this repository, with no base
# image to pull: a static binary (cgo, SQLite linked in, time zones embedded)
# and the build machine's CA certificates on scratch.
#
#   examples/container/build.sh [IMAGE]      (default localhost/toolpulse:dev)
#
# Needs Go, gcc and libc6-dev (for the static link), ca-certificates, and
# podman (or docker).
set -euo pipefail
image=${1:-localhost/toolpulse:dev}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT

(cd "$root" && CGO_ENABLED=1 go build -trimpath \
  -tags osusergo,netgo,sqlite_omit_load_extension,timetzdata \
  -ldflags '-s -w -linkmode external -extldflags "-static"' \
  -o "$context/toolpulse" ./cmd/toolpulse)
cp /etc/ssl/certs/ca-certificates.crt "$context/"
cp "$here/Containerfile" "$context/"

engine=$(command -v podman || command -v docker || true)
if [ -z "$engine" ]; then
  echo "build.sh: needs podman or docker" >&2
  exit 1
fi
"$engine" build --quiet --tag "$image" --file "$context/Containerfile" "$context"
