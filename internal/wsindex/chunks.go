package wsindex

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// Chunk is a piece of a file the index ranks: a Go declaration with its
// doc comment, or a block of lines.
type Chunk struct {
	StartLine, EndLine int // 1-based, inclusive
	Text               string
}

// Chunk sizes, in lines: blocks are merged up to blockLines and cut at
// maxLines (a long function is indexed in pieces).
const (
	blockLines = 40
	maxLines   = 120
	smallLines = 15
)

// Chunks splits a file: Go at its declarations (go/parser: each function,
// method, type, const and var block with its doc comment; the package
// clause and imports as one), other files at blank lines, preferring those
// before an unindented line (blockChunks). A Go file that
// does not parse is split as text.
func Chunks(path string, content []byte) []Chunk {
	lines := strings.SplitAfter(string(content), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if strings.HasSuffix(path, ".go") {
		if cs, ok := goChunks(content, lines); ok {
			return cs
		}
	}
	return blockChunks(lines, 1, len(lines))
}

// goChunks cuts a Go file at its top-level declarations.
func goChunks(content []byte, lines []string) ([]Chunk, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", content, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	var out []Chunk
	next := 1 // the first line not yet in a chunk
	emit := func(from, to int) {
		if from < next {
			from = next
		}
		if to < from {
			return
		}
		out = append(out, cut(lines, from, to)...)
		next = to + 1
	}
	for _, d := range f.Decls {
		start := fset.PositionFor(d.Pos(), false).Line
		switch dd := d.(type) {
		case *ast.FuncDecl:
			if dd.Doc != nil {
				start = fset.PositionFor(dd.Doc.Pos(), false).Line
			}
		case *ast.GenDecl:
			if dd.Doc != nil {
				start = fset.PositionFor(dd.Doc.Pos(), false).Line
			}
		}
		end := fset.PositionFor(d.End(), false).Line
		if start > next {
			// What lies between declarations (the package clause, a
			// file comment, imports when they come first) stays with
			// what follows only when short; otherwise its own chunk.
			if start-next > 3 || next == 1 {
				emit(next, start-1)
			}
		}
		emit(min(start, next), end)
	}
	if next <= len(lines) {
		emit(next, len(lines))
	}
	return mergeSmall(out, lines), true
}

// mergeSmall joins a small declaration without a doc comment (a one-line
// method, a short const, the imports) to the small piece before it while
// the result stays under smallLines: a query then weighs fewer, fuller
// pieces, and a documented declaration still starts a piece of its own.
func mergeSmall(cs []Chunk, lines []string) []Chunk {
	var out []Chunk
	for _, c := range cs {
		if n := len(out); n > 0 && !strings.HasPrefix(strings.TrimSpace(c.Text), "//") {
			prev := out[n-1]
			if prev.EndLine-prev.StartLine+1 < smallLines && c.EndLine-prev.StartLine+1 <= smallLines {
				out[n-1] = Chunk{StartLine: prev.StartLine, EndLine: c.EndLine, Text: strings.Join(lines[prev.StartLine-1:c.EndLine], "")}
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// blockChunks cuts lines from..to at blank lines and by indentation: at a
// blank line before an unindented line (the next top-level definition in
// most languages, or the next paragraph of prose) once a block holds half
// of blockLines, and at a blank line inside an indented body only once it
// holds blockLines, so a function of another language stays whole when it
// can.
func blockChunks(lines []string, from, to int) []Chunk {
	var out []Chunk
	start := from
	for i := from; i <= to; i++ {
		size := i - start + 1
		cutHere := i == to
		if !cutHere && strings.TrimSpace(lines[i-1]) == "" {
			top := true // the next line with text starts at the margin
			for j := i + 1; j <= to; j++ {
				if l := lines[j-1]; strings.TrimSpace(l) != "" {
					top = l[0] != ' ' && l[0] != '\t'
					break
				}
			}
			cutHere = top && size >= blockLines/2 || size >= blockLines
		}
		if cutHere {
			out = append(out, cut(lines, start, i)...)
			start = i + 1
		}
	}
	return out
}

// cut makes chunks of lines from..to, at most maxLines each, skipping
// chunks that hold nothing but blank space.
func cut(lines []string, from, to int) []Chunk {
	from, to = max(from, 1), min(to, len(lines)) // never past the file, whatever a position said
	blank := func(i int) bool { return strings.TrimSpace(lines[i-1]) == "" }
	for from <= to && blank(from) {
		from++
	}
	for to >= from && blank(to) {
		to--
	}
	var out []Chunk
	for s := from; s <= to; s += maxLines {
		e := min(s+maxLines-1, to)
		text := strings.Join(lines[s-1:e], "")
		if len(bytes.TrimSpace([]byte(text))) == 0 {
			continue
		}
		out = append(out, Chunk{StartLine: s, EndLine: e, Text: text})
	}
	return out
}
