package harvey

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/skills"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// Skills (SKILL.md folders, internal/skills): yours in ~/.config/harvey/skills
// and ~/.claude/skills, a repository's in .claude/skills and agents/skills,
// used once you confirm them as its tools are. The model sees each one's
// name and description in the skill tool's description and loads one with
// skill {name}.

const sourceSkills = "built-in:skills"

// settleSkills finds the skills, asks about a repository's (headless, or
// a no: left out, with one line), and registers the skill tool when there
// is one.
func (ts *toolSet) settleSkills(tm *Terminal, g *Gate) {
	home, _ := os.UserHomeDir()
	set, problems := skills.Discover(skills.Roots(configfile.UserDir(), home, g.ws.Root, wspath.AgentsDir))
	for _, p := range problems {
		tm.logf("%s", tm.colorize("33", "warning: skipped skill: "+termtext.Sanitize(p)))
	}
	if sum := set.WorkspaceSum(); sum != "" && !configfile.Trusted(g.ws.Root, configfile.TrustSkills, sum) {
		if !confirmSkills(tm, set) {
			set.DropWorkspace()
		} else if err := configfile.Trust(g.ws.Root, configfile.TrustSkills, sum); err != nil {
			tm.logf("%s", tm.colorize("33", "warning: skills used, but the confirmation was not saved: "+err.Error()))
		}
	}
	g.skills = set
	ts.Tools.Unregister("skill")
	if set.Len() == 0 {
		return
	}
	tm.logf("%s", tm.dim("· skills: "+strings.Join(set.Names(), ", ")))
	ts.Tools.registerFunc("skill", set.Description(), skills.Schema(), typed(nil, skillTool, gateOps(g)), EffectRead, sourceSkills)
}

// confirmSkills asks about a repository's skills in the REPL.
func confirmSkills(tm *Terminal, set *skills.Set) bool {
	names := set.WorkspaceNames()
	if !tm.Interactive || tm.In == nil {
		tm.logf("%s", tm.colorize("33", fmt.Sprintf("warning: the workspace's skills (%s) are not yet confirmed; not loaded headless — start harvey in this directory once to confirm them", strings.Join(names, ", "))))
		return false
	}
	fmt.Fprintf(tm.Err, "%s the workspace has skills, instructions the model may load (they may come from the repository):\n", tm.colorize("33", "?"))
	for _, k := range set.Workspace() {
		fmt.Fprintf(tm.Err, "  - %s (%s): %s\n", k.Name, k.Label(), termtext.Sanitize(termtext.Clip(k.Description, 200)))
	}
	if ans, err := tm.In.Ask("Use these skills in this workspace? [y/N] "); err == nil && termtext.IsYes(ans) {
		return true
	}
	tm.logf("%s", tm.dim("· the workspace's skills are not loaded for this session; you will be asked again next time"))
	return false
}

type skillArgs struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// skillTool is the skill tool: the list, a skill's instructions, or one of
// its files, through the gate.
func skillTool(_ context.Context, g gateOps, _ callScope, in skillArgs) (toolResult, error) {
	text, err := g.skill(in.Name, in.File)
	if err != nil {
		return toolResult{}, err
	}
	return toolResult{Text: text, Summary: termtext.Plural(termtext.CountLines(text), "line")}, nil
}

// skill reads what the skill tool asks for, audited as a read.
func (g *Gate) skill(name, file string) (string, error) {
	var text string
	var err error
	switch {
	case strings.TrimSpace(name) == "":
		text = g.skills.List()
	case file != "":
		text, err = g.skills.Read(name, file)
	default:
		text, err = g.skills.Load(name)
	}
	g.audit("skill", strings.TrimSpace(name+" "+file), err, 0)
	return text, err
}
