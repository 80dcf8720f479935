//go:build !linux

package sandbox

// AdoptOrphans and EndOrphans: only Linux's Landlock-only mode needs
// Harvey to end what a launcher leaves (macOS's Seatbelt says so in its
// row of the table).
func AdoptOrphans() {}

func EndOrphans() int { return 0 }
