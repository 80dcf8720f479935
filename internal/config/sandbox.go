package config

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
}
