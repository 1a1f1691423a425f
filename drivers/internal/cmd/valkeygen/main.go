// Command valkeygen writes drivers/valkeygo's generated files from
// drivers/rueidis's (see package valkeygen). `go generate` runs it in
// drivers/valkeygo:
//
//	go run ../internal/cmd/valkeygen
//
// It reads ../rueidis and writes into the current directory, unless told
// otherwise by -src and -dst.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/scriptlock/scriptlock/drivers/internal/valkeygen"
)

func main() {
	src := flag.String("src", "../rueidis", "the rueidis driver's directory")
	dst := flag.String("dst", ".", "the valkey-go driver's directory")
	flag.Parse()
	if err := valkeygen.Write(*src, *dst); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
