package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdrivers holds the client settings the suite's in-tree drivers run
// on, in guide_*.go files whose functions docs/guide.md shows word for word.
var testdrivers = filepath.Join(root, "conformance", "internal", "intree", "testdrivers")

// TestGuideClientsAreCertified checks that every function of the
// testdrivers' guide_*.go files appears in docs/guide.md exactly as the
// suite runs it, so the configurations users copy are the certified ones.
func TestGuideClientsAreCertified(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guide.md"))
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(testdrivers, "guide_*.go"))
	require.NoError(t, err)
	require.Len(t, files, 4, "one guide_*.go per in-tree driver in %s", testdrivers)
	n := 0
	for _, f := range files {
		for name, src := range funcSources(t, f) {
			n++
			assert.Contains(t, string(guide), src, "docs/guide.md shows %s as %s has it (the suite's drivers run that one)", name, filepath.Base(f))
		}
	}
	assert.GreaterOrEqual(t, n, 7, "the guide_*.go files hold the clients of the four drivers")
}

// funcSources returns the source of each function of the Go file at path,
// with its doc comment, by name.
func funcSources(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, b, parser.ParseComments)
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		start := fn.Pos()
		if fn.Doc != nil {
			start = fn.Doc.Pos()
		}
		out[fn.Name.Name] = string(b[fset.Position(start).Offset:fset.Position(fn.End()).Offset])
	}
	return out
}

// clientSettings are the settings scriptlock is certified with, by the
// composite literal that configures a client: each literal users read must
// set them (have), and none may set what the certified clients avoid (not).
var clientSettings = []struct {
	literal   string
	after     string // what precedes a literal that goes straight into a client
	have, not []string
}{
	{literal: "redis.Options{", after: "NewClient(&", have: []string{"ContextTimeoutEnabled: true"}},
	{literal: "redis.ClusterOptions{", after: "NewClusterClient(&", have: []string{"ContextTimeoutEnabled: true"}},
	{literal: "rueidis.ClientOption{", after: "NewClient(", have: []string{"DisableCache: true"}},
	{literal: "valkey.ClientOption{", after: "NewClient(", have: []string{"DisableCache: true"}},
	{literal: "redis.Pool{", after: "&", have: []string{"TestOnBorrowContext:"}, not: []string{"TestOnBorrow:", "Dial:"}},
}

// TestClientSettings checks every client configuration users read outside
// the guide's certified functions (README.md, docs/, the drivers' package
// docs) for the certified settings: a literal passed to a client's
// constructor, such as redis.NewClient(&redis.Options{...}), sets them.
func TestClientSettings(t *testing.T) {
	pages := docs(t)
	docGo, err := filepath.Glob(filepath.Join(root, "drivers", "*", "doc.go"))
	require.NoError(t, err)
	require.Len(t, docGo, 4, "the four drivers' package docs")
	seen := 0
	for _, p := range append(pages, docGo...) {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, lit := range constructorLiterals(string(b)) {
			seen++
			for _, want := range clientSettings[lit.kind].have {
				assert.Contains(t, lit.text, want, "%s: %s sets %s, as the certified clients do", filepath.Base(p), clientSettings[lit.kind].literal, want)
			}
			for _, bad := range clientSettings[lit.kind].not {
				assert.NotContains(t, lit.text, bad, "%s: %s does not set %s, as the certified clients do not", filepath.Base(p), clientSettings[lit.kind].literal, bad)
			}
		}
	}
	assert.GreaterOrEqual(t, seen, 6, "README.md, docs/ and the drivers' docs configure clients")
}

type literal struct {
	kind int    // index into clientSettings
	text string // from the type name to the closing brace
}

// constructorLiterals finds the client configuration literals of src that
// go straight into a client (redis.NewClient(&redis.Options{...}), a
// &redis.Pool{...}): the guide's certified functions take theirs as
// arguments instead.
func constructorLiterals(src string) []literal {
	var out []literal
	for k, s := range clientSettings {
		for i := 0; ; {
			j := strings.Index(src[i:], s.literal)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(s.literal)
			if !strings.HasSuffix(src[:at], s.after) {
				continue
			}
			end := matchBrace(src, i-1)
			out = append(out, literal{kind: k, text: src[at:end]})
		}
	}
	return out
}

// matchBrace returns the index just past the brace that closes the one at
// open, or len(src).
func matchBrace(src string, open int) int {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(src)
}

// TestClientSettingsCatch checks that the check above fails the
// configurations it is for.
func TestClientSettingsCatch(t *testing.T) {
	for _, bad := range []string{
		`rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})`,
		`c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})`,
		"pool := &redis.Pool{\n\tTestOnBorrow: ping,\n\tTestOnBorrowContext: x,\n}",
		"pool := &redis.Pool{\n\tDial: func() (redis.Conn, error) { return redis.Dial(\"tcp\", addr) },\n}",
	} {
		lits := constructorLiterals(bad)
		require.Len(t, lits, 1, bad)
		s := clientSettings[lits[0].kind]
		ok := true
		for _, want := range s.have {
			ok = ok && strings.Contains(lits[0].text, want)
		}
		for _, no := range s.not {
			ok = ok && !strings.Contains(lits[0].text, no)
		}
		assert.False(t, ok, "the check passes %q", bad)
	}
	assert.Empty(t, constructorLiterals(`rdb := newRedisClient(redis.Options{Addr: "localhost:6379"})`), "a literal given to a certified function is not a client's own configuration")
}
