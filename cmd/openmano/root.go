package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// globals are the flags every command takes.
type globals struct {
	verbose int
	debug   bool
	output  string
	caFile  string
}

// runFunc runs a command with its positional arguments.
type runFunc func(ctx context.Context, s *session, args []string) error

// spec is one subcommand: setup defines its own flags on fs and returns
// the function that runs it.
type spec struct {
	name    string
	aliases []string
	args    string // the arguments, as shown in its usage line
	summary string // first line: the command list; all of it: its help
	min     int
	max     int      // -1: no limit
	offline bool     // runs without a server: no session is set up
	valid   []string // the values of its argument, for completion
	// complete is what its first argument names (tenant, wim, datacenter,
	// instance): completion offers the server's names.
	complete string
	setup    func(fs *pflag.FlagSet) runFunc
}

// tree is the command tree of one Run: cobra's root, the subcommands in
// the order the usage lists them, and the global flags they share.
type tree struct {
	c    *CLI
	g    *globals
	root *cobra.Command
	cmds []*cobra.Command
}

func (c *CLI) newTree() *tree {
	t := &tree{c: c, g: &globals{}}
	name := c.Name
	if name == "" {
		name = "openmano"
	}
	root := &cobra.Command{
		Use:                        name, // the completion scripts complete the binary as invoked
		SilenceErrors:              true, // exit prints every error once
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true}, // ours takes the global flags
	}
	root.SetOut(c.Stdout)
	root.SetErr(c.Stderr)
	root.SetIn(c.Stdin)
	pf := root.PersistentFlags()
	pf.CountVarP(&t.g.verbose, "verbose", "v", "more output; repeatable (-vv, -vvv: the whole answer as YAML)")
	pf.BoolVarP(&t.g.debug, "debug", "d", false, "print the HTTP exchange on stderr (Authorization and passwords masked)")
	pf.StringVarP(&t.g.output, "output", "o", "table", "output format: table, wide (more columns), json (the server's answer verbatim) or yaml")
	pf.StringVar(&t.g.caFile, "ca-file", c.Getenv("OPENMANO_CA_FILE"), "PEM file of the CA(s) to trust for an https:// OPENMANO_HOST, besides the system's (env OPENMANO_CA_FILE)")
	root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch t.g.output {
		case "table", "wide", "json", "yaml":
			return nil
		}
		return &usageError{msg: fmt.Sprintf("--output %q: must be table, wide, json or yaml", t.g.output)}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		if cmd == root {
			t.usage(c.Stdout)
			return
		}
		t.commandUsage(c.Stdout, cmd)
	})
	t.root = root
	for _, group := range [][]spec{
		tenantCommands(), datacenterCommands(), wimCommands(), accountCommands(), portMappingCommands(),
		instanceCommands(), catalogueCommands(), actionCommands(), clusterCommands(), reconcileCommands(), auditCommands(), t.clientCommands(),
	} {
		for _, s := range group {
			cmd := t.command(s)
			t.cmds = append(t.cmds, cmd)
			root.AddCommand(cmd)
		}
	}
	for _, cmd := range t.cmds {
		if cmd.Name() == "help" {
			root.SetHelpCommand(cmd)
		}
	}
	return t
}

// command turns a spec into a cobra command.
func (t *tree) command(s spec) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   strings.TrimSpace(s.name + " " + s.args),
		Aliases:               s.aliases,
		Short:                 firstSentence(s.summary),
		Long:                  s.summary,
		DisableFlagsInUseLine: true,
		ValidArgs:             s.valid,
	}
	if s.complete != "" {
		cmd.ValidArgsFunction = t.completeNames(s.complete)
	}
	run := s.setup(cmd.Flags())
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) < s.min || (s.max >= 0 && len(args) > s.max) {
			return &usageError{msg: fmt.Sprintf("wrong number of arguments (%d)\nUsage: openmano %s", len(args), cmd.Use)}
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		sess := &session{c: t.c, g: t.g}
		if !s.offline {
			var err error
			if sess, err = t.c.session(t.g); err != nil {
				return err
			}
		}
		return run(cmd.Context(), sess, args)
	}
	return cmd
}

// firstSentence is the first sentence of a summary, whatever its line
// breaks: the command list shows it whole, never cut at a line's end. A
// sentence ends at a period, ! or ? followed by a capital letter, a quote,
// a flag (--wait ...) or the end ("e.g. source" goes on).
func firstSentence(summary string) string {
	words := strings.Fields(summary)
	for i, w := range words {
		if !strings.HasSuffix(w, ".") && !strings.HasSuffix(w, "!") && !strings.HasSuffix(w, "?") {
			continue
		}
		if i+1 == len(words) {
			break
		}
		if next := words[i+1]; unicode.IsUpper([]rune(next)[0]) || next[0] == '"' || next[0] == '-' {
			return strings.Join(words[:i+1], " ")
		}
	}
	return strings.Join(words, " ")
}

