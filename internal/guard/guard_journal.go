package guard

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/fsinfo"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// The check after a command is durable: before a command runs, what the
// check needs (the state of the workspace's git and of agents/, as
// Command records it) is written to a journal in Harvey's data
// directory, which no command can write; after the check it is removed.
// If Harvey dies between the two (killed, the terminal closed, the OOM
// killer), the next Harvey in that workspace, and `harvey sandbox`, runs
// the check from the journal before anything else runs, and says what it
// undid. A journal whose Harvey is still running (another session in the
// same workspace) is left to it.

// journalMaxIndex bounds the copy of git's index a journal keeps; a larger
// index is checked by its stamp and what it hid, and a gitlink added to it
// is reported rather than undone.
const journalMaxIndex = 8 << 20

// journal is one command's check, as written to disk.
type journal struct {
	Pid      int    // the Harvey that ran the command
	PidStart string // its start time (a reused pid is not it)
	Root     string
	Command  string
	Started  time.Time
	Git      *jGit
	Agents   *jAgents
}

type jFile struct {
	Data    []byte
	Blob    string `json:",omitempty"` // the blob that holds Data instead (journal_blobs.go)
	Mode    fs.FileMode
	Missing bool // not there
}

type jHooks struct {
	Link    string
	Files   map[string]*jFile
	Missing bool
}

type jGit struct {
	Root, Common string
	Fresh        bool
	DotGit       *jFile
	Dirs         []*jDir
	Paths        map[string]*jHooks
}

type jDir struct {
	Dir, Shown                               string
	Common, Own, IndexLarge                  bool
	HashLen                                  int
	IdentDev, IdentIno                       uint64
	Files                                    map[string]*jFile
	Hooks                                    map[string]*jHooks
	Modules, Worktrees, Locks, Links, Hidden []string
	Index                                    []byte
	IndexBlob                                string `json:",omitempty"` // the blob that holds Index instead
	IndexDev, IndexIno                       uint64
	IndexSize, IndexMtime, IndexCtime        int64
	Replaces                                 map[string]string
	ReplacesLoose                            map[string]bool
}

type jAgents struct {
	Dir                string
	IdentDev, IdentIno uint64
	Files              map[string]*jFile
	Stamps             map[string][5]int64
}

// journalDir is where journals are kept ("" when there is no data directory).
func journalDir() string {
	if d := datadir.Path(); d != "" {
		return filepath.Join(d, "pending")
	}
	return ""
}

var journalSeq atomic.Int64

// writeJournal writes the journal of a command about to run under guard,
// and returns its path ("" when none could be written: the check still
// runs after the command, only not after a crash) and the blobs it names.
func writeJournal(root, command string, c *Guard) (string, []string) {
	dir := journalDir()
	if c == nil || dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return "", nil
	}
	j := journal{Pid: os.Getpid(), PidStart: ownStart(), Root: root, Command: command, Started: time.Now(),
		Git: c.git.toJournal(), Agents: c.agents.toJournal()}
	names := j.externalize()
	b, err := json.Marshal(&j)
	if err != nil {
		releaseBlobs(names)
		return "", nil
	}
	name := fmt.Sprintf("%s-%d-%d.journal", datadir.Key(root), os.Getpid(), journalSeq.Add(1))
	p := filepath.Join(dir, name)
	tmp := p + ".tmp"
	if os.WriteFile(tmp, b, 0o600) != nil || os.Rename(tmp, p) != nil {
		os.Remove(tmp)
		releaseBlobs(names)
		return "", nil
	}
	return p, names
}

// removeJournal removes a journal once its check is done, and lets go of
// the blobs it named.
func removeJournal(p string, names []string) {
	if p != "" {
		os.Remove(p)
	}
	releaseBlobs(names)
}

