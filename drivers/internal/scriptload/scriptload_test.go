package scriptload_test

import (
	"context"
	"errors"
	"testing"

	"github.com/scriptlock/scriptlock/drivers/internal/scriptload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errDown = errors.New("connection refused")

func node(addr, sha string, err error, sent *[]string) scriptload.Node {
	return scriptload.Node{Addr: addr, Load: func(context.Context) (string, error) {
		*sent = append(*sent, addr)
		return sha, err
	}}
}

func TestRun(t *testing.T) {
	cases := []struct {
		name    string
		nodes   func(sent *[]string) []scriptload.Node
		want    string
		wantErr []string // substrings of the error; nil: no error
		sent    []string
	}{
		{
			name: "all loaded, in address order",
			nodes: func(s *[]string) []scriptload.Node {
				return []scriptload.Node{node("b:2", "abc", nil, s), node("a:1", "abc", nil, s)}
			},
			want: "abc",
			sent: []string{"a:1", "b:2"},
		},
		{
			name: "every node tried after a failure",
			nodes: func(s *[]string) []scriptload.Node {
				return []scriptload.Node{node("a:1", "", errDown, s), node("b:2", "abc", nil, s), node("c:3", "", errDown, s)}
			},
			wantErr: []string{"failed on 2 of 3 masters", "a:1: connection refused", "c:3: connection refused"},
			sent:    []string{"a:1", "b:2", "c:3"},
		},
		{
			name: "SHA-1s disagree",
			nodes: func(s *[]string) []scriptload.Node {
				return []scriptload.Node{node("a:1", "abc", nil, s), node("b:2", "def", nil, s)}
			},
			wantErr: []string{"b:2: returned SHA-1 def, a:1 returned abc"},
			sent:    []string{"a:1", "b:2"},
		},
		{
			name:    "no node",
			nodes:   func(*[]string) []scriptload.Node { return nil },
			wantErr: []string{"knows no master"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sent []string
			got, err := scriptload.Run(context.Background(), "test", c.nodes(&sent))
			assert.Equal(t, c.sent, sent, "call: Run: nodes sent SCRIPT LOAD")
			if c.wantErr == nil {
				require.NoError(t, err, "call: Run")
				assert.Equal(t, c.want, got, "call: Run: SHA-1")
				return
			}
			require.Error(t, err, "call: Run: got %q, want an error", got)
			for _, w := range c.wantErr {
				assert.Contains(t, err.Error(), w, "call: Run: error")
			}
		})
	}
}

func TestRunErrorsMatch(t *testing.T) {
	var sent []string
	_, err := scriptload.Run(context.Background(), "test", []scriptload.Node{node("a:1", "", errDown, &sent)})
	assert.ErrorIs(t, err, errDown, "call: Run: the node's error must match")
}

func TestRunContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var sent []string
	nodes := []scriptload.Node{
		{Addr: "a:1", Load: func(context.Context) (string, error) {
			sent = append(sent, "a:1")
			cancel()
			return "", context.Canceled
		}},
		node("b:2", "abc", nil, &sent),
	}
	_, err := scriptload.Run(ctx, "test", nodes)
	assert.Equal(t, []string{"a:1"}, sent, "call: Run: nodes sent SCRIPT LOAD after ctx ended")
	assert.ErrorIs(t, err, context.Canceled, "call: Run with ctx cancelled midway")
	assert.Contains(t, err.Error(), "b:2: not tried", "call: Run: error")
}
