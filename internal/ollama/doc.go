// Package ollama is Harvey's client of Ollama's own API (/api/chat,
// /api/tags, /api/show, /api/ps, and /api/embed: Embedder, the one
// embedding client for Ollama, which the knowledge stores and the
// workspace index use), through the official types
// (github.com/ollama/ollama/api) and not any-llm-go's Ollama provider,
// which fixes num_ctx, sends tool results as user messages, drops schema
// detail, renames calls per chunk and ends cut streams without an error
// (wire.md).
//
// Client speaks internal/llm's vocabulary: ChatWithTools streams the text
// to the writer it is given, takes each call whole with an ID that is safe
// in a delimiter, reads the NDJSON stream with a buffer that grows with the
// longest line, keeps a reply within llm's bounds, tells the idle watch of
// each real chunk, and classifies every failure for the one retry loop
// (internal/llm): a restart, a load, a busy or rate-limited server, a cut
// stream are Transient; a model without tools is llm.ErrToolsUnsupported;
// the rest is one line that says what to do. Capability and ToolSupport
// read /api/show; Warmer is the warm start; Loaded reads /api/ps. It
// imports internal/llm, internal/config and internal/textcalls.
package ollama
