package wsindex

import (
	"path"
	"slices"
	"strings"
)

// Spread turns a ranking of chunks (best first) into the k to show: the
// files are ranked as wholes — a file scores its best chunk, a quarter of
// each of its others (a file several chunks match gains on one lucky
// chunk, but a much stronger chunk still wins), each on the ranking's own
// scale (relative to its best), plus a tenth for each of the question's
// words in its path — and each file gives its best chunk before any file
// gives a second, at most perFile each. A file the question names (its
// base name, as in "config.go") is not capped: the question is about it.
func Spread(hits []Hit, q string, k, perFile int) []Hit {
	if len(hits) == 0 || k <= 0 {
		return nil
	}
	words := queryWords(q)
	top := hits[0].Score
	rel := func(h Hit) float64 {
		if top <= 0 {
			return 0
		}
		return h.Score / top
	}
	score := map[string]float64{}
	byFile := map[string][]Hit{}
	var files []string
	for _, h := range hits {
		if _, ok := byFile[h.Path]; !ok {
			files = append(files, h.Path)
			score[h.Path] += rel(h) + pathScore(h.Path, words)
		} else {
			score[h.Path] += rel(h) / 4
		}
		byFile[h.Path] = append(byFile[h.Path], h)
	}
	slices.SortStableFunc(files, func(a, b string) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return 0
	})
	named := strings.ToLower(q)
	var out []Hit
	for round := 0; len(out) < k; round++ {
		added := false
		for _, f := range files {
			if len(out) == k {
				break
			}
			capped := round >= perFile && !strings.Contains(named, strings.ToLower(path.Base(f)))
			if round < len(byFile[f]) && !capped {
				out = append(out, byFile[f][round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}

// queryWords are the question's words as the index splits them (stop
// words and words under three letters left out).
func queryWords(q string) []string {
	var out []string
	for _, w := range strings.Fields(strings.ToLower(Words(q))) {
		if len(w) >= 3 && !slices.Contains(stopWords, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// pathScore is what the question's words in a file's path add to the
// file: a tenth of the best chunk's score for each.
func pathScore(p string, words []string) float64 {
	pw := strings.Fields(strings.ToLower(Words(strings.NewReplacer("/", " ", ".", " ", "-", " ").Replace(p))))
	s := 0.0
	for _, w := range words {
		if slices.Contains(pw, w) {
			s += 0.1
		}
	}
	return s
}

// QueryDepth is how many chunks a query ranks for each one it shows:
// enough for Spread to rank files as wholes.
const QueryDepth = 8
