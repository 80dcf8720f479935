package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// SandboxPolicy is what the user's own config says about the sandbox (a
// workspace config cannot set it).
type SandboxPolicy struct {
	Writable []string `yaml:"writable,omitempty"` // extra writable paths
	Readable []string `yaml:"readable,omitempty"` // extra readable paths
	Network  bool     `yaml:"network,omitempty"`  // allow TCP for every command
	Hosts    []string `yaml:"hosts,omitempty"`    // hosts (or host:port, *.domain) the registry proxy lets commands reach, besides the public registries
	// Env names your variables commands and hooks get besides the
	// toolchains' (names or patterns: NODE_EXTRA_CA_CERTS, MYTEAM_*); one
	// that looks secret (DATABASE_URL, *_TOKEN) only by its exact name.
	Env []string `yaml:"env,omitempty"`
	// Ports are the ports of the session's network published on your
	// machine's 127.0.0.1 from the start (as /ports PORT does).
	Ports []int `yaml:"ports,omitempty"`
	// Unsandboxed lets commands run where there is no sandbox at all
	// (mode none), on purpose; without it they refuse there.
	Unsandboxed bool `yaml:"unsandboxed,omitempty"`
	// Jobs caps what the session's background jobs use together.
	Jobs JobLimits `yaml:"jobs,omitempty"`
}

// JobLimits caps what a session's background jobs use together: past
// either, the job that uses the most of it is stopped, and that is said.
type JobLimits struct {
	// Memory is their resident memory together: a size (2G, 512M) or a
	// share of this machine's (the default: 50%).
	Memory Size `yaml:"memory,omitempty"`
	// Processes is how many processes they run together (default 1024).
	Processes int `yaml:"processes,omitempty"`
}

// Size is an amount of memory, as YAML gives it: bytes with an optional
// K, M, G or T (KB, KiB, ... alike: powers of 1024), or a percentage of
// this machine's memory ("50%").
type Size struct {
	Bytes   int64
	Percent float64
}

// Of is the size in bytes on a machine of total bytes (0: unset).
func (s Size) Of(total int64) int64 {
	if s.Percent > 0 {
		return int64(float64(total) * s.Percent / 100)
	}
	return s.Bytes
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*s = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (s Size) MarshalYAML() (any, error) {
	if s.Percent > 0 {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%", nil
	}
	return s.Bytes, nil
}

// ParseSize reads a size: "2G", "512MiB", "1.5GB", "1048576", "50%".
func ParseSize(v string) (Size, error) {
	t := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 {
			return Size{}, fmt.Errorf("size %q: a share is more than 0%% and at most 100%%", v)
		}
		return Size{Percent: f}, nil
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "B"), "I")
	mult := int64(1)
	if i := strings.IndexAny(u, "KMGT"); i >= 0 && i == len(u)-1 {
		mult = int64(1) << (10 * (strings.IndexByte("KMGT", u[i]) + 1))
		u = u[:i]
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || f <= 0 {
		return Size{}, fmt.Errorf("size %q: a number of bytes with K, M, G or T, or a share (50%%)", v)
	}
	return Size{Bytes: int64(f * float64(mult))}, nil
}
