package main

import (
	"errors"
	"os"
	"strings"

	"github.com/wimro/wimro/internal/yamljson"
)

// loadFileOrYAML is openmano's _load_file_or_yaml: x is a file (JSON when
// named .json, else YAML or, when it holds a tab, JSON: see yamljson), or
// inline YAML/JSON when it contains '{' or ':'.
func loadFileOrYAML(x string) (any, error) {
	if st, err := os.Stat(x); err == nil && !st.IsDir() {
		b, err := os.ReadFile(x)
		if err != nil {
			return nil, cliErrorf("%v", err)
		}
		if strings.HasSuffix(x, ".json") {
			doc, err := yamljson.DecodeJSON(b)
			if err != nil {
				return nil, cliErrorf("%s: invalid JSON: %v", x, err)
			}
			return doc, nil
		}
		doc, err := yamljson.Decode(b)
		var tab *yamljson.TabError
		switch {
		case errors.As(err, &tab):
			return nil, cliErrorf("%s: %v", x, err)
		case err != nil:
			return nil, cliErrorf("%s: invalid YAML: %v", x, err)
		}
		return doc, nil
	}
	if !strings.ContainsAny(x, "{:") {
		return nil, cliErrorf("'%s' is neither a valid file nor a yaml/json content", x)
	}
	doc, err := yamljson.Decode([]byte(x))
	if err != nil {
		return nil, cliErrorf("invalid YAML/JSON content: %v", err)
	}
	return doc, nil
}

// loadConfig reads a --config YAML|file flag: a mapping.
func loadConfig(arg string) (map[string]any, error) {
	doc, err := loadFileOrYAML(arg)
	if err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, cliErrorf("--config: expected a mapping, got %T", doc)
	}
	return m, nil
}
