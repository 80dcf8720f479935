// Package skills is Agent Skills as Claude Code, Codex, Gemini CLI, goose
// and Crush load them: a folder with a SKILL.md whose YAML front matter
// has a name and a description, and whose body (and files beside it) are
// instructions for one kind of task. The skills people publish load
// unchanged: other front-matter keys (license, allowed-tools, metadata)
// are ignored, a missing name is the folder's, a missing description the
// body's first paragraph.
//
// Discover reads the roots in order (yours first: a repository's skill
// never shadows one of yours; a shadowed skill is said as a problem); a
// folder without a SKILL.md is a folder of skills, read one level down (a
// repository of skills cloned whole).
// Every read goes through an os.Root of its root, so a link in a
// repository's skills folder never reaches outside it; a skill folder of
// yours may be a link (an installer's). Set.Catalog is what the model
// sees before it asks (a name and a clipped description each, within a
// budget); Set.Load is a skill's body with its base directory and its
// files; Set.Read one file of it (the denylist applies, secrets are
// redacted). Set.Dirs are your skills' folders, which commands may read
// (the scripts a skill names run through run_command, in the sandbox);
// Set.WorkspaceSum is what the user confirms of a repository's skills,
// and DropWorkspace leaves them out until then. It imports only
// internal/secrets and YAML.
package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/harvey-agent/harvey/internal/secrets"
	"gopkg.in/yaml.v3"
)

// File is the file that makes a folder a skill.
const File = "SKILL.md"

// Limits on what is read: a SKILL.md, a file of a skill, the files listed.
const (
	maxSkillBytes = 256 << 10
	maxFileBytes  = 1 << 20
	maxListed     = 200
	maxDepth      = 4
)

// Root is a folder of skill folders.
type Root struct {
	Dir   string // absolute
	Label string // how it is named to the user and the model: "~/.claude/skills", ".claude/skills"
	// Workspace: a repository's (confirmed before use; nothing read
	// through a link that leaves Top, the workspace). In names its folder
	// relative to the workspace, as the model's paths are.
	Workspace bool
	Top, In   string
	// Runnable: commands can read the folder (agents/ is hidden from
	// them, so a skill there is read through the skill tool only).
	Runnable bool
}

// Skill is one skill found.
type Skill struct {
	Name, Description string
	Root              Root
	Folder            string // the skill's folder name under its root
}

// Label names the skill's folder: "~/.claude/skills/pdf".
func (s Skill) Label() string { return s.Root.Label + "/" + s.Folder }

// Base is the skill's folder as a command names it: absolute for your
// own, workspace-relative for a repository's.
func (s Skill) Base() string {
	if s.Root.Workspace {
		return path.Join(s.Root.In, s.Folder)
	}
	return filepath.Join(s.Root.Dir, s.Folder)
}

// Set is a session's skills.
type Set struct {
	list []Skill
}

// Discover reads every root's skill folders. Problems are one line each
// (a SKILL.md that cannot be read, a shadowed name); the skill is skipped.
func Discover(roots []Root) (*Set, []string) {
	s := &Set{}
	var problems []string
	for _, r := range roots {
		found, more := discoverRoot(r)
		problems = append(problems, more...)
		for _, k := range found {
			if prev, ok := s.Get(k.Name); ok {
				problems = append(problems, fmt.Sprintf("%s: the skill %q is already %s's; this one is not loaded", k.Label(), k.Name, prev.Label()))
				continue
			}
			s.list = append(s.list, k)
		}
	}
	return s, problems
}

// discoverRoot reads one root's folders, in name order.
func discoverRoot(r Root) ([]Skill, []string) {
	root, err := openRoot(r)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("%s: %v", r.Label, plain(err))}
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", r.Label, plain(err))}
	}
	var out []Skill
	var problems []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		k, found, err := readSkill(root, r, e.Name())
		if !found && err == nil {
			// A folder of skills (a repository of them cloned whole,
			// a plugin's): its folders, one level down.
			sub, _ := fs.ReadDir(root.FS(), e.Name())
			for _, d := range sub {
				if strings.HasPrefix(d.Name(), ".") {
					continue
				}
				if k, found, err := readSkill(root, r, e.Name()+"/"+d.Name()); found {
					out = append(out, k)
				} else if err != nil {
					problems = append(problems, err.Error())
				}
			}
			continue
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, k)
	}
	return out, problems
}