// find is the command called name (or an alias of it).
func (t *tree) find(name string) *cobra.Command {
	for _, cmd := range t.cmds {
		if cmd.Name() == name || cmd.HasAlias(name) {
			return cmd
		}
	}
	return nil
}

// unknownCommand is the usage error of a command name that does not
// exist, with cobra's suggestions of close names.
func (t *tree) unknownCommand(name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := t.root.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return &usageError{msg: msg}
}

const usageHead = `openmano - command line client of wimd (openmano-compatible REST API)

Usage: openmano [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]

Commands:
`

const usageTail = `
Global flags (on every command):
  -v, --verbose        more output; repeatable (-vv, -vvv: the whole answer as YAML)
  -d, --debug          print the HTTP exchange on stderr (Authorization and passwords masked)
  -o, --output FORMAT  table (default), wide (more columns: type, URL, creation time,
                       description), json (the server's answer verbatim) or yaml;
                       with json or yaml, errors are printed on stderr in that format too:
                       {"error": {"code", "type", "description", "field", "exit_status"}}
  --ca-file FILE       CA(s) to trust for an https:// OPENMANO_HOST (env OPENMANO_CA_FILE)
  -h, --help           usage of the command

Environment:
  OPENMANO_HOST    server host (default localhost), or http[s]://host[:port]
  OPENMANO_PORT    server port (default 9090; a port in OPENMANO_HOST wins)
  OPENMANO_CA_FILE PEM file of the CA(s) to trust for https, besides the system's (or --ca-file)
  OPENMANO_TENANT  current tenant, name or uuid (required by tenant-scoped commands)
  OPENMANO_WIM     default WIM of the wim-edit, wim-account-* and wim-port-mapping-* commands
  WIMRO_API_TOKEN  bearer token sent as "Authorization: Bearer ..." (never printed)

A YAML|file argument is a file (YAML, or JSON when named .json or holding
tabs: YAML does not allow tabs for indentation), or inline YAML/JSON
content when it contains '{' or ':'.
Names are sent as typed: the server resolves names and uuids.
Confirmation prompts read stdin; -f/--force skips them.
Warnings of the server (unknown keys it ignored, ...) are printed on stderr.

Exit status:
  0    success (HTTP 200)
  1    the server answered an error; its description is printed on stderr;
       with --wait: a task failed, a link ended in ERROR (or not ACTIVE), or --timeout passed
  2    usage error (unknown command or flag, wrong number of arguments)
  3    connection error: the server could not be reached, or its certificate is not trusted
  4    client error: unreadable file or content, OPENMANO_TENANT or OPENMANO_WIM unset
  5    aborted at a confirmation prompt: nothing was changed
  130  interrupted
`

func (t *tree) usage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, cmd := range t.cmds {
		fmt.Fprintf(w, "  %-25s %s\n", cmd.Name(), cmd.Short)
	}
	fmt.Fprint(w, usageTail)
}

// commandUsage prints the help of one command: every flag as --name.
func (t *tree) commandUsage(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "Usage: openmano %s\n\n%s\n", cmd.Use, cmd.Long)
	if len(cmd.Aliases) > 0 {
		fmt.Fprintf(w, "\nAlias: %s\n", strings.Join(cmd.Aliases, ", "))
	}
	if local := cmd.LocalNonPersistentFlags(); local.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", local.FlagUsages())
	}
	fmt.Fprintf(w, "\nGlobal flags:\n%s", t.root.PersistentFlags().FlagUsages())
}

// splitCommand finds the command name; flags given before it are moved
// after it (so "openmano -f wim-delete x" works as it always did).
func splitCommand(args []string, root *cobra.Command) (name string, rest, lead []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-") && a != "-":
			lead = append(lead, a)
			if takesValue(root.PersistentFlags(), a) && i+1 < len(args) {
				i++
				lead = append(lead, args[i])
			}
		default:
			return a, append(lead, args[i+1:]...), lead
		}
	}
	return "", nil, lead
}

// takesValue says whether the flag argument a (-x, --name or -name) is a
// flag of fs that takes its value from the next argument.
func takesValue(fs *pflag.FlagSet, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	var f *pflag.Flag
	switch {
	case len(a) == 2:
		f = fs.ShorthandLookup(a[1:])
	default:
		f = fs.Lookup(strings.TrimLeft(a, "-"))
	}
	return f != nil && f.NoOptDefVal == ""
}

