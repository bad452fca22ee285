package engine

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/wimro/wimro"
)

// Field rules of openmano's JSON schemas, kept as plain checks so every
// failure names its field.
var (
	namePattern        = regexp.MustCompile(`^[^,;()'"]+$`)
	descriptionPattern = regexp.MustCompile(`^[^'"]*$`)
	dpidPattern        = regexp.MustCompile(`^[0-9a-zA-Z]+(:[0-9a-zA-Z]+)*$`)
)

// checkText refuses what PostgreSQL cannot store as text (NUL, invalid
// UTF-8): the transport checks every request, this keeps every other
// caller of the engine to the same rule.
func checkText(field, v string) error {
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return wimro.FieldErrorf(field, "%s must be valid UTF-8 without NUL", field)
	}
	return nil
}

func checkName(field, v string, max int) error {
	if v == "" {
		return wimro.FieldErrorf(field, "%s is required", field)
	}
	if err := checkText(field, v); err != nil {
		return err
	}
	if utf8.RuneCountInString(v) > max {
		return wimro.FieldErrorf(field, "%s must be at most %d characters", field, max)
	}
	if !namePattern.MatchString(v) {
		return wimro.FieldErrorf(field, `%s must not contain any of , ; ( ) ' "`, field)
	}
	return nil
}

func checkDescription(field string, v *string) error {
	if v == nil {
		return nil
	}
	if err := checkText(field, *v); err != nil {
		return err
	}
	if utf8.RuneCountInString(*v) > 255 {
		return wimro.FieldErrorf(field, "%s must be at most 255 characters", field)
	}
	if !descriptionPattern.MatchString(*v) {
		return wimro.FieldErrorf(field, `%s must not contain quotes`, field)
	}
	return nil
}

// cleanURL trims what copy-paste leaves around a URL (OSM 7.1 did the same
// after users hit it).
func cleanURL(v string) string {
	return strings.TrimRight(strings.TrimSpace(v), "/")
}

func checkURL(field, v string) error {
	if v == "" {
		return wimro.FieldErrorf(field, "%s is required", field)
	}
	if len(v) > 1024 {
		return wimro.FieldErrorf(field, "%s must be at most 1024 characters", field)
	}
	if !strings.Contains(v, "://") {
		return wimro.FieldErrorf(field, "%s must be an absolute URL such as http://host:port", field)
	}
	return nil
}

// mergeConfig shallow-merges patch into base: keys set to null are
// removed. An empty result is nil (stored as NULL).
func mergeConfig(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(patch))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
