package emulator

import (
	"encoding/json"
	"testing"
)

func TestRESTCONFErrors(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(RESTCONFErrors(RESTCONFError{Type: "application", Tag: "data-exists", Path: "/a:b"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"data-exists","error-path":"/a:b","error-message":""}]}}`
	if string(b) != want {
		t.Fatalf("body = %s, want %s", b, want)
	}
	errs, err := DecodeRESTCONFErrors(b)
	if err != nil || len(errs) != 1 || errs[0].Tag != "data-exists" || errs[0].Path != "/a:b" || errs[0].AppTag != "" {
		t.Fatalf("decode = %+v, %v", errs, err)
	}
	for _, bad := range []string{`{"code":400}`, `not json`} {
		if _, err := DecodeRESTCONFErrors([]byte(bad)); err == nil {
			t.Errorf("DecodeRESTCONFErrors(%q) accepted it", bad)
		}
	}
}
