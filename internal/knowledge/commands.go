package knowledge

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// Usage is /kb's one-line usage.
const Usage = "/kb status|project ...|observe [KIND:] TEXT|concept ...|search TEXT|inject"

// Help is /kb help.
const Help = `/kb status                          projects, observations, concepts; the active project; an integrity check
/kb project list                    every project with its counts
/kb project add NAME [DESC]         create a project (and make it active)
/kb project use ID|NAME             make a project the active one (kept across sessions)
/kb project status ID|NAME STATUS   active, paused or concluded
/kb project show [ID|NAME]          a project's summary and observations
/kb observe [KIND:] TEXT            record on the active project; KIND is note (default),
                                    finding, decision, question or hypothesis
/kb concept list                    concepts and how many projects use each
/kb concept add NAME [DESC]         create a concept
/kb concept link NAME [PROJECT]     link a concept to a project (default: the active one)
/kb concept link NAME obs ID        link a concept to an observation
/kb search TEXT                     full-text search of observations, projects and concepts
/kb inject [ID|NAME]                put the project's summary into the conversation`

// kbInjectObservations bounds what /kb inject puts into a small context.
const kbInjectObservations = 20

func kbStatus(kb *Base, out io.Writer) error {
	p, o, c, err := kb.Counts()
	if err != nil {
		return err
	}
	integrity := "ok"
	if err := kb.Check(); err != nil {
		integrity = err.Error()
	}
	fmt.Fprintf(out, "knowledge base: %s, %s, %s (schema %d; integrity %s)\n", termtext.Plural(p, "project"), termtext.Plural(o, "observation"), termtext.Plural(c, "concept"), SchemaVersion, integrity)
	act, ok, err := kb.ActiveProject()
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(out, "no active project: /kb project add NAME or /kb project use ID")
		return nil
	}
	fmt.Fprintf(out, "active project: #%d %s (%s), %d observations\n", act.ID, san(act.Name), act.Status, act.Observations)
	return nil
}

func san(s string) string { return termtext.Sanitize(s) }

// activeOr returns the project named by ref, or the active project.
func activeOr(kb *Base, ref string) (Project, error) {
	if ref != "" {
		return kb.Project(ref)
	}
	p, ok, err := kb.ActiveProject()
	if err != nil {
		return p, err
	}
	if !ok {
		return p, fmt.Errorf("no active project: /kb project add NAME or /kb project use ID")
	}
	return p, nil
}

func kbProject(kb *Base, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"list"}
	}
	switch strings.ToLower(args[0]) {
	case "list":
		return kbProjectList(kb, out)
	case "add":
		if len(args) < 2 {
			return fmt.Errorf("usage: /kb project add NAME [DESC]")
		}
		id, err := kb.AddProject(args[1], strings.Join(args[2:], " "))
		if err != nil {
			return err
		}
		if _, err := kb.UseProject(strconv.FormatInt(id, 10)); err != nil {
			return err
		}
		fmt.Fprintf(out, "project #%d %s added; it is the active project\n", id, san(args[1]))
		return nil
	case "use":
		if len(args) != 2 {
			return fmt.Errorf("usage: /kb project use ID|NAME")
		}
		p, err := kb.UseProject(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "active project: #%d %s\n", p.ID, san(p.Name))
		return nil
	case "status":
		return kbProjectStatus(kb, args, out)
	case "show":
		p, err := activeOr(kb, strings.Join(args[1:], " "))
		if err != nil {
			return err
		}
		s, err := kb.Summary(p.ID, 0)
		if err != nil {
			return err
		}
		fmt.Fprint(out, san(s))
		return nil
	}
	return fmt.Errorf("usage: /kb project list|add NAME [DESC]|use ID|status ID STATUS|show [ID]")
}

// kbProjectList lists the projects, the active one marked.
func kbProjectList(kb *Base, out io.Writer) error {
	ps, err := kb.Projects()
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		fmt.Fprintln(out, "no projects yet: /kb project add NAME [DESC]")
	}
	act, _, _ := kb.ActiveProject()
	for _, p := range ps {
		mark := " "
		if p.ID == act.ID {
			mark = "*"
		}
		fmt.Fprintf(out, "%s #%d %-20s %-9s %3d obs  %s\n", mark, p.ID, san(p.Name), p.Status, p.Observations, san(p.Description))
	}
	return nil
}

// kbProjectStatus sets a project's status: /kb project status ID STATUS.
func kbProjectStatus(kb *Base, args []string, out io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: /kb project status ID|NAME %s", strings.Join(ProjectStatuses, "|"))
	}
	p, err := kb.Project(args[1])
	if err != nil {
		return err
	}
	if err := kb.SetProjectStatus(p.ID, args[2]); err != nil {
		return err
	}
	fmt.Fprintf(out, "project #%d %s is %s\n", p.ID, san(p.Name), strings.ToLower(args[2]))
	return nil
}

