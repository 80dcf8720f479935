package harvey

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/audit"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// The security commands: /safemode (the command allowlist), /permissions
// (path-prefix rights), /audit (what happened) and /security (all three).
// They change configuration the user owns; no tool can reach them.

func cmdSafeMode(_ context.Context, a *Agent, args []string, out io.Writer) error {
	c := a.Config
	save := func() error {
		if err := c.Save(a.Workspace.Tree, "safe_mode", "allowed_commands"); err != nil {
			return fmt.Errorf("changed for this session, but not saved: %v", err)
		}
		return nil
	}
	if len(args) == 0 {
		args = []string{"status"}
	}
	switch args[0] {
	case "status":
		fmt.Fprintf(out, "safe mode: %v\nallowed: %s\n", c.SafeMode, strings.Join(c.AllowedCommands, " "))
		return nil
	case "on", "off":
		c.SafeMode = args[0] == "on"
		fmt.Fprintf(out, "safe mode %s\n", args[0])
	case "allow", "deny":
		if len(args) != 2 {
			return a.commands.usageError("safemode")
		}
		if args[0] == "allow" {
			if !slices.Contains(c.AllowedCommands, args[1]) {
				c.AllowedCommands = append(c.AllowedCommands, args[1])
			}
		} else {
			kept := c.AllowedCommands[:0]
			for _, x := range c.AllowedCommands {
				if x != args[1] {
					kept = append(kept, x)
				}
			}
			c.AllowedCommands = kept
		}
		fmt.Fprintf(out, "allowed: %s\n", strings.Join(c.AllowedCommands, " "))
	case "reset":
		c.AllowedCommands = append([]string(nil), config.DefaultAllowedCommands...)
		fmt.Fprintf(out, "allowed: %s\n", strings.Join(c.AllowedCommands, " "))
	default:
		return a.commands.usageError("safemode")
	}
	a.Audit.Record("safemode", strings.Join(args, " "), audit.Success, 0)
	return save()
}

func cmdPermissions(_ context.Context, a *Agent, args []string, out io.Writer) error {
	c := a.Config
	if len(args) == 0 {
		args = []string{"list"}
	}
	switch args[0] {
	case "list":
		if len(c.Permissions) == 0 {
			fmt.Fprintln(out, "no permissions set: everything is allowed")
		}
		for _, k := range slices.Sorted(maps.Keys(c.Permissions)) {
			fmt.Fprintf(out, "%-20s %s\n", k, strings.Join(c.Permissions[k], ","))
		}
		return nil
	case "set":
		if len(args) != 3 {
			return a.commands.usageError("permissions")
		}
		if _, err := wspath.LexicalClean(args[1]); err != nil {
			return err
		}
		var perms []string
		for _, p := range strings.Split(args[2], ",") {
			p = strings.TrimSpace(p)
			if p == "" || p == "none" {
				continue
			}
			if !slices.Contains(wspath.ValidPerms, p) {
				return fmt.Errorf("unknown permission %q (use %s, or none)", p, strings.Join(wspath.ValidPerms, ","))
			}
			perms = append(perms, p)
		}
		if c.Permissions == nil {
			c.Permissions = map[string][]string{}
		}
		c.Permissions[args[1]] = perms
		fmt.Fprintf(out, "%s: %s\n", args[1], strings.Join(perms, ","))
	case "reset":
		c.Permissions = config.Default().Permissions
		fmt.Fprintln(out, "permissions reset: . read,write,exec,delete")
	default:
		return a.commands.usageError("permissions")
	}
	a.Audit.Record("permissions", strings.Join(args, " "), audit.Success, 0)
	if err := c.Save(a.Workspace.Tree, "permissions"); err != nil {
		return fmt.Errorf("changed for this session, but not saved: %v", err)
	}
	return nil
}

func cmdAudit(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"show"}
	}
	switch args[0] {
	case "show":
		n := 20
		if len(args) > 1 {
			v, err := strconv.Atoi(args[1])
			if err != nil || v <= 0 {
				return fmt.Errorf("/audit show N: N must be a positive number")
			}
			n = v
		}
		a.Audit.Print(out, n)
	case "clear":
		a.Audit.Clear()
		fmt.Fprintln(out, "audit log cleared")
	case "status":
		held, total := a.Audit.Len()
		fmt.Fprintf(out, "%d events held (capacity %d), %d recorded this session\n", held, audit.Capacity, total)
	default:
		return a.commands.usageError("audit")
	}
	return nil
}

func cmdSecurity(ctx context.Context, a *Agent, _ []string, out io.Writer) error {
	fmt.Fprintln(out, "Invariants (always on): workspace boundary (os.Root), agents/ excluded, secret-file denylist, output cap, tool loop limit, filtered child environment.")
	fmt.Fprintln(out, sandboxpolicy.StatusText(a.Config.Sandbox))
	_ = cmdSafeMode(ctx, a, []string{"status"}, out)
	fmt.Fprintln(out, "permissions:")
	_ = cmdPermissions(ctx, a, []string{"list"}, out)
	return cmdAudit(ctx, a, []string{"status"}, out)
}
