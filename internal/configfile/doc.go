// Package configfile is the session's configuration as files: the user's
// own config (LoadUser; trusted), the workspace's agents/harvey.yaml over
// it (Load), merged by one rule per setting with the stricter value
// winning for limits (merge.go), what a workspace would send or loosen
// held back until the user confirms exactly that (File.Gated,
// AcceptWorkspace; the trust store, trust.go, remembers a confirmation as
// the file's SHA-256), the MCP servers of a workspace's .mcp.json and its
// Cursor and VS Code spellings under the same rule (mcp_files.go), and
// saving a file or editing the user's own (Save, EditUser, SetServer)
// without losing its comments or order, and the servers the user's other
// clients name (ImportSources, import.go: Claude Desktop, Claude Code,
// Cursor, and Codex's TOML read whole or not at all) for harvey mcp import.
//
// It reads and writes a workspace only through internal/wspath's Tree
// (Harvey's own files, by descriptor); the schema is internal/config's.
// A new setting needs a merge rule here (TestEveryConfigKeyHasARule).
package configfile
