package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/remoting"
)

// Exit codes a script can test.
const (
	exitOK      = 0
	exitFailed  = 1 // a request failed
	exitUsage   = 2 // unknown command or flag, missing or bad option
	envNameSrv  = "NAMESRV_ADDR"
	envAK       = "MQ_ACCESS_KEY"
	envSK       = "MQ_SECRET_KEY"
	envSecret   = "MQ_CLUSTER_SECRET"
	toolTimeout = admin.DefaultTimeout
)

// option is one flag of a command, with mqadmin's short and long names.
type option struct {
	short, long, usage string
	required           bool
	boolean            bool // takes no value (mqadmin's hasArg=false)
}

// command is one mqadmin sub-command.
type command struct {
	name, desc string
	options    []option
	// check validates option combinations beyond required ones; an error is a usage error.
	check func(e *env) error
	// controller: the command talks to a controller (-a) and needs no name server.
	controller bool
	// exec runs the command and returns the value -json prints and the table printer.
	exec func(ctx context.Context, e *env) (result any, text func(io.Writer), err error)
}

// env is one invocation: the parsed flags and the clients they configure.
type env struct {
	cmd    *command
	values map[string]*string // by short name
	bools  map[string]*bool
	json   bool

	nameServers []string
	creds       remoting.Credentials
	secret      string
	tlsConfig   *tls.Config
	timeout     time.Duration
	admin       *admin.Admin
	// stderr takes what a command reports beside its result (a member that did not answer).
	stderr io.Writer
}

// str returns an option's value, trimmed as mqadmin trims it; "" when not given.
func (e *env) str(short string) string {
	if v := e.values[short]; v != nil {
		return strings.TrimSpace(*v)
	}
	return ""
}

func (e *env) has(short string) bool {
	if b := e.bools[short]; b != nil {
		return *b
	}
	return e.str(short) != ""
}

// int returns an integer option or def when it is not given; a malformed one is a usage error.
func (e *env) int(short string, def int64) (int64, error) {
	s := e.str(short)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, usageErrorf("-%s: %q is not an integer", short, s)
	}
	return v, nil
}

// bool returns a true|false option (mqadmin's boolean options take a value) or def.
func (e *env) bool(short string, def bool) (bool, error) {
	s := e.str(short)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, usageErrorf("-%s: %q is not true or false", short, s)
	}
	return v, nil
}

// usageError is a mistake in the command line: exit code 2 with the command's usage.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// commonOptions are accepted by every command.
var commonOptions = []option{
	{short: "n", long: "namesrvAddr", usage: "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876' (default $" + envNameSrv + ")"},
	{short: "ak", long: "accessKey", usage: "ACL access key (default $" + envAK + ")"},
	{short: "sk", long: "secretKey", usage: "ACL secret key (default $" + envSK + ")"},
	{short: "cluster-secret", usage: "the deployment's cluster secret, which controller commands and name-service writes need where the nodes have one (default $" + envSecret + ", which ps does not show)"},
	{short: "tls", usage: "connect with TLS", boolean: true},
	{short: "tls-ca", usage: "PEM file of the CAs that sign the servers' certificates (implies -tls)"},
	{short: "timeout", usage: "per-request timeout, eg 5s (default RocketMQ admin's 5s)"},
	{short: "json", usage: "print one JSON document instead of tables", boolean: true},
	{short: "h", long: "help", usage: "Print help", boolean: true},
}

// run is mqadmin: args without the program name. It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printCommands(stdout)
		return exitOK
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 1 {
			printCommands(stdout)
			return exitOK
		}
		cmd := findCommand(args[1])
		if cmd == nil {
			fmt.Fprintf(stderr, "The sub command %s not exist.\n", args[1])
			printCommands(stderr)
			return exitUsage
		}
		printUsage(stdout, cmd)
		return exitOK
	}
	// mqadmin takes the command first; accept global options before it too.
	cmdIdx := slices.IndexFunc(args, func(a string) bool { return findCommand(a) != nil })
	if cmdIdx < 0 {
		fmt.Fprintf(stderr, "The sub command %s not exist.\n", firstNonFlag(args))
		printCommands(stderr)
		return exitUsage
	}
	cmd := findCommand(args[cmdIdx])
	rest := append(slices.Clone(args[:cmdIdx]), args[cmdIdx+1:]...)
	e, err := parse(cmd, rest, stderr)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, cmd)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		printUsage(stderr, cmd)
		return exitUsage
	}
	defer func() {
		if e.admin != nil {
			e.admin.Close()
		}
	}()
	result, text, err := cmd.exec(ctx, e)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		printUsage(stderr, cmd)
		return exitUsage
	}
	if err != nil {
		// A command that reached several servers prints what each did before failing.
		if text != nil && !e.json {
			text(stdout)
		}
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return exitFailed
	}
	if e.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(result); err != nil {
			fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
			return exitFailed
		}
		return exitOK
	}
	text(stdout)
	return exitOK
}

