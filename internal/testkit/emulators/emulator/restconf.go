package emulator

import (
	"encoding/json"
	"fmt"
)

// RESTCONFError is one entry of an ietf-restconf:errors reply (RFC 8040
// §7.1), the error format of the RESTCONF emulators (ietfl2vpn, tapi).
// It belongs to the protocol, not to a controller, so it lives here.
type RESTCONFError struct {
	Type    string `json:"error-type"`
	Tag     string `json:"error-tag"`
	AppTag  string `json:"error-app-tag,omitempty"`
	Path    string `json:"error-path,omitempty"`
	Message string `json:"error-message"`
}

// RESTCONFErrors returns the reply body carrying errs.
func RESTCONFErrors(errs ...RESTCONFError) any {
	return map[string]any{"ietf-restconf:errors": map[string]any{"error": errs}}
}

// DecodeRESTCONFErrors reads an ietf-restconf:errors reply body, for tests
// of what an emulator answered.
func DecodeRESTCONFErrors(body []byte) ([]RESTCONFError, error) {
	var doc struct {
		Errors *struct {
			Error []RESTCONFError `json:"error"`
		} `json:"ietf-restconf:errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if doc.Errors == nil {
		return nil, fmt.Errorf("no ietf-restconf:errors member in %q", body)
	}
	return doc.Errors.Error, nil
}
