//go:build !cgo

package main

// Without cgo there is no boundary.c: this build of toolgate-bash runs
// nothing, and toolgate run finds that out before claude starts.

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "toolgate-bash: the command did not run: this toolgate-bash was built without cgo, which its boundary needs: CGO_ENABLED=1 go build -o bin/ ./cmd/toolgate-bash (reason: boundary_failed)")
	os.Exit(126)
}