func firstNonFlag(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// parse reads a command's flags (both spellings of each) and the common ones, and checks what
// must be given.
func parse(cmd *command, args []string, stderr io.Writer) (*env, error) {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e := &env{cmd: cmd, values: map[string]*string{}, bools: map[string]*bool{}, stderr: stderr}
	for _, o := range allOptions(cmd) {
		if o.boolean {
			b := new(bool)
			e.bools[o.short] = b
			fs.BoolVar(b, o.short, false, o.usage)
			if o.long != "" {
				fs.BoolVar(b, o.long, false, o.usage)
			}
			continue
		}
		s := new(string)
		e.values[o.short] = s
		fs.StringVar(s, o.short, "", o.usage)
		if o.long != "" {
			fs.StringVar(s, o.long, "", o.usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *e.bools["h"] {
		return nil, flag.ErrHelp
	}
	e.json = *e.bools["json"]
	for _, o := range cmd.options {
		if o.required && e.str(o.short) == "" {
			return nil, fmt.Errorf("missing option -%s (%s)", o.short, o.long)
		}
	}
	if err := e.configure(); err != nil {
		return nil, err
	}
	if cmd.check != nil {
		if err := cmd.check(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// configure reads name servers, credentials, TLS and the timeout from flags and environment.
func (e *env) configure() error {
	ns := e.str("n")
	if ns == "" {
		ns = os.Getenv(envNameSrv)
	}
	for _, a := range strings.FieldsFunc(ns, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			e.nameServers = append(e.nameServers, a)
		}
	}
	if len(e.nameServers) == 0 && e.cmd.controller {
		// The admin client wants a name server; controllers are name servers.
		e.nameServers = []string{e.str("a")}
	}
	if len(e.nameServers) == 0 {
		return fmt.Errorf("no name server: give -n or set $%s", envNameSrv)
	}
	e.secret = e.str("cluster-secret")
	if e.secret == "" {
		e.secret = os.Getenv(envSecret)
	}
	if e.secret != "" && len(e.secret) < admin.MinClusterSecretBytes {
		return fmt.Errorf("the cluster secret has %d bytes, want at least %d", len(e.secret), admin.MinClusterSecretBytes)
	}
	e.creds = remoting.Credentials{AccessKey: e.str("ak"), SecretKey: e.str("sk")}
	if e.creds.AccessKey == "" {
		e.creds.AccessKey = os.Getenv(envAK)
	}
	if e.creds.SecretKey == "" {
		e.creds.SecretKey = os.Getenv(envSK)
	}
	if (e.creds.AccessKey == "") != (e.creds.SecretKey == "") {
		return errors.New("give both an access key and a secret key, or neither")
	}
	if ca := e.str("tls-ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("-tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca: no certificate in %s", ca)
		}
		e.tlsConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	} else if e.has("tls") {
		e.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	e.timeout = toolTimeout
	if s := e.str("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("-timeout: %q is not a positive duration", s)
		}
		e.timeout = d
	}
	return nil
}

// adminClient returns the invocation's admin client, made on first use.
func (e *env) adminClient() (*admin.Admin, error) {
	if e.admin != nil {
		return e.admin, nil
	}
	silent := zerolog.Nop()
	a, err := admin.New(admin.Options{NameServers: e.nameServers, Credentials: e.creds, ClusterSecret: e.secret,
		TLSConfig: e.tlsConfig, Timeout: e.timeout, Logger: &silent})
	if err != nil {
		return nil, err
	}
	e.admin = a
	return a, nil
}

func printCommands(w io.Writer) {
	fmt.Fprintf(w, "The most commonly used mqadmin commands are:\n")
	listed := slices.Clone(commands)
	rank := func(name string) int {
		if i := slices.Index(listOrder, name); i >= 0 {
			return i
		}
		return len(listOrder)
	}
	slices.SortStableFunc(listed, func(x, y command) int { return rank(x.name) - rank(y.name) })
	for _, c := range listed {
		fmt.Fprintf(w, "   %-20s %s\n", c.name, c.desc)
	}
	fmt.Fprintf(w, "\nSee 'mqadmin help <command>' for more information on a specific command.\n")
}

// allOptions are a command's options and the common ones. Where a command's long name is a
// common option's (updateAclConfig's --accessKey is the account it creates, as in RocketMQ,
// not the credentials), the command's keeps it and the common option is left its short name.
func allOptions(cmd *command) []option {
	out := slices.Clone(cmd.options)
	for _, o := range commonOptions {
		if o.long != "" && slices.ContainsFunc(cmd.options, func(c option) bool { return c.long == o.long }) {
			o.long = ""
		}
		out = append(out, o)
	}
	return out
}

func printUsage(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "usage: mqadmin %s [options]\n%s\n", cmd.name, cmd.desc)
	for _, o := range allOptions(cmd) {
		name := "-" + o.short
		if o.long != "" {
			name += ",--" + o.long
		}
		if !o.boolean {
			name += " <arg>"
		}
		req := ""
		if o.required {
			req = " (required)"
		}
		fmt.Fprintf(w, " %-36s %s%s\n", name, o.usage, req)
	}
	fmt.Fprintf(w, "Exit codes: 0 success, 1 a request failed, 2 a usage error.\n")
}
