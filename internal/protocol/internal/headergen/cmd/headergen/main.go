// Command headergen writes headers_gen.go, the Encode and Decode methods of the headers declared
// in the current directory; go generate runs it in internal/protocol.
package main

import (
	"fmt"
	"os"

	"github.com/mqgo/mq/internal/protocol/internal/headergen"
)

func main() {
	src, err := headergen.Generate(".")
	if err == nil {
		err = os.WriteFile(headergen.OutputFile, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
