// Package wspath is the workspace's path policy: the one gate every file
// Harvey's own process reads, writes, lists or searches in the workspace
// goes through, whoever asks — a tool call, a slash command, the index, an
// edit, /undo.
//
// Open opens the workspace once as an os.Root and finds agents/, Harvey's
// own directory, by identity. Tree.Resolve applies, in order: the lexical
// rules (empty, NUL, too long or deep, not UTF-8, ~, absolute, backslash,
// ..), agents/ in any spelling, .git/ for a write, the sensitive-file
// denylist (internal/secrets); then a verified descent, each directory
// opened through its parent and compared by identity, each link followed
// by hand and the rules applied again to its target; a final entry that is
// a regular file with one link or a directory; and last the permissions:
// block (Permits, read at every check through SetPermissions) on the
// resolved object. A Resolved holds the checked directory open, so what is
// opened later (OpenVerified, OpenDirVerified, Holds, StillInPlace) is the
// object that was checked. Every refusal is a PathError of
// internal/refusal's kind, naming the path and the rule.
//
// Harvey's own state under agents/ is read and written only through
// ReadInternal, WriteInternalAtomic, OpenInternalAppend, ListInternal and
// RemoveInternal: O_NOFOLLOW descriptors from agents/ itself. IgnoreSet is
// .gitignore's rules for the walks. It knows nothing of a model or a
// session.
package wspath
