package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultReplyIdle is how long a reply may make no progress.
const DefaultReplyIdle = 10 * time.Minute

// ParseIdle reads retry.idle: "" is the default, "off" (or 0) none.
func ParseIdle(s string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DefaultReplyIdle, nil
	case "off", "0", "false", "no":
		return 0, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("retry.idle: %v (or off)", err)
	}
	return d, nil
}

// IdleTime is retry.idle: a duration, or off.
type IdleTime string

// UnmarshalYAML implements yaml.Unmarshaler: a value parseIdle refuses is
// an error of the config, with its line.
func (d *IdleTime) UnmarshalYAML(n *yaml.Node) error {
	if _, err := ParseIdle(n.Value); err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = IdleTime(n.Value)
	return nil
}
