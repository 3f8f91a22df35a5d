// Command mqadmin is an admin CLI with Apache RocketMQ's mqadmin command and flag names, for
// this project's nodes and RocketMQ 4.x clusters alike:
//
//	mqadmin -n 127.0.0.1:9876 topicList        (or: mqadmin topicList -n 127.0.0.1:9876)
//	mqadmin consumerProgress -g myGroup -json
//
// Run "mqadmin help" for the commands and "mqadmin help <command>" for one command's flags.
// Exit codes: 0 success, 1 a request failed (the error on stderr), 2 a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
