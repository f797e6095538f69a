package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// A port in use is explained: how to pick another, and on 6379 the
// system redis-server that usually holds it.
func TestExplainListenError(t *testing.T) {
	inUse := fmt.Errorf("server: listen on 127.0.0.1:6379: %w", syscall.EADDRINUSE)
	msg := explainListenError(inUse, 6379).Error()
	for _, want := range []string{"address already in use", "--port 6380", "make run ARGS='--port 6380'", "redis-server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error for a taken 6379 lacks %q:\n%s", want, msg)
		}
	}
	if msg := explainListenError(inUse, 7000).Error(); strings.Contains(msg, "redis-server") || !strings.Contains(msg, "--port") {
		t.Errorf("error for a taken 7000:\n%s", msg)
	}
	other := errors.New("server: listen on unix socket /x: permission denied")
	if got := explainListenError(other, 6379); got != other {
		t.Errorf("an error other than a taken port was changed: %v", got)
	}
}