// readSkill reads the skill in folder (found false: it has no SKILL.md).
func readSkill(root *os.Root, r Root, folder string) (Skill, bool, error) {
	data, err := readCapped(root, path.Join(folder, File), maxSkillBytes)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotAFile) || errors.Is(err, syscall.ENOTDIR) {
		return Skill{}, false, nil
	}
	if err != nil {
		return Skill{}, true, fmt.Errorf("%s/%s/%s: %v", r.Label, folder, File, plain(err))
	}
	k, err := parse(data, path.Base(folder))
	if err != nil {
		return Skill{}, true, fmt.Errorf("%s/%s/%s: %v", r.Label, folder, File, err)
	}
	k.Root, k.Folder = r, folder
	return k, true, nil
}

// openRoot opens a root: a repository's through the workspace's own root
// (Root.In below it, no link leaving it), yours as the path says.
func openRoot(r Root) (*os.Root, error) {
	if !r.Workspace {
		return os.OpenRoot(r.Dir)
	}
	top, err := os.OpenRoot(r.Top)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.OpenRoot(r.In)
}

var errNotAFile = errors.New("not a regular file")

// readCapped reads a regular file of root, refusing one past max.
func readCapped(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotAFile
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%d bytes, past the %d KB Harvey reads", fi.Size(), max>>10)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// frontMatter is the part of a SKILL.md's front matter Harvey reads.
type frontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// parse reads a SKILL.md: its front matter and, for a missing
// description, the body's first paragraph.
func parse(data []byte, folder string) (Skill, error) {
	fm, body, err := split(data)
	if err != nil {
		return Skill{}, err
	}
	var m frontMatter
	if len(fm) > 0 {
		if err := yaml.Unmarshal(fm, &m); err != nil {
			return Skill{}, fmt.Errorf("its front matter is not YAML: %v", firstLine(err.Error()))
		}
	}
	k := Skill{Name: strings.TrimSpace(m.Name), Description: oneLine(m.Description)}
	if k.Name == "" {
		k.Name = folder
	}
	if !validName(k.Name) {
		return Skill{}, fmt.Errorf("the name %q is not a skill's name (letters, digits, - _ . :, at most 64)", k.Name)
	}
	if k.Description == "" {
		k.Description = firstParagraph(body)
	}
	if k.Description == "" {
		return Skill{}, errors.New("it has no description (front matter: description: what it is for and when to use it)")
	}
	return k, nil
}

// split cuts a SKILL.md into its front matter (between --- lines at the
// start) and its body.
func split(data []byte) (fm, body []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil, []byte(text), nil
	}
	lines := strings.SplitAfter(text[4:], "\n")
	n := 0
	for i, l := range lines {
		if strings.TrimRight(l, " \t\n") == "---" {
			return []byte(text[4 : 4+n]), []byte(strings.Join(lines[i+1:], "")), nil
		}
		n += len(l)
	}
	return nil, nil, errors.New("its front matter has no closing --- line")
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.:", r))) {
			return false
		}
	}
	return true
}

