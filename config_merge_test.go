package harvey
