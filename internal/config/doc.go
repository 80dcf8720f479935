// Package config is the schema of Harvey's configuration, which every part
// of Harvey reads: the types of agents/harvey.yaml and of the user's own
// config (Config and its blocks: tools, models, routes, retry, rag, mcp,
// hooks, sandbox), their YAML forms (Duration, IdleTime, HookArgv), the
// hard ceilings a config may tighten and never loosen (Clamp), and the
// checks a value must pass wherever it came from (HookConfig.Check, the
// unknown keys a typo leaves, ParseDuration, ParseIdle).
//
// What a setting means at run time stays with the part that runs it; what
// is here is data and the rules about the data, so a new setting is added
// here once and read everywhere. Which settings a workspace may set, and
// which wait for the user's confirmation, is the agent's (config_merge.go,
// config_trust.go). FromWorkspace marks a hook or a server a repository
// brought: it never fills ${VAR} from the user's environment (Expanded) and
// never has the user's powers (Check). It imports only internal/secrets
// and internal/termtext (to show a setting) and internal/lazyre: not the
// path gate, so what reads settings (internal/llm) does not pull it in.
package config
