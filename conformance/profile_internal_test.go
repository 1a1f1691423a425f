package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnknownEnv checks that a misspelled SCRIPTLOCK_* variable is named,
// and that the suite's own and the scripts' are not.
func TestUnknownEnv(t *testing.T) {
	env := []string{"PATH=/bin", "SCRIPTLOCK_REDIS_URI=redis://x", "SCRIPTLOCK_REDIS_URL=redis://y", "SCRIPTLOCK_SUITE=safe", "SCRIPTLOCK_COMPAT_JOBS=2"}
	assert.Equal(t, []string{"SCRIPTLOCK_REDIS_URI"}, unknownEnv(env))
	assert.Empty(t, unknownEnv(env[2:]))
}
