#!/bin/sh
# Builds the release archives and SHA256SUMS into dist/ (issue 38):
#   release/build.sh
# GoReleaser in snapshot mode (no tag, nothing published), installed from
# the Go module proxy at a pinned version when it is not on PATH.
set -eu
cd "$(dirname "$0")/.."
GORELEASER_VERSION=v2.15.1
gr=$(command -v goreleaser || true)
if [ -z "$gr" ]; then
  gobin=$(go env GOPATH)/bin
  if [ ! -x "$gobin/goreleaser" ]; then
    echo "installing goreleaser $GORELEASER_VERSION (go install)" >&2
    go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
  fi
  gr=$gobin/goreleaser
fi
# What the binaries and archives are stamped with, from the commit alone
# (GoReleaser's own git detection needs a remote).
HARVEY_COMMIT=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
HARVEY_DATE=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)
HARVEY_VERSION=$(git describe --tags --match 'v*' 2>/dev/null || echo "v0.1.0-dev+$(git rev-parse --short=12 HEAD)")
export HARVEY_COMMIT SOURCE_DATE_EPOCH HARVEY_DATE HARVEY_VERSION
exec "$gr" release --snapshot --clean --parallelism 2 "$@"
