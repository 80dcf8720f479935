package main

// Growth rows (issue 21): what Harvey costs as the repository and the
// session grow, each against the peer that does the same job, measured in
// the same run at each size. The trees, the repository, the session and
// the knowledge base are generated here, so every run measures the same
// shapes.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// scaleToken is what the searches look for: it is in one file in 1,000.
const scaleToken = "needle_in_the_haystack"

// genTree writes n files of about 1.5 KB in directories of perDir files.
// With ignores, every directory has a .gitignore whose rules hide a
// quarter of its files (some of which hold the token), as a monorepo's
// generated and build files are hidden.
func genTree(dir string, n, perDir int, ignores bool) {
	filler := strings.Repeat("\treturn compute(value, offset) // an ordinary line of code\n", 24)
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("pkg%05d", i/perDir))
		if i%perDir == 0 {
			os.MkdirAll(d, 0o755)
			if ignores {
				os.WriteFile(filepath.Join(d, ".gitignore"), []byte("*.gen.go\nbuild/\n/tmp_*\n!keep.gen.go\n"), 0o644)
			}
		}
		name := fmt.Sprintf("file%05d.go", i)
		if ignores && i%4 == 0 {
			name = fmt.Sprintf("file%05d.gen.go", i)
		}
		body := fmt.Sprintf("package pkg\n\nfunc f%d() int {\n%s}\n", i, filler)
		if i%2000 == 7 || i%2000 == 8 { // 8 is a .gen.go file when ignored; 100 matches in all, under search's cap of 200, so both search every file
			body = strings.Replace(body, "value, offset", scaleToken, 1)
		}
		os.WriteFile(filepath.Join(d, name), []byte(body), 0o644)
	}
	if ignores {
		gitInit(dir)
	}
}

func gitInit(dir string) {
	c := exec.Command("git", "init", "-q", dir)
	if out, err := c.CombinedOutput(); err != nil {
		fail("git init: %v %s", err, out)
	}
}

// harveyRun is the command line for one slash command run headless.
func harveyRun(work, name, line string) string {
	return fmt.Sprintf("%s --run %s --ollama http://127.0.0.1:1", *harvey, script(work, name, line))
}

// rgCmd is ripgrep doing search_files' job: line numbers, and not Harvey's
// own agents/ directory (opening a workspace creates it; Harvey never
// searches it).
func rgCmd(pattern string) string {
	return fmt.Sprintf("rg -n --no-messages -g !agents -F %s", shellQuote(pattern))
}

func scaleSearchRows(work string) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		dir := filepath.Join(work, fmt.Sprintf("tree%d", n))
		genTree(dir, n, 10, false)
		h := harveyRun(work, "scale-search.txt", `/search "`+scaleToken+`"`)
		d := hyperfine(dir, h, rgCmd(scaleToken))
		r := ratio(d[0], d[1])
		goal, met := "", ""
		if n == 100_000 {
			goal, met = "≤ 2×", yes(r <= 2)
		}
		add(row{fmt.Sprintf("growth: search_files over %s files vs ripgrep", thousands(n)), ms(d[0]), "rg " + ms(d[1]), fmt.Sprintf("%.2f×", r), goal, met})
		if n == 100_000 {
			same, note := sameMatchesIn(dir, h, rgCmd(scaleToken))
			add(row{"growth: search_files over 100,000 files: same matches as ripgrep", note, "", "", "equal", yes(same)})
		}
		os.RemoveAll(dir)
	}
	dir := filepath.Join(work, "ignores")
	genTree(dir, 100_000, 10, true)
	h := harveyRun(work, "scale-search.txt", `/search "`+scaleToken+`"`)
	d := hyperfine(dir, h, rgCmd(scaleToken))
	r := ratio(d[0], d[1])
	add(row{"growth: search_files, 100,000 files under 10,000 .gitignore files, vs ripgrep", ms(d[0]), "rg " + ms(d[1]), fmt.Sprintf("%.2f×", r), "≤ 2×", yes(r <= 2)})
	same, note := sameMatchesIn(dir, h, rgCmd(scaleToken))
	add(row{"growth: the same, matches equal to ripgrep's (ignored files left out by both)", note, "", "", "equal", yes(same)})
	os.RemoveAll(dir)
}

