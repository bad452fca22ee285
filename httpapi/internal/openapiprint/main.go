// Command openapiprint writes wimd's OpenAPI document to standard output,
// without a database, for scripts/openapi-lint.sh.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
)

func main() {
	// The routes and their types make the document: an engine without a
	// store serves to build them.
	doc := httpapi.New(engine.New(nil, nil, nil), httpapi.Options{Version: "lint"}).OpenAPI()
	out, err := json.MarshalIndent(doc, "", "  ")
	if err == nil {
		_, err = os.Stdout.Write(append(out, '\n'))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapiprint:", err)
		os.Exit(1)
	}
}
