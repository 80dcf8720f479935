package jobs

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/termtext"
)

// Waiting for a job to be ready (issue 76): a server that takes seconds to
// start is waited for in one call, bounded, instead of a poll loop a small
// model writes badly. The condition is a port its processes listen on
// ("5173"), a URL of the session's own servers that answers
// ("http://127.0.0.1:5173/health": any HTTP status), or a text that
// appears in its output.

// WaitPoll is how often a condition is looked at.
const WaitPoll = 100 * time.Millisecond

// Dialer connects to a port of the session's own network (where the job's
// server listens).
type Dialer func(ctx context.Context, port int) (net.Conn, error)

// WaitFor waits at most d until cond holds for the job, it ends, or ctx
// ends, and says which, with what the job printed since the model's last
// read (or its last lines, when it did not get ready). met: cond held.
func (j *Job) WaitFor(ctx context.Context, cond string, d time.Duration, dial Dialer, limit int) (text string, met bool, err error) {
	check, what, err := j.condition(cond, dial)
	if err != nil {
		return "", false, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t := time.NewTicker(WaitPoll)
	defer t.Stop()
	for {
		if check(ctx) {
			return fmt.Sprintf("job %d is ready: %s after %s.\n%s", j.ID, what, time.Since(start).Round(100*time.Millisecond), j.Read(limit)), true, nil
		}
		select {
		case <-j.Ended():
			if check(context.Background()) { // what it printed before it ended
				return fmt.Sprintf("job %d: %s, and it has ended.\n%s", j.ID, what, j.Read(limit)), true, nil
			}
			return fmt.Sprintf("job %d ended (%s) before %s; its last lines:\n%s", j.ID, j.State(), what, j.Tail(20)), false, nil
		case <-ctx.Done():
			return fmt.Sprintf("job %d: no %s within %s (it is %s); its last lines:\n%s", j.ID, what, d.Round(time.Second), j.State(), j.Tail(20)), false, nil
		case <-t.C:
		}
	}
}

// condition is the check cond names, and the condition in words.
func (j *Job) condition(cond string, dial Dialer) (func(context.Context) bool, string, error) {
	cond = strings.TrimSpace(cond)
	if port, err := strconv.Atoi(cond); err == nil {
		if port <= 0 || port > 65535 {
			return nil, "", fmt.Errorf("wait_for %d is not a port", port)
		}
		return func(context.Context) bool {
			for _, p := range j.Ports() {
				if p == port {
					return true
				}
			}
			return false
		}, fmt.Sprintf("it listens on port %d", port), nil
	}
	if strings.HasPrefix(cond, "http://") || strings.HasPrefix(cond, "https://") {
		u, err := url.Parse(cond)
		if err != nil || !sessionHost(u.Hostname()) || u.Port() == "" && u.Scheme != "http" {
			return nil, "", fmt.Errorf("wait_for %q: a URL of the session's own servers, such as http://127.0.0.1:5173/health", cond)
		}
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = 80
		}
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx, port) },
		}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		return func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, cond, nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return true
		}, termtext.OneLine(cond) + " answers", nil
	}
	if cond == "" {
		return nil, "", fmt.Errorf("wait_for is empty: a port (5173), a URL (http://127.0.0.1:5173/health) or a text of its output")
	}
	return func(context.Context) bool {
		return strings.Contains(termtext.StripEscapes(j.kept()), cond)
	}, fmt.Sprintf("%q is in its output", cond), nil
}

// sessionHost reports whether a URL's host is where the session's servers
// listen: the loopback (or the wildcard a server prints).
func sessionHost(h string) bool {
	if h == "localhost" || h == "0.0.0.0" || h == "::" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// kept is all of the job's output that is kept, read position unmoved.
func (j *Job) kept() string {
	j.out.mu.Lock()
	defer j.out.mu.Unlock()
	from := int64(0)
	text, _ := j.out.from(&from, 0)
	return text
}