// sameMatchesIn compares the file:line sets two commands print in dir.
func sameMatchesIn(dir, harveyCmd, peerCmd string) (bool, string) {
	out := func(cmdline string) []byte {
		f := strings.Fields(cmdline)
		c := exec.Command(f[0], f[1:]...)
		if strings.HasPrefix(cmdline, "rg ") {
			c = exec.Command("sh", "-c", cmdline)
		}
		c.Dir = dir
		b, _ := c.Output()
		return b
	}
	return compareMatches(out(harveyCmd), out(peerCmd))
}

// ---- list_files over a directory of 100,000 entries ----

func scaleListRow(work string) {
	dir := filepath.Join(work, "wide")
	os.MkdirAll(filepath.Join(dir, "big"), 0o755)
	for i := 0; i < 100_000; i++ {
		os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("entry%06d.txt", i)), nil, 0o644)
	}
	h := harveyRun(work, "scale-list.txt", "/files big")
	d := hyperfine(dir, h, "ls -la big")
	r := ratio(d[0], d[1])
	out := runOut(dir, h)
	note := "no count"
	if m := strings.LastIndex(out, "more entr"); m >= 0 {
		note = strings.TrimSpace(out[strings.LastIndex(out[:m], "\n")+1:])
		if i := strings.IndexByte(note, '\n'); i >= 0 {
			note = note[:i]
		}
	}
	add(row{"growth: list_files of a directory of 100,000 entries vs ls -la", ms(d[0]) + fmt.Sprintf(", %d bytes returned", len(out)), "ls -la " + ms(d[1]), fmt.Sprintf("%.2f×", r), "≤ 2×, stops at the cap and counts the rest", yes(r <= 2 && note != "no count")})
	add(row{"growth: list_files of 100,000 entries: what it says it left out", note, "", "", "a count", yes(note != "no count")})
	os.RemoveAll(dir)
}

func runOut(dir, cmdline string) string {
	f := strings.Fields(cmdline)
	c := exec.Command(f[0], f[1:]...)
	c.Dir = dir
	b, _ := c.Output()
	return string(b)
}

// ---- git log on 50,000 commits ----

func scaleGitRows(work string) {
	type timing struct{ harvey, git, log, gitLog, empty time.Duration }
	measure := func(commits int) timing {
		dir := filepath.Join(work, fmt.Sprintf("history%d", commits))
		makeHistory(dir, commits)
		defer os.RemoveAll(dir)
		d := hyperfine(dir, harveyRun(work, "scale-git20.txt", "/git log -n 20"), "git log -n 20",
			harveyRun(work, "scale-git.txt", "/git log"), "git log -n 50", harveyRun(work, "empty.txt", ""))
		return timing{d[0], d[1], d[2], d[3], d[4]}
	}
	small, large := measure(100), measure(50_000)
	for _, c := range []struct {
		name       string
		h, g       func(timing) time.Duration
		peer, what string
	}{
		{"git log -n 20", func(t timing) time.Duration { return t.harvey }, func(t timing) time.Duration { return t.git }, "git log -n 20", ""},
		{"git log with no -n (Harvey's default: 50)", func(t timing) time.Duration { return t.log }, func(t timing) time.Duration { return t.gitLog }, "git log -n 50", ""},
	} {
		hs, hl, gs, gl := c.h(small), c.h(large), c.g(small), c.g(large)
		growthH, growthG := ratio(hl, hs), ratio(gl, gs)
		r := growthH / growthG
		add(row{"growth: " + c.name + ", 50,000 commits against 100", fmt.Sprintf("%s at 50,000, %s at 100 (%.2f×; the command itself, less a run with no command: %s)", ms(hl), ms(hs), growthH, ms(hl-large.empty)),
			fmt.Sprintf("%s: %s at 50,000, %s at 100 (%.2f×)", c.peer, ms(gl), ms(gs), growthG), fmt.Sprintf("%.2f×", r), "growth ≤ 2× git's", yes(r <= 2)})
	}
}

