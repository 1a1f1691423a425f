package readme

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// block is one ```go block of the README.
type block struct {
	line int    // the README line of the block's first line of code
	src  string // the code
}

// root is the module's root, from this package's directory.
const root = "../.."

// goBlocks returns the ```go blocks of the Markdown file at path.
func goBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		out  []block
		cur  *block
		code strings.Builder
		n    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{line: n + 1}
			code.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.src = code.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a ```go block starting at line %d is not closed", path, n)
	return out
}

// docs returns the Markdown files whose Go blocks and links are checked:
// README.md and every docs/*.md, as absolute paths.
func docs(t *testing.T) []string {
	t.Helper()
	readme, err := filepath.Abs(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(filepath.Dir(readme), "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, more, "docs/*.md hold the guide, the guarantees, the servers, ...")
	return append([]string{readme}, more...)
}

// TestBlocksCompile compiles every ```go block of README.md and docs/*.md
// and checks that each handles the errors it assigns.
func TestBlocksCompile(t *testing.T) {
	total := 0
	for _, md := range docs(t) {
		blocks := goBlocks(t, md)
		total += len(blocks)
		if len(blocks) == 0 {
			continue
		}
		for _, p := range unhandledErrors(t, md, blocks) {
			t.Error(p)
		}
		if out, err := compile(t, md, blocks); err != nil {
			t.Errorf("a Go block of %s does not compile (each block is a complete Go file without its package clause):\n%s", md, out)
			continue
		}
		t.Logf("%d Go blocks of %s compile", len(blocks), filepath.Base(md))
	}
	require.GreaterOrEqual(t, total, 8, "README.md and docs/ have Go blocks (the first example, connecting each driver, using a lock, certifying a driver, ...)")
}

// TestReadmeIsALandingPage keeps README.md short, with a complete example
// on its first screen; everything else lives in docs/.
func TestReadmeIsALandingPage(t *testing.T) {
	readme := filepath.Join(root, "README.md")
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	assert.LessOrEqual(t, lines, 250, "README.md is a landing page of at most 250 lines; move detail to docs/")
	blocks := goBlocks(t, readme)
	require.NotEmpty(t, blocks, "README.md shows a complete example")
	assert.Less(t, blocks[0].line, 60, "README.md's first Go block (a complete example) starts in its first 60 lines")
	assert.Contains(t, blocks[0].src, "func main()", "README.md's first example is a complete program")
}

// TestBrokenBlocksFail checks that the checks above catch a block that
// does not compile and one that overwrites an error unchecked.
func TestBrokenBlocksFail(t *testing.T) {
	md := filepath.Join(t.TempDir(), "BROKEN.md")
	require.NoError(t, os.WriteFile(md, []byte("# x\n\n```go\nimport (\n\t\"time\"\n)\n\nfunc f() { time.Sleep(\"1s\") }\n```\n\n"+
		"```go\nimport (\n\t\"strconv\"\n)\n\nfunc g() (int, error) {\n\tn, err := strconv.Atoi(\"1\")\n\tm, err := strconv.Atoi(\"2\")\n\tif err != nil {\n\t\treturn 0, err\n\t}\n\treturn n + m, nil\n}\n```\n"), 0o644))
	blocks := goBlocks(t, md)
	require.Len(t, blocks, 2)
	out, err := compile(t, md, blocks)
	require.Error(t, err, "a block that does not compile fails the build")
	assert.Contains(t, out, md+":8:", "the error points at the Markdown file's line")
	problems := unhandledErrors(t, md, blocks)
	require.Len(t, problems, 1, "the unchecked err of the second block is reported: %v", problems)
	assert.Contains(t, problems[0], md+":17:", "the err that is overwritten unchecked")
}

// source is the Go file compiled for block b of the Markdown file md:
// "package readme", then a //line directive so that positions point at md,
// then the block.
func source(md string, b block) string {
	return fmt.Sprintf("package readme\n\n//line %s:%d\n%s", md, b.line, b.src)
}

// compile builds every block as a package of its own (so blocks may reuse
// names) with go build -overlay: the files exist only in the overlay,
// nothing is written into the module. It returns go build's output.
func compile(t *testing.T, md string, blocks []block) (string, error) {
	t.Helper()
	here, err := filepath.Abs(".")
	require.NoError(t, err)
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	for i, b := range blocks {
		assert.True(t, strings.HasPrefix(b.src, "import ("), "%s:%d: a Go block starts with its imports, so it compiles as pasted", md, b.line)
		real := filepath.Join(tmp, fmt.Sprintf("block%02d.go", i+1))
		require.NoError(t, os.WriteFile(real, []byte(source(md, b)), 0o644))
		dir := fmt.Sprintf("blocks/b%02d", i+1) // does not exist on disk
		overlay[filepath.Join(here, dir, "block.go")] = real
		pkgs = append(pkgs, "./"+dir)
	}
	o, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	ofile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ofile, o, 0o644))
	// The blocks import the drivers, miniredis and OpenTelemetry, which
	// the core module (this package's) does not require: they build in
	// the repository's workspace (go.work), where every module's
	// requirements are known, even when the test runs with GOWORK=off.
	work, err := filepath.Abs(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	cmd := exec.Command(goTool(t), append([]string{"build", "-overlay", ofile}, pkgs...)...)
	cmd.Env = append(os.Environ(), "GOWORK="+work)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// goTool returns the go command: go test puts the one that runs this test
// first in PATH.
func goTool(t *testing.T) string {
	p, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is needed to compile the README's blocks")
	return p
}

// unhandledErrors lists the statements of blocks that assign err when the
// next statement neither tests nor returns it: the README's code checks
// every error (it once overwrote one and then used a nil *Mutex).
func unhandledErrors(t *testing.T, md string, blocks []block) []string {
	t.Helper()
	var problems []string
	for _, b := range blocks {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, md, source(md, b), parser.SkipObjectResolution)
		if err != nil {
			continue // compile reports it
		}
		problems = append(problems, unhandledIn(fset, f)...)
	}
	return problems
}

func unhandledIn(fset *token.FileSet, f *ast.File) []string {
	var problems []string
	ast.Inspect(f, func(n ast.Node) bool {
		var list []ast.Stmt
		switch n := n.(type) {
		case *ast.BlockStmt:
			list = n.List
		case *ast.CaseClause:
			list = n.Body
		case *ast.CommClause:
			list = n.Body
		default:
			return true
		}
		for i, s := range list {
			as, ok := s.(*ast.AssignStmt)
			if !ok || !assignsErr(as) {
				continue
			}
			if i+1 < len(list) && usesErr(list[i+1]) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: err is assigned and not checked by the next statement", fset.Position(as.Pos())))
		}
		return true
	})
	return problems
}

func assignsErr(as *ast.AssignStmt) bool {
	for _, l := range as.Lhs {
		if id, ok := l.(*ast.Ident); ok && id.Name == "err" {
			return true
		}
	}
	return false
}

// usesErr reports whether s is an if or return statement that mentions err.
func usesErr(s ast.Stmt) bool {
	var expr ast.Node
	switch s := s.(type) {
	case *ast.IfStmt:
		expr = s.Cond
	case *ast.ReturnStmt:
		expr = s
	default:
		return false
	}
	found := false
	ast.Inspect(expr, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "err" {
			found = true
		}
		return !found
	})
	return found
}

// TestUsingALockIsTested checks that the guide's deferred-Unlock pattern
// is the code drivers/goredis/example_unlock_test.go runs as
// Example_leaseUnlock and with an ended context.
func TestUsingALockIsTested(t *testing.T) {
	var using *block
	for _, b := range goBlocks(t, filepath.Join(root, "docs", "guide.md")) {
		if strings.Contains(b.src, "func handleInvoice") && strings.Contains(b.src, "defer lease.Unlock(ctx)") {
			using = &b
			break
		}
	}
	require.NotNil(t, using, "docs/guide.md shows the deferred-Unlock pattern: handleInvoice with defer lease.Unlock(ctx)")
	_, decls, ok := strings.Cut(using.src, "\n)\n")
	require.True(t, ok, "docs/guide.md:%d: the block starts with an import block", using.line)
	decls = strings.TrimSpace(decls)
	for _, f := range []string{"drivers/goredis/example_unlock_test.go"} {
		test, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		require.NoError(t, err)
		assert.Contains(t, string(test), decls,
			"docs/guide.md:%d: the \"Using a lock\" block's code must appear verbatim in %s, which runs it", using.line, f)
	}
}