// kbObserve records "[KIND:] TEXT", as typed (quotes kept), on the active
// project. A first word that is a known kind counts as the kind with or
// without a colon; any other first word ending in a colon is taken as a
// kind and refused, so a typo is not filed as a note.
func kbObserve(kb *Base, text string, out io.Writer) error {
	if text == "" {
		return fmt.Errorf("usage: /kb observe [KIND:] TEXT (KIND: %s)", strings.Join(ObservationKinds, ", "))
	}
	kind := "note"
	first, rest, _ := strings.Cut(text, " ")
	first = strings.ToLower(first)
	if k := strings.TrimSuffix(first, ":"); slices.Contains(ObservationKinds, k) {
		kind, text = k, strings.TrimSpace(rest)
	} else if strings.HasSuffix(first, ":") && len(first) > 1 && !strings.ContainsAny(k, " /.") {
		return fmt.Errorf("unknown kind %q: use %s", k, strings.Join(ObservationKinds, ", "))
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("an observation needs text: /kb observe [KIND:] TEXT")
	}
	p, err := activeOr(kb, "")
	if err != nil {
		return err
	}
	id, err := kb.AddObservation(p.ID, kind, text)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s #%d recorded on %s\n", kind, id, san(p.Name))
	return nil
}

func kbConcept(kb *Base, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"list"}
	}
	switch strings.ToLower(args[0]) {
	case "list":
		cs, err := kb.Concepts()
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			fmt.Fprintln(out, "no concepts yet: /kb concept add NAME [DESC]")
		}
		for _, c := range cs {
			fmt.Fprintf(out, "#%d %-20s %2d projects  %s\n", c.ID, san(c.Name), c.Projects, san(c.Description))
		}
		return nil
	case "add":
		if len(args) < 2 {
			return fmt.Errorf("usage: /kb concept add NAME [DESC]")
		}
		id, err := kb.AddConcept(args[1], strings.Join(args[2:], " "))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "concept #%d %s added\n", id, san(args[1]))
		return nil
	case "link":
		if len(args) < 2 {
			return fmt.Errorf("usage: /kb concept link NAME [PROJECT] | /kb concept link NAME obs ID")
		}
		c, err := kb.Concept(args[1])
		if err != nil {
			return err
		}
		if len(args) == 4 && strings.HasPrefix(strings.ToLower(args[2]), "obs") {
			id, err := strconv.ParseInt(strings.TrimPrefix(args[3], "#"), 10, 64)
			if err != nil {
				return fmt.Errorf("observation IDs are numbers, got %q", args[3])
			}
			if err := kb.LinkObservation(c.ID, id); err != nil {
				return err
			}
			fmt.Fprintf(out, "linked %s to observation #%d\n", san(c.Name), id)
			return nil
		}
		p, err := activeOr(kb, strings.Join(args[2:], " "))
		if err != nil {
			return err
		}
		if err := kb.LinkProject(c.ID, p.ID); err != nil {
			return err
		}
		fmt.Fprintf(out, "linked %s to project #%d %s\n", san(c.Name), p.ID, san(p.Name))
		return nil
	}
	return fmt.Errorf("usage: /kb concept list|add NAME [DESC]|link NAME [PROJECT]|link NAME obs ID")
}

func kbSearch(kb *Base, text string, out io.Writer) error {
	obs, ps, cs, err := kb.Search(text, 50)
	if err != nil {
		return err
	}
	if len(obs)+len(ps)+len(cs) == 0 {
		fmt.Fprintln(out, "nothing found")
		return nil
	}
	for _, p := range ps {
		fmt.Fprintf(out, "project #%d %s: %s\n", p.ID, san(p.Name), san(p.Description))
	}
	for _, c := range cs {
		fmt.Fprintf(out, "concept #%d %s: %s\n", c.ID, san(c.Name), san(c.Description))
	}
	for _, o := range obs {
		fmt.Fprintf(out, "#%d %s [%s] %s: %s\n", o.ID, o.Created[:min(len(o.Created), 10)], san(o.Project), o.Kind, san(o.Body))
	}
	return nil
}

// kbInject gives the project's summary to inject (the session adds it to
// the conversation as one labelled context message, appended, so the
// cached prompt prefix stays valid), redacted: notes may quote a token by
// mistake.
func kbInject(kb *Base, args []string, out io.Writer, inject func(label, text string)) error {
	p, err := activeOr(kb, strings.Join(args, " "))
	if err != nil {
		return err
	}
	s, err := kb.Summary(p.ID, kbInjectObservations)
	if err != nil {
		return err
	}
	inject("knowledge base", secrets.Redact(s))
	fmt.Fprintf(out, "added project #%d %s to the conversation (%d observations, ~%d tokens)\n",
		p.ID, san(p.Name), min(p.Observations, kbInjectObservations), len(s)/4+1)
	return nil
}

// Do runs one /kb subcommand on kb: sub and its arguments as every
// command splits them, text the rest of the line as typed (an
// observation keeps its quotes); inject receives what /kb inject puts
// into the conversation.
func Do(kb *Base, sub string, args []string, text string, out io.Writer, inject func(label, text string)) error {
	switch sub {
	case "status":
		return kbStatus(kb, out)
	case "project", "projects":
		return kbProject(kb, args, out)
	case "observe":
		return kbObserve(kb, text, out)
	case "concept", "concepts":
		return kbConcept(kb, args, out)
	case "search":
		return kbSearch(kb, strings.Join(args, " "), out)
	case "inject":
		return kbInject(kb, args, out, inject)
	}
	return fmt.Errorf("unknown /kb subcommand %q; usage: %s", sub, Usage)
}
