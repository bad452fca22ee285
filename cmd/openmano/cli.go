package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit statuses. openmano used the HTTP status (which does not fit in a
// byte: 404 became 148) and negative numbers (which became 251..255); this
// client uses a small fixed table instead, printed by "openmano help".
const (
	exitOK          = 0   // the server answered 200
	exitServer      = 1   // the server answered an error; its description is on stderr
	exitUsage       = 2   // bad command line
	exitConnection  = 3   // the server could not be reached
	exitCLI         = 4   // client-side error: unreadable file, OPENMANO_TENANT unset, ...
	exitAborted     = 5   // a confirmation prompt was declined: nothing was changed
	exitInterrupted = 130 // Ctrl-C / SIGTERM
)

// CLI is the openmano command line: a testable type with injected streams,
// environment and HTTP client; main only wires it to the process.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	Getenv func(string) string
	HTTP   *http.Client // nil: a client with a 2 minute timeout
	// Name is the name the binary was invoked as (os.Args[0]'s base):
	// the completion scripts complete that command. "" is openmano.
	Name string
	// Now is the clock of the AGE column; nil is time.Now.
	Now func() time.Time
}

func (c *CLI) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// usageError is a bad command line. hint replaces the "Run ... --help"
// line printed after it.
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

type cliError struct{ msg string }

func (e *cliError) Error() string { return e.msg }

func cliErrorf(format string, a ...any) error { return &cliError{msg: fmt.Sprintf(format, a...)} }

type connError struct {
	addr string
	err  error
}

func (e *connError) Error() string {
	msg := fmt.Sprintf("Connection error: not possible to contact OPENMANO-SERVER (wimd) at %s: %v", e.addr, e.err)
	if untrustedCertificate(e.err) {
		msg += "\nThe server's certificate is not trusted: give the CA that signed it with --ca-file or OPENMANO_CA_FILE."
	}
	return msg
}

func (e *connError) Unwrap() error { return e.err }

// untrustedCertificate says whether err is a failed verification of the
// server's certificate.
func untrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// apiError is a non-200 answer of the server: its status and the fields
// of its {"error": {...}} body (desc falls back to the status line and the
// body's text).
type apiError struct {
	status    int
	errorType string
	desc      string
	field     string
	// retryAfter is the answer's Retry-After in seconds (429, 503); -1
	// when it has none.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.desc }

var errAborted = errors.New("Aborted")

// Run runs the command in args and returns the process exit status.
func (c *CLI) Run(ctx context.Context, args []string) int {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Stdin == nil {
		c.Stdin = strings.NewReader("")
	}
	format := outputFormat(args)
	t := c.newTree()
	if len(args) > 0 && strings.HasPrefix(args[0], "__complete") {
		// cobra's hidden command, run by the completion scripts.
		t.root.SetArgs(args)
		return c.exit("", format, t.root.ExecuteContext(ctx))
	}
	name, cmdArgs, lead := splitCommand(args, t.root)
	if name == "" {
		for _, a := range lead {
			switch a {
			case "-h", "--help", "-help":
				t.usage(c.Stdout)
				return exitOK
			case "--version", "-version":
				fmt.Fprintf(c.Stdout, "openmano (wimro) %s\n", version)
				return exitOK
			}
		}
		t.usage(c.Stderr)
		return exitUsage
	}
	cmd := t.find(name)
	if cmd == nil {
		return c.exit("", format, t.unknownCommand(name))
	}
	t.root.SetArgs(append([]string{name}, normalizeFlags(cmd, cmdArgs)...))
	return c.exit(cmd.Name(), format, t.root.ExecuteContext(ctx))
}

// exit prints err (as text, or as an error document with -o json or
// yaml) and returns the exit status it stands for.
func (c *CLI) exit(name, format string, err error) int {
	if err == nil {
		return exitOK
	}
	status, doc, text := describe(name, err)
	if format == "json" || format == "yaml" {
		printErrorDoc(c.Stderr, format, doc)
	} else {
		fmt.Fprintln(c.Stderr, text)
	}
	return status
}

// describe gives the exit status of err, its error document and its text.
func describe(name string, err error) (int, errorDoc, string) {
	var ue *usageError
	var ce *connError
	var ae *apiError
	var we *waitError
	switch {
	case errors.As(err, &we):
		return exitServer, errorDoc{Type: "wait", Description: we.msg, ExitStatus: exitServer}, we.msg
	case errors.As(err, &ue):
		prefix, hint := "openmano "+name, fmt.Sprintf("Run 'openmano %s --help' for usage.", name)
		if name == "" {
			prefix, hint = "openmano", "Run 'openmano help' for the list of commands."
		}
		if ue.hint != "" {
			hint = ue.hint
		}
		return exitUsage, errorDoc{Type: "usage", Description: ue.msg, ExitStatus: exitUsage}, prefix + ": " + ue.msg + "\n" + hint
	case errors.Is(err, errAborted):
		return exitAborted, errorDoc{Type: "aborted", Description: "Aborted", ExitStatus: exitAborted}, "Aborted"
	case errors.Is(err, context.Canceled):
		return exitInterrupted, errorDoc{Type: "interrupted", Description: "Interrupted", ExitStatus: exitInterrupted}, "Interrupted"
	case errors.As(err, &ce):
		return exitConnection, errorDoc{Type: "connection", Description: ce.Error(), ExitStatus: exitConnection}, ce.Error()
	case errors.As(err, &ae):
		return exitServer, errorDoc{Code: ae.status, Type: ae.errorType, Description: ae.desc, Field: ae.field, ExitStatus: exitServer}, ae.desc
	}
	return exitCLI, errorDoc{Type: "client", Description: err.Error(), ExitStatus: exitCLI}, err.Error()
}

// outputFormat is the -o/--output value in args (the last one wins), for
// errors met before or while the flags are parsed.
func outputFormat(args []string) string {
	format := "table"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return format
		case a == "-o" || a == "--output" || a == "-output":
			if i+1 < len(args) {
				i++
				format = args[i]
			}
		case strings.HasPrefix(a, "--output="), strings.HasPrefix(a, "-output="), strings.HasPrefix(a, "-o="):
			_, format, _ = strings.Cut(a, "=")
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "-output"):
			format = a[2:]
		}
	}
	return format
}

// confirm asks a yes/no question on stderr and reads the answer from stdin;
// anything but an answer starting with y is errAborted.
func (s *session) confirm(force bool, question string) error {
	if force {
		return nil
	}
	fmt.Fprintf(s.c.Stderr, "%s (y/N)? ", question)
	line, _ := bufio.NewReader(s.c.Stdin).ReadString('\n')
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
		return nil
	}
	return errAborted
}
