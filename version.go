package harvey

// Version is Harvey's version.
const Version = "0.1.0"