// firstParagraph is the body's first paragraph that is not a heading.
func firstParagraph(body []byte) string {
	for _, p := range strings.Split(string(body), "\n\n") {
		p = strings.TrimSpace(p)
		if p != "" && !strings.HasPrefix(p, "#") {
			return oneLine(p)
		}
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// plain is an error without the path os.Root's errors repeat.
func plain(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Len is how many skills there are.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Get is the skill named n.
func (s *Set) Get(n string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	for _, k := range s.list {
		if k.Name == n {
			return k, true
		}
	}
	return Skill{}, false
}

// Names are the skills' names, in order.
func (s *Set) Names() []string {
	var out []string
	if s != nil {
		for _, k := range s.list {
			out = append(out, k.Name)
		}
	}
	return out
}

// Catalog is what the model sees of the skills before it loads one: a
// line each, the description clipped to clip runes, within budget bytes;
// the skills left out are counted (skill with no name lists them all).
func (s *Set) Catalog(budget, clip int) string {
	var b strings.Builder
	left := 0
	for i, k := range s.list {
		line := "- " + k.Name + ": " + clipRunes(k.Description, clip) + "\n"
		if b.Len()+len(line) > budget && i > 0 {
			left = len(s.list) - i
			break
		}
		b.WriteString(line)
	}
	if left > 0 {
		fmt.Fprintf(&b, "(%d more: skill with no name lists them all)\n", left)
	}
	return secrets.Redact(b.String())
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// List is every skill with its whole description and its folder.
func (s *Set) List() string {
	if s.Len() == 0 {
		return "no skills"
	}
	var b strings.Builder
	for _, k := range s.list {
		fmt.Fprintf(&b, "- %s (%s): %s\n", k.Name, k.Label(), k.Description)
	}
	return secrets.Redact(b.String())
}

// Load is a skill's instructions as the model reads them: its name and
// base directory, the SKILL.md body, and the files beside it.
func (s *Set) Load(name string) (string, error) {
	k, ok := s.Get(name)
	if !ok {
		return "", s.unknown(name)
	}
	root, err := s.open(k)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := readCapped(root, File, maxSkillBytes)
	if err != nil {
		return "", fmt.Errorf("%s/%s: %v", k.Label(), File, plain(err))
	}
	_, body, err := split(data)
	if err != nil {
		return "", fmt.Errorf("%s/%s: %v", k.Label(), File, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s. Base directory for this skill: %s\n\n%s\n", k.Name, k.Base(), strings.TrimSpace(string(body)))
	files, more := listFiles(root)
	if len(files) > 0 {
		fmt.Fprintf(&b, "\nFiles of the skill (skill {\"name\": %q, \"file\": PATH} reads one", k.Name)
		if k.Root.Runnable {
			fmt.Fprintf(&b, "; run a script with run_command by its path under %s", k.Base())
		} else {
			b.WriteString("; its scripts cannot be run: agents/ is hidden from commands")
		}
		b.WriteString("):\n")
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
		if more > 0 {
			fmt.Fprintf(&b, "(%d more files not listed)\n", more)
		}
	}
	return secrets.Redact(b.String()), nil
}

// Read is one file of a skill (a path relative to its folder): not past
// its folder, not a denied file, redacted.
func (s *Set) Read(name, file string) (string, error) {
	k, ok := s.Get(name)
	if !ok {
		return "", s.unknown(name)
	}
	rel := path.Clean(strings.TrimPrefix(filepath.ToSlash(file), "./"))
	if rel == "." || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%q is not a file of the skill %s: give a path relative to its folder", file, name)
	}
	if secrets.FileDenied(rel) {
		return "", fmt.Errorf("%s/%s is a sensitive file (the denylist); it is not read", k.Label(), rel)
	}
	root, err := s.open(k)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := readCapped(root, rel, maxFileBytes)
	if err != nil {
		return "", fmt.Errorf("%s/%s: %v", k.Label(), rel, plain(err))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%s/%s is a binary file", k.Label(), rel)
	}
	return secrets.Redact(string(data)), nil
}

// open is a skill's folder as a root of its own: nothing read through it
// leaves the folder.
func (s *Set) open(k Skill) (*os.Root, error) {
	root, err := openRoot(k.Root)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", k.Root.Label, plain(err))
	}
	defer root.Close()
	if !k.Root.Workspace {
		// Your own skill folder may be a link to where an installer
		// keeps it.
		real, err := filepath.EvalSymlinks(filepath.Join(k.Root.Dir, k.Folder))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k.Label(), plain(err))
		}
		return os.OpenRoot(real)
	}
	sub, err := root.OpenRoot(k.Folder)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", k.Label(), plain(err))
	}
	return sub, nil
}

// listFiles lists a skill folder's files (SKILL.md left out), depth and
// count bounded, hidden names and denied files left out.
func listFiles(root *os.Root) ([]string, int) {
	var out []string
	more := 0
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "__pycache__" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if strings.Count(p, "/") >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		if p == File || secrets.FileDenied(p) {
			return nil
		}
		if len(out) >= maxListed {
			more++
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out, more
}

// unknown is the error for a name that is no skill, with the names there are.
func (s *Set) unknown(name string) error {
	if s.Len() == 0 {
		return fmt.Errorf("no skill named %q: there are no skills", name)
	}
	return fmt.Errorf("no skill named %q; the skills are: %s", name, strings.Join(s.Names(), ", "))
}

// Dirs are the folders of the skills commands may read (yours, and a
// repository's outside agents/), resolved: what the sandbox shows
// read-only.
func (s *Set) Dirs() []string {
	var out []string
	if s == nil {
		return nil
	}
	for _, k := range s.list {
		if k.Root.Workspace {
			continue // in the workspace already
		}
		if real, err := filepath.EvalSymlinks(filepath.Join(k.Root.Dir, k.Folder)); err == nil {
			out = append(out, real)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Workspace are the repository's skills' names.
func (s *Set) Workspace() []Skill {
	var out []Skill
	if s != nil {
		for _, k := range s.list {
			if k.Root.Workspace {
				out = append(out, k)
			}
		}
	}
	return out
}

// WorkspaceNames are the repository's skills' names.
func (s *Set) WorkspaceNames() []string {
	var out []string
	for _, k := range s.Workspace() {
		out = append(out, k.Name)
	}
	return out
}

// DropWorkspace leaves the repository's skills out.
func (s *Set) DropWorkspace() {
	if s != nil {
		s.list = slices.DeleteFunc(s.list, func(k Skill) bool { return k.Root.Workspace })
	}
}

// WorkspaceSum is the SHA-256 of the repository's skills as the user
// confirms them: each skill's name, description, and every file of its
// folder by path and content ("" when there are none).
func (s *Set) WorkspaceSum() string {
	ws := s.Workspace()
	if len(ws) == 0 {
		return ""
	}
	h := sha256.New()
	for _, k := range ws {
		fmt.Fprintf(h, "skill %d:%s %d:%s %d:%s\n", len(k.Label()), k.Label(), len(k.Name), k.Name, len(k.Description), k.Description)
		root, err := s.open(k)
		if err != nil {
			fmt.Fprintf(h, "unreadable\n")
			continue
		}
		files, more := listFiles(root)
		for _, f := range append([]string{File}, files...) {
			data, err := readCapped(root, f, maxFileBytes)
			if err != nil {
				data = []byte("unreadable: " + plain(err).Error())
			}
			fmt.Fprintf(h, "%d:%s\n%d:", len(f), f, len(data))
			h.Write(data)
		}
		fmt.Fprintf(h, "more %d\n", more)
		root.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Roots are where skills are found, yours first: your Harvey config
// directory's skills/ and ~/.claude/skills, then the workspace's
// .claude/skills and agents/skills (a repository's; "" workspace: none).
func Roots(userDir, home, workspace, agentsDir string) []Root {
	var roots []Root
	if userDir != "" {
		roots = append(roots, Root{Dir: filepath.Join(userDir, "skills"), Label: "~/.config/harvey/skills", Runnable: true})
	}
	if home != "" {
		roots = append(roots, Root{Dir: filepath.Join(home, ".claude", "skills"), Label: "~/.claude/skills", Runnable: true})
	}
	if workspace != "" {
		roots = append(roots,
			Root{Dir: filepath.Join(workspace, ".claude", "skills"), Label: ".claude/skills", Workspace: true, Top: workspace, In: ".claude/skills", Runnable: true},
			Root{Dir: filepath.Join(workspace, agentsDir, "skills"), Label: agentsDir + "/skills", Workspace: true, Top: workspace, In: agentsDir + "/skills"})
	}
	return roots
}

// Schema is the skill tool's parameters.
func Schema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string", "description": "The skill's name (none: list every skill)"},
		"file": map[string]any{"type": "string", "description": "A file of the skill to read, relative to its folder"}}}
}

// Description is the skill tool's description: what it does and the
// catalog (about 300 tokens at most).
func (s *Set) Description() string {
	return "Load a skill: instructions for a kind of task. Before a task one of these is for, call skill {name}; it returns the instructions and the skill's files.\nSkills:\n" +
		strings.TrimRight(s.Catalog(1200, 100), "\n")
}
