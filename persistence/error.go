package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wimro/wimro"
)

// PostgreSQL error codes that carry domain meaning.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgCheckViolation      = "23514"
	pgNotNullViolation    = "23502"
	pgInvalidText         = "22P02"
	pgStringTooLong       = "22001"
)

var (
	uniqueDetail     = regexp.MustCompile(`^Key \((.+)\)=\((.*)\) already exists\.?$`)
	referencedDetail = regexp.MustCompile(`^Key \((.+)\)=\((.*)\) is still referenced from table`)
)

// mapError turns a PostgreSQL or connection error into a *wimro.Error with
// the matching code, keeping the original as the cause. Errors that already
// carry a code, and context cancellations, pass through.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var we *wimro.Error
	if errors.As(err, &we) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &wimro.Error{Code: wimro.ENOTFOUND, Message: "No record was found in the database.", Err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgUniqueViolation:
			msg := "Value already in use"
			if m := uniqueDetail.FindStringSubmatch(pgErr.Detail); m != nil {
				msg = fmt.Sprintf("Value '%s' already in use for '%s'", m[2], m[1])
			}
			if pgErr.TableName != "" {
				msg += fmt.Sprintf(" (table `%s`)", pgErr.TableName)
			}
			return &wimro.Error{Code: wimro.ECONFLICT, Message: msg, Err: err}
		case pgForeignKeyViolation:
			if strings.Contains(pgErr.Detail, "is still referenced") {
				return &wimro.Error{Code: wimro.ECONFLICT, Message: "Resource is not free. There are dependencies that prevent deleting it: " + pgErr.Detail, Err: err}
			}
			return &wimro.Error{Code: wimro.ENOTFOUND, Message: "Referenced record does not exist: " + pgErr.Detail, Err: err}
		case pgCheckViolation, pgNotNullViolation, pgInvalidText, pgStringTooLong:
			return &wimro.Error{Code: wimro.EINVALID, Message: fmt.Sprintf("Invalid value (%s)", firstNonEmpty(pgErr.ConstraintName, pgErr.ColumnName, pgErr.Message)), Err: err}
		}
		if strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300" {
			return &wimro.Error{Code: wimro.EUNAVAILABLE, Message: "Database unavailable. Try again.", Err: err}
		}
		return &wimro.Error{Code: wimro.EINTERNAL, Message: "Internal database error.", Err: err}
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	// An EOF is the server closing the connection under a statement: an
	// immediate shutdown ends a backend that is busy sending rows without
	// a FATAL message (no SQLSTATE), and pgx reads an unexpected EOF.
	if errors.As(err, &netErr) || errors.As(err, &connErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &wimro.Error{Code: wimro.EUNAVAILABLE, Message: "Database unavailable. Try again.", Err: err}
	}
	return err
}

// Refused reports whether the database refused the statement itself (bad
// data, a constraint, a statement it cannot run): the same write would be
// refused again. Anything else (the server away, a cut connection, a
// timeout) may pass when tried again.
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "42", "54", "2B", "XX":
		return true
	}
	return false
}

// Constraint returns the name of the PostgreSQL constraint that err
// violated, or "". The engine uses it to turn a generic conflict into a
// specific message (e.g. a tenant already attached to a WIM).
func Constraint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// ReferencedKey returns the key of the row that a refused delete could not
// remove because other rows still reference it (through a cascade, that
// may be another row than the one the caller deleted), or "".
func ReferencedKey(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgForeignKeyViolation {
		if m := referencedDetail.FindStringSubmatch(pgErr.Detail); m != nil {
			return m[2]
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

var urlPassword = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)

// redactParseError removes a password that a URL parse error may quote.
func redactParseError(err error) string {
	return urlPassword.ReplaceAllString(err.Error(), "${1}xxxxx@")
}
