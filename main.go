// Command redstream is a Redis-protocol server for queues and streams.
package main

import (
	"os"

	"github.com/redstream/redstream/cli"
)

func main() { os.Exit(cli.Run(os.Args)) }