// normalizeFlags rewrites -name into --name for the long flags of cmd:
// openmano's flags were parsed by Go's flag package, which took both.
// Values of flags are left alone, whatever they look like.
func normalizeFlags(cmd *cobra.Command, args []string) []string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.Root().PersistentFlags())
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if name == "help" || fs.Lookup(name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
		if strings.HasPrefix(a, "-") && (len(a) == 2 || strings.HasPrefix(a, "--")) && takesValue(fs, a) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

func forceFlag(fs *pflag.FlagSet) *bool {
	return fs.BoolP("force", "f", false, "do not ask for confirmation")
}

func allFlag(fs *pflag.FlagSet, help string) *bool {
	return fs.BoolP("all", "a", false, help)
}

// optional sets key in m when the flag was given on the command line.
func optional(fs *pflag.FlagSet, m map[string]any, flagName, key, value string) {
	if fs.Changed(flagName) {
		m[key] = value
	}
}

// clientCommands are the commands about the client itself.
func (t *tree) clientCommands() []spec {
	return []spec{
		{name: "config", summary: "Print the client configuration (environment).", offline: true, setup: setupConfig},
		{name: "version", args: "[--client]", summary: "Print the client's version and the server's (GET /openmano/version); --client: the client's only.\n" +
			"-o json or yaml: {\"client\": {\"version\"}, \"server\": {\"version\"}}.", setup: setupVersion},
		{name: "completion", args: "bash|zsh|fish|powershell", min: 1, max: 1, offline: true, setup: t.setupCompletion,
			valid: []string{"bash", "zsh", "fish", "powershell"},
			summary: "Print the shell completion script, e.g. source <(openmano completion bash)\n" +
				"or openmano completion zsh > \"${fpath[1]}/_openmano\"."},
		{name: "help", args: "[COMMAND]", summary: "Print the usage of openmano or of a command.", max: 1, offline: true, setup: t.setupHelp},
	}
}

func setupConfig(*pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		token := "(unset)"
		if s.c.Getenv("WIMRO_API_TOKEN") != "" {
			token = "(set)"
		}
		for _, kv := range [][2]string{
			{"OPENMANO_HOST", s.c.env("OPENMANO_HOST", "localhost")},
			{"OPENMANO_PORT", s.c.env("OPENMANO_PORT", "9090")},
			{"OPENMANO_TENANT", s.c.Getenv("OPENMANO_TENANT")},
			{"OPENMANO_WIM", s.c.Getenv("OPENMANO_WIM")},
			{"WIMRO_API_TOKEN", token},
		} {
			fmt.Fprintf(s.c.Stdout, "%s: %s\n", kv[0], kv[1])
		}
		return nil
	}
}

func setupVersion(fs *pflag.FlagSet) runFunc {
	clientOnly := fs.Bool("client", false, "the client's version only: no request to the server")
	return func(ctx context.Context, s *session, args []string) error {
		doc := map[string]any{"client": map[string]any{"version": version}}
		var err error
		if !*clientOnly {
			var r *response
			if r, err = s.do(ctx, "GET", seg("version"), nil); err == nil {
				doc["server"] = map[string]any{"version": str(asMap(r.doc)["version"])}
			}
		}
		switch s.g.output {
		case "json":
			b, _ := json.MarshalIndent(doc, "", "    ")
			fmt.Fprintf(s.c.Stdout, "%s\n", b)
		case "yaml":
			s.dumpYAML(doc)
		default:
			fmt.Fprintf(s.c.Stdout, "Client: openmano (wimro) %s\n", version)
			if srv := asMap(doc["server"]); srv != nil {
				fmt.Fprintf(s.c.Stdout, "Server: wimd %s (%s)\n", str(srv["version"]), s.base)
			}
		}
		// The client's version is printed even when the server cannot be
		// reached; the exit status says it could not (like kubectl).
		return err
	}
}

func (t *tree) setupCompletion(*pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		w := s.c.Stdout
		switch args[0] {
		case "bash":
			return t.root.GenBashCompletionV2(w, true)
		case "zsh":
			return t.root.GenZshCompletion(w)
		case "fish":
			return t.root.GenFishCompletion(w, true)
		case "powershell":
			return t.root.GenPowerShellCompletionWithDesc(w)
		}
		return &usageError{msg: fmt.Sprintf("unknown shell %q: bash, zsh, fish or powershell", args[0])}
	}
}

func (t *tree) setupHelp(*pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		if len(args) == 0 {
			t.usage(s.c.Stdout)
			return nil
		}
		cmd := t.find(args[0])
		if cmd == nil {
			return t.unknownCommand(args[0])
		}
		t.commandUsage(s.c.Stdout, cmd)
		return nil
	}
}