// makeHistory makes a repository of n commits, each changing one of 100
// files, with one git fast-import stream.
func makeHistory(dir string, n int) {
	os.MkdirAll(dir, 0o755)
	gitInit(dir)
	var sb bytes.Buffer
	w := bufio.NewWriter(&sb)
	for i := 1; i <= n; i++ {
		content := fmt.Sprintf("version %d\n", i)
		msg := fmt.Sprintf("change %d", i)
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s\n", i, 1700000000+i, len(msg), msg)
		if i > 1 {
			fmt.Fprintf(w, "from :%d\n", i-1)
		}
		fmt.Fprintf(w, "M 644 inline file%d.txt\ndata %d\n%s\n", i%100, len(content), content)
	}
	w.Flush()
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir = dir
	c.Stdin = &sb
	if out, err := c.CombinedOutput(); err != nil {
		fail("git fast-import: %v %s", err, out)
	}
	for _, args := range [][]string{{"symbolic-ref", "HEAD", "refs/heads/main"}, {"reset", "-q", "--hard", "main"}} {
		c := exec.Command("git", args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			fail("git %v: %v %s", args, err, out)
		}
	}
}

// ---- a session of 1,000 turns ----

var straceWrite = regexp.MustCompile(`^(?:\d+\s+)?(?:write|pwrite64|writev|pwritev2?)\(\d+<([^>]*)>.*\) += (\d+)$`)

// bytesWrittenUnder runs c under strace and returns the bytes it wrote to
// files under dir (not to sockets or the terminal: the requests sent to the
// model are the chat protocol's, the same for every client).
func bytesWrittenUnder(dir string, c *exec.Cmd) int64 {
	log := filepath.Join(os.TempDir(), fmt.Sprintf("harveybench-strace-%d", time.Now().UnixNano()))
	defer os.Remove(log)
	c.Args = append([]string{"strace", "-f", "-qq", "-y", "-e", "trace=write,pwrite64,writev,pwritev,pwritev2", "-e", "signal=none", "-o", log, "--", c.Path}, c.Args[1:]...)
	c.Path, _ = exec.LookPath("strace")
	if err := c.Run(); err != nil {
		fail("strace %v: %v", c.Args, err)
	}
	b, _ := os.ReadFile(log)
	var n int64
	for _, l := range strings.Split(string(b), "\n") {
		if m := straceWrite.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[1], dir+"/") {
			k, _ := strconv.ParseInt(m[2], 10, 64)
			n += k
		}
	}
	return n
}