// Recover runs the check of every journal of the workspace at root
// whose Harvey is gone, and returns what it undid, a line each (with a
// first line that says why).
func Recover(root string) []string {
	return recoverJournals(datadir.Key(root)+"-*.journal", func(j *journal) bool { return j.Root == root },
		"Harvey stopped while a command ran", false)
}

// RecoverOf runs the check of every journal the Harvey with process id pid
// left (it has ended: its guardian, internal/guardian, asks once it has
// ended everything that Harvey started), whatever its workspace, and
// returns what it undid as Recover does; a check that undid nothing says
// nothing.
func RecoverOf(pid int) []string {
	return recoverJournals(fmt.Sprintf("*-%d-*.journal", pid), func(j *journal) bool { return j.Pid == pid },
		"the session ended while this ran", true)
}

// recoverJournals runs the check of each journal matching glob that keep
// accepts and whose Harvey is gone; why says in a few words why the check
// runs now; quiet: a check that undid nothing is not said.
func recoverJournals(glob string, keep func(*journal) bool, why string, quiet bool) []string {
	dir := journalDir()
	if dir == "" {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, glob))
	var said []string
	for _, p := range matches {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var j journal
		if json.Unmarshal(b, &j) != nil {
			os.Remove(p)
			continue
		}
		if !keep(&j) {
			continue
		}
		if j.Pid != os.Getpid() && sandbox.ProcStart(j.Pid) != "" && sandbox.ProcStart(j.Pid) == j.PidStart {
			continue // its Harvey still runs: the check is its own
		}
		if !j.resolve(blobDirOf(j.Pid, j.PidStart)) {
			// A blob gone (a data directory cleaned by hand): what it held
			// cannot be put back, so nothing of this check is run half.
			said = append(said, fmt.Sprintf("[harvey: the check of a command that ran when Harvey stopped (%s) could not be run: what it needs is gone from Harvey's data directory]", termtext.Sanitize(termtext.Clip(j.Command, 80))))
			os.Remove(p)
			continue
		}
		c := &Guard{git: j.Git.fromJournal(), agents: j.Agents.fromJournal()}
		undone, _ := c.Check()
		os.Remove(p)
		if len(undone) == 0 && quiet {
			continue
		}
		said = append(said, fmt.Sprintf("[harvey: %s (%s, %s); its check ran now: %s]",
			why, termtext.Sanitize(termtext.Clip(j.Command, 80)), j.Started.Format("2006-01-02 15:04"), termtext.Plural(len(undone), "change")+" undone"))
		said = append(said, undone...)
	}
	sweepBlobs(dir)
	return said
}

func (f *savedFile) toJournal() *jFile {
	if f == nil {
		return &jFile{Missing: true}
	}
	return &jFile{Data: f.data, Mode: f.mode}
}

func (f *jFile) fromJournal() *savedFile {
	if f == nil || f.Missing {
		return nil
	}
	return &savedFile{data: f.Data, mode: f.Mode}
}

func filesToJournal(m map[string]*savedFile) map[string]*jFile {
	out := make(map[string]*jFile, len(m))
	for k, v := range m {
		out[k] = v.toJournal()
	}
	return out
}

func filesFromJournal(m map[string]*jFile) map[string]*savedFile {
	out := make(map[string]*savedFile, len(m))
	for k, v := range m {
		out[k] = v.fromJournal()
	}
	return out
}

func (h *savedHooks) toJournal() *jHooks {
	if h == nil {
		return &jHooks{Missing: true}
	}
	return &jHooks{Link: h.link, Files: filesToJournal(h.files)}
}

func (h *jHooks) fromJournal() *savedHooks {
	if h == nil || h.Missing {
		return nil
	}
	out := &savedHooks{link: h.Link}
	if h.Files != nil {
		out.files = filesFromJournal(h.Files)
	}
	return out
}

func hooksToJournal(m map[string]*savedHooks) map[string]*jHooks {
	if m == nil {
		return nil
	}
	out := make(map[string]*jHooks, len(m))
	for k, v := range m {
		out[k] = v.toJournal()
	}
	return out
}

