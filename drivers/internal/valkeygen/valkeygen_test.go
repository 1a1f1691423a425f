package valkeygen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRewrite(t *testing.T) {
	src := `package rueidis_test

import (
	"github.com/redis/rueidis"

	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
)

// f returns rueidis's *RedisError; see rueidis.IsRedisErr and
// github.com/redis/rueidis.
func f(r rueidis.RedisResult) (*rueidis.RedisError, bool) {
	_ = rueidisdriver.New
	_ = "rueidis: github.com/redis/rueidis.(*pipe)._backgroundRead"
	_ = "from a *rueidis.RedisError"
	return rueidis.IsRedisErr(r.NonRedisError())
}
`
	want := Header + ` from drivers/rueidis/x_test.go; DO NOT EDIT.

package valkeygo_test

import (
	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/drivers/valkeygo"
)

// f returns valkey-go's *ValkeyError; see valkey.IsValkeyErr and
// github.com/valkey-io/valkey-go.
func f(r valkey.ValkeyResult) (*valkey.ValkeyError, bool) {
	_ = valkeygo.New
	_ = "valkeygo: github.com/valkey-io/valkey-go.(*pipe)._backgroundRead"
	_ = "from a *valkey.ValkeyError"
	return valkey.IsValkeyErr(r.NonValkeyError())
}
`
	got, err := Rewrite("x_test.go", []byte(src))
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// TestRewriteLeftover checks that an identifier of rueidis's naming that
// Idents does not map fails the rewrite instead of passing through.
func TestRewriteLeftover(t *testing.T) {
	_, err := Rewrite("x.go", []byte("package rueidis\n\nvar _ = rueidis.IsRedisBusyGroup\n"))
	require.ErrorContains(t, err, "IsRedisBusyGroup has no valkey-go name")
}

// TestCheck generates from a copy of drivers/rueidis and checks that Check
// passes on the fresh output and fails, naming the file, once the source
// changed, a generated file was edited or removed, or a generated file
// has no source any more.
func TestCheck(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, f := range Files {
		b, err := os.ReadFile(filepath.Join("../../rueidis", f.Src))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(src, f.Src), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dst, "doc.go"), []byte("package valkeygo\n"), 0o644))
	require.NoError(t, Write(src, dst))
	require.NoError(t, Check(src, dst))

	stale := func(name string, change func()) {
		t.Helper()
		change()
		err := Check(src, dst)
		require.ErrorContains(t, err, name)
		require.ErrorContains(t, err, "run go generate")
		require.NoError(t, Write(src, dst))
		require.NoError(t, Check(src, dst))
	}
	stale("ack_gen.go", func() { // the source changed
		appendTo(t, filepath.Join(src, "ack.go"), "\nfunc added() {}\n")
	})
	stale("subscribe_gen.go", func() { // the generated file was edited
		appendTo(t, filepath.Join(dst, "subscribe_gen.go"), "\n// edited\n")
	})
	stale("valkeygo_gen.go is missing", func() {
		require.NoError(t, os.Remove(filepath.Join(dst, "valkeygo_gen.go")))
	})
	old := filepath.Join(dst, "old_gen.go")
	stale("old_gen.go", func() { // generated from a source no longer listed
		require.NoError(t, os.WriteFile(old, []byte(Header+" from drivers/rueidis/old.go; DO NOT EDIT.\n\npackage valkeygo\n"), 0o644))
	})
	_, err := os.Stat(old)
	require.ErrorIs(t, err, os.ErrNotExist, "Write removes a generated file without a source")
	_, err = os.Stat(filepath.Join(dst, "doc.go"))
	require.NoError(t, err, "Write keeps hand-written files")
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(string(b)+s), 0o644))
}

// TestGeneratedHeader checks the header against the convention of
// https://go.dev/s/generatedcode, which tools use to skip generated files.
func TestGeneratedHeader(t *testing.T) {
	got, err := Rewrite("x.go", []byte("package rueidis\n"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(got), "\n")
	require.Regexp(t, `^// Code generated .* DO NOT EDIT\.$`, first)
}
