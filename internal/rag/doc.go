// Package rag is harvey rag and /rag, and the retrieval before a turn
// (issue 36's RAG, issue 49's workspace embeddings).
//
// The contract:
//   - Stores are named SQLite stores of embedded chunks (internal/ragstore),
//     each bound to one embedding model, in the user's own config under
//     rag: (a workspace's agents/harvey.yaml cannot set it); only the
//     active store is opened. Save writes that block of the user's config,
//     keeping its other keys and comments.
//   - What is ingested passes the workspace's path gate (Env.Tree) and the
//     walk search_files uses, and is redacted first; a store holds one
//     workspace's files, and its chunks reach the model only in that
//     workspace, each through the path policy again (Retrieved).
//   - Retrieved is the block added to the user's message before a turn,
//     never the system prompt (the warm prefix stays reusable): the top 5
//     chunks above a cosine similarity of 0.3, within about 1,000 tokens;
//     nothing when none qualifies; a failure is said once (warn) and the
//     turn goes on.
//   - Do runs one command (harvey rag ARGS, /rag ARGS) over the stores and
//     the workspace index (internal/wsquery: Env.Index); a usage error
//     starts with "usage: ".
//   - The embedders are the agent's (Env.Embedder, WorkspaceEmbedder): one
//     embeddings client beside its chat clients.
package rag
