package locker_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStandardLibraryOnly keeps the core free of client dependencies: its
// non-test files import only the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := os.ReadDir(".")
	require.NoError(t, err)
	checked := 0
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err, name)
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			require.NotContains(t, first, ".", "%s imports %q: locker may import only the standard library", name, path)
		}
		checked++
	}
	require.NotZero(t, checked, "no non-test files found")
}
