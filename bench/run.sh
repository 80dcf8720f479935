#!/usr/bin/env bash
# Benchmarks: Harvey against peers measured in the same run (ripgrep, grep,
# git, os.ReadFile), printed as one Markdown table (see BENCHMARKS.md).
# Usage: bench/run.sh            (installs ripgrep, hyperfine, jq, sqlite3, strace and bubblewrap with apt if missing)
#        bench/run.sh -scale=false   (without the growth rows: about a minute instead of several)
#        HARVEY_BENCH_QUICK=1 bench/run.sh -scale=false   (CI: each measurement once, three runs a
#        process row: that it runs and what it prints, not numbers to quote)
set -euo pipefail
count=5 runs=()
if [ -n "${HARVEY_BENCH_QUICK:-}" ]; then count=1 runs=(-runs 3); fi
cd "$(dirname "$0")/.."

need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v hyperfine >/dev/null || need+=(hyperfine)
[ -x /usr/bin/time ] || need+=(time)
command -v jq >/dev/null || need+=(jq)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v strace >/dev/null || need+=(strace)
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get install -y "${need[@]}" >&2 || { $sudo_cmd apt-get update >&2 && $sudo_cmd apt-get install -y "${need[@]}" >&2; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building harvey" >&2
go build -o "$work/harvey" ./cmd/harvey
go build -o "$work/harveybench" ./bench/harveybench
# Opening a workspace creates agents/ in it, so search a copy of Go's source.
cp -r "$(go env GOROOT)/src" "$work/gosrc"

echo "go test -bench (tool round, search, list) ..." >&2
HARVEY_BENCH_TREE="$work/gosrc" go test -run '^$' -bench 'ToolRound|Search|ListFiles|EditLarge|ParallelReads|CommandCost' -benchmem -count "$count" . > "$work/gobench.txt"
rm -rf "$work/gosrc/agents"
# The same command in Landlock-only mode (internal/kernelsim's no-userns
# filter around the test binary), against the run's bubblewrap above.
echo "go test -bench CommandCost in Landlock-only mode ..." >&2
go test -c -o "$work/harvey.test" .
HARVEY_TEST_HELPER=kernel HARVEY_TEST_HELPER_ARG=no-userns \
  HARVEY_TEST_EXEC="[\"$work/harvey.test\",\"-test.run=^\$\",\"-test.bench=CommandCost/harvey\",\"-test.count=$count\"]" \
  "$work/harvey.test" | sed 's#^BenchmarkCommandCost/harvey#BenchmarkCommandCost/landlock-only-harvey#' >> "$work/gobench.txt" ||
  echo "(no Landlock-only run: kernelsim needs the whole sandbox here)" >&2

go test -run '^TestPromptLayoutIsAppendOnly$' -v -count 1 . > "$work/layout.txt"

echo "processes (hyperfine, /usr/bin/time), then the growth rows ..." >&2
"$work/harveybench" -harvey "$work/harvey" -tree "$work/gosrc" -gobench "$work/gobench.txt" -layout "$work/layout.txt" "${runs[@]}" "$@" > "$work/table.md"

echo
echo "## $(date -u +%Y-%m-%d) on $(uname -m), $(nproc) CPUs, $(go version | cut -d' ' -f3)"
echo
cat "$work/table.md"
echo
echo "### A Raspberry Pi user's session (llama3.2's template, Ollama's cache, Pi-like rates)"
echo
go test -run '^TestPiSessionEvaluatesLittleAfterEnter$' -v -count 1 . | sed -n 's/^ *pisession_test.go:[0-9]*: /- /p'
go test -run '^TestWarmStartEvaluatesTheHeadBeforeEnter$' -v -count 1 . | sed -n 's/^ *warm_test.go:[0-9]*: /- /p'
echo
echo "### A delegated search (issue 63): the main conversation's growth, in prompt tokens"
echo
go test -run '^TestDelegatedSearchSparesTheMainConversation$' -v -count 1 . | sed -n 's/^ *delegate_test.go:[0-9]*: /- /p'