func hooksFromJournal(m map[string]*jHooks) map[string]*savedHooks {
	if m == nil {
		return nil
	}
	out := make(map[string]*savedHooks, len(m))
	for k, v := range m {
		out[k] = v.fromJournal()
	}
	return out
}

func (g *gitGuard) toJournal() *jGit {
	if g == nil {
		return nil
	}
	j := &jGit{Root: g.root, Common: g.common, Fresh: g.fresh, DotGit: g.dotGit.toJournal(), Paths: hooksToJournal(g.paths)}
	if g.dotGit == nil {
		j.DotGit = nil
	}
	for _, d := range g.dirs {
		jd := &jDir{Dir: d.dir, Shown: d.shown, Common: d.common, Own: d.own, HashLen: d.hashLen, IdentDev: d.ident.dev, IdentIno: d.ident.ino,
			Files: filesToJournal(d.files), Hooks: hooksToJournal(d.hooks), Modules: d.modules, Worktrees: d.worktrees,
			Locks: d.locks, Links: d.links, Hidden: d.hidden, IndexLarge: d.indexLarge,
			Replaces: d.replaces, ReplacesLoose: d.replacesLoose,
			IndexDev: d.indexAt.Dev, IndexIno: d.indexAt.Ino, IndexSize: d.indexAt.Size, IndexMtime: d.indexAt.MtimeNs, IndexCtime: d.indexAt.CtimeNs}
		if len(d.index) <= journalMaxIndex {
			jd.Index = d.index
		} else {
			jd.IndexLarge = true
		}
		j.Dirs = append(j.Dirs, jd)
	}
	return j
}

func (j *jGit) fromJournal() *gitGuard {
	if j == nil {
		return nil
	}
	g := &gitGuard{root: j.Root, common: j.Common, fresh: j.Fresh, dotGit: j.DotGit.fromJournal(), paths: hooksFromJournal(j.Paths)}
	for _, jd := range j.Dirs {
		g.dirs = append(g.dirs, &gitDirGuard{dir: jd.Dir, shown: jd.Shown, common: jd.Common, own: jd.Own, hashLen: jd.HashLen, ident: fileIdent{jd.IdentDev, jd.IdentIno},
			files: filesFromJournal(jd.Files), hooks: hooksFromJournal(jd.Hooks), modules: jd.Modules, worktrees: jd.Worktrees,
			locks: jd.Locks, links: jd.Links, hidden: jd.Hidden, index: jd.Index, indexLarge: jd.IndexLarge,
			replaces: jd.Replaces, replacesLoose: jd.ReplacesLoose,
			indexAt: fsinfo.Stamp{Dev: jd.IndexDev, Ino: jd.IndexIno, Size: jd.IndexSize, MtimeNs: jd.IndexMtime, CtimeNs: jd.IndexCtime}})
	}
	return g
}

func (g *agentsGuard) toJournal() *jAgents {
	if g == nil {
		return nil
	}
	j := &jAgents{Dir: g.dir, IdentDev: g.ident.dev, IdentIno: g.ident.ino, Files: filesToJournal(g.files), Stamps: map[string][5]int64{}}
	for k, v := range g.stamps {
		j.Stamps[k] = [5]int64{int64(v.Dev), int64(v.Ino), v.Size, v.MtimeNs, v.CtimeNs}
	}
	return j
}

func (j *jAgents) fromJournal() *agentsGuard {
	if j == nil {
		return nil
	}
	g := &agentsGuard{dir: j.Dir, ident: fileIdent{j.IdentDev, j.IdentIno}, files: filesFromJournal(j.Files), stamps: map[string]fsinfo.Stamp{}}
	for k, v := range j.Stamps {
		g.stamps[k] = fsinfo.Stamp{Dev: uint64(v[0]), Ino: uint64(v[1]), Size: v[2], MtimeNs: v[3], CtimeNs: v[4]}
	}
	return g
}