func scaleSessionRows(work, fake string) {
	ws := filepath.Join(work, "turns")
	os.MkdirAll(ws, 0o755)
	written := func(turns int) (int64, time.Duration) {
		// A window large enough that nothing is summarised: the journal
		// holds all 1,000 turns (about 230 KB) when --continue reads it.
		os.RemoveAll(filepath.Join(ws, "agents"))
		os.MkdirAll(filepath.Join(ws, "agents"), 0o755)
		os.WriteFile(filepath.Join(ws, "agents", "harvey.yaml"), []byte("num_ctx: 131072\n"), 0o644)
		var lines []string
		for i := 0; i < turns; i++ {
			lines = append(lines, fmt.Sprintf("question %d: %s", i, strings.Repeat("about the code in main.go ", 8)))
		}
		s := script(work, "turns.txt", lines...)
		c := exec.Command(*harvey, "--run", s, "--model", "llama3.2", "--ollama", fake)
		c.Dir = ws
		start := time.Now()
		n := bytesWrittenUnder(ws, c)
		return n, time.Since(start)
	}
	w10, _ := written(10)
	w1000, t1000 := written(1000)
	journal := filepath.Join(ws, "agents", "sessions", "last.jsonl")
	fi, err := os.Stat(journal)
	if err != nil {
		fail("session journal: %v", err)
	}
	perTurn10, perTurn1000 := float64(w10)/10, float64(w1000)/1000
	r := perTurn1000 / perTurn10
	add(row{"growth: bytes written to files per turn (journal, history, audit, recording), 1,000-turn session against a 10-turn one", fmt.Sprintf("%.0f B/turn (%.2f MB in all; the journal is %.1f KB; %s for the session, under strace)", perTurn1000, float64(w1000)/1e6, float64(fi.Size())/1e3, ms(t1000)), fmt.Sprintf("10 turns: %.0f B/turn", perTurn10), fmt.Sprintf("%.2f×", r), "≤ 2× (O(new data))", yes(r <= 2)})
	empty := script(work, "empty.txt", "")
	h := fmt.Sprintf("%s -c --run %s --model llama3.2 --ollama %s", *harvey, empty, fake)
	d := hyperfine(ws, h, "jq -c . "+journal, fmt.Sprintf("%s --run %s --model llama3.2 --ollama %s", *harvey, empty, fake))
	restore := max(d[0]-d[2], 0) // noise can make the difference negative
	r = ratio(restore, d[1])
	add(row{fmt.Sprintf("growth: --continue restoring a 1,000-turn journal (%.0f KB) vs jq reading it", float64(fi.Size())/1e3), fmt.Sprintf("%s (the restore itself %s)", ms(d[0]), ms(restore)), "jq " + ms(d[1]) + ", harvey with nothing to restore " + ms(d[2]), fmt.Sprintf("%.2f×", r), "restore ≤ 2× jq", yes(r <= 2)})
	os.RemoveAll(ws)
}

// ---- a knowledge base of 100,000 observations ----

func scaleKBRow(work string) {
	ws := filepath.Join(work, "kb")
	os.MkdirAll(ws, 0o755)
	runOut(ws, harveyRun(work, "kb-init.txt", "/kb status"))
	db := filepath.Join(ws, "agents", "knowledge.db")
	fill := `INSERT INTO projects(name, created_at) VALUES ('bench', '2026-01-01T00:00:00Z');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 100000)
INSERT INTO observations(project_id, kind, body, created_at)
SELECT 1, 'note', 'observation ' || i || CASE WHEN i % 1000 = 0 THEN ' about the flaky cache' ELSE ' about nothing much' END, '2026-01-01T00:00:00Z' FROM n;`
	c := exec.Command("sqlite3", db)
	c.Stdin = strings.NewReader(fill)
	if out, err := c.CombinedOutput(); err != nil {
		fail("sqlite3 fill: %v %s", err, out)
	}
	h := harveyRun(work, "kb-search.txt", "/kb search flaky")
	q := `SELECT o.id, o.body FROM observations_fts f JOIN observations o ON o.id = f.rowid WHERE observations_fts MATCH '"flaky"*' ORDER BY o.id DESC LIMIT 20`
	base := harveyRun(work, "empty.txt", "")
	d := hyperfine(ws, h, fmt.Sprintf("sqlite3 %s %s", db, shellQuote(q)), base)
	r := ratio(d[0]-d[2], d[1])
	add(row{"growth: /kb search over 100,000 observations vs sqlite3 running the same query", fmt.Sprintf("%s (the search itself %s)", ms(d[0]), ms(d[0]-d[2])), "sqlite3 " + ms(d[1]) + ", harvey with no command " + ms(d[2]), fmt.Sprintf("%.2f×", r), "search ≤ 2× sqlite3", yes(r <= 2)})
	os.RemoveAll(ws)
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
