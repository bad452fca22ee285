package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// accountCommands are the commands of WIM accounts (a tenant attached to a WIM).
func accountCommands() []spec {
	return []spec{
		{name: "wim-account-create", complete: "wim", args: "[WIM] [--account-name N] [--user U] [--password P|--password-stdin] [--config YAML|file]",
			summary: "Attach OPENMANO_TENANT to a WIM through a new account. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountCreate},
		{name: "wim-account-edit", complete: "wim", args: "[WIM] [--account-name N] [--user U] [--password P|--password-stdin] [--config YAML|file] [-a]",
			summary: "Edit the account attaching OPENMANO_TENANT (every tenant with -a) to a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountEdit},
		{name: "wim-account-delete", complete: "wim", args: "[WIM] [-a] [-f]", summary: "Detach OPENMANO_TENANT (every tenant with -a) from a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountDelete},
	}
}

// accountFlags defines the fields of a wim_account body.
func accountFlags(fs *pflag.FlagSet) func(s *session) (map[string]any, error) {
	name := fs.String("account-name", "", "name of the account (server default: the tenant's name)")
	user := fs.String("user", "", "user on the WIM controller")
	password := fs.String("password", "", "password on the WIM controller (stored sealed; never printed); prefer --password-stdin: a flag shows in ps and the shell's history")
	passwordStdin := fs.Bool("password-stdin", false, "read the password from stdin (its first line), e.g. from a file or a secret manager")
	config := fs.String("config", "", "account config as inline YAML/JSON or a file (connector settings)")
	return func(s *session) (map[string]any, error) {
		a := map[string]any{}
		optional(fs, a, "account-name", "name", *name)
		optional(fs, a, "user", "user", *user)
		optional(fs, a, "password", "password", *password)
		if *passwordStdin {
			if fs.Changed("password") {
				return nil, &usageError{msg: "--password and --password-stdin are exclusive"}
			}
			pw, err := readPassword(s.c.Stdin)
			if err != nil {
				return nil, err
			}
			a["password"] = pw
		}
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return nil, err
			}
			a["config"] = m
		}
		return a, nil
	}
}

func setupAccountCreate(fs *pflag.FlagSet) runFunc {
	body := accountFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		a, err := body(s)
		if err != nil {
			return err
		}
		t, wim, err := s.tenantWIM(false, args)
		if err != nil {
			return err
		}
		return s.call(ctx, "POST", seg(t, "wims", wim), map[string]any{"wim_account": a}, nil)
	}
}

func setupAccountEdit(fs *pflag.FlagSet) runFunc {
	body := accountFlags(fs)
	all := allFlag(fs, "edit the accounts of every tenant attached to the WIM")
	return func(ctx context.Context, s *session, args []string) error {
		a, err := body(s)
		if err != nil {
			return err
		}
		if len(a) == 0 {
			return &usageError{msg: "At least one argument must be provided to modify the wim account: --account-name, --user, --password, --password-stdin or --config"}
		}
		t, wim, err := s.tenantWIM(*all, args)
		if err != nil {
			return err
		}
		return s.call(ctx, "PUT", seg(t, "wims", wim), map[string]any{"wim_account": a}, nil)
	}
}

func setupAccountDelete(fs *pflag.FlagSet) runFunc {
	all := allFlag(fs, "detach every tenant from the WIM")
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, wim, err := s.tenantWIM(*all, args)
		if err != nil {
			return err
		}
		q := fmt.Sprintf("Detach wim %s from tenant %s", wim, t)
		if *all {
			q = fmt.Sprintf("Detach wim %s from every tenant", wim)
		}
		if err := s.confirm(*force, q); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg(t, "wims", wim), nil, nil)
	}
}

// readPassword is the first line of r without its line end: what
// "echo pw |", "< file" or a secret manager's pipe give. An empty one is
// refused rather than sent as "".
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", cliErrorf("--password-stdin: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", cliErrorf("--password-stdin: stdin holds no password")
	}
	return line, nil
}
