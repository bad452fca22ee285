package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// IdempotencyKeyHeader makes a POST safe to retry (the IETF httpapi
// draft "The Idempotency-Key HTTP Header Field"): an NFVO that timed out
// and sent its create again used to get a second instance.
const IdempotencyKeyHeader = "Idempotency-Key"

// replayedHeader marks an answer replayed from a key's first request.
const replayedHeader = "Idempotent-Replayed"

// idempotent runs next once per Idempotency-Key. The first request with a
// key claims it (a row in the database, so every wimd of a cluster
// agrees), runs, and its 200 answer is stored; a failed one frees the key.
// A request with a held key and the same method, path and body gets the
// stored answer, or 409 while the first still runs; with another request
// it gets 422. A key is its client's: keys are held per token id
// (tokenID; "" when the server has no token), so another client's request
// with the same key is a request of its own. Without the header, next
// runs as usual.
func (a *api) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(IdempotencyKeyHeader)
		if key == "" {
			next(w, r)
			return
		}
		if len(key) > 255 || strings.IndexFunc(key, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0 {
			a.srv.Error(w, r, wimro.FieldErrorf(IdempotencyKeyHeader, "the %s header must be 1 to 255 printable ASCII characters", IdempotencyKeyHeader))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				a.srv.Error(w, r, &statusError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Request body larger than %d bytes.", tooBig.Limit)})
				return
			}
			a.srv.Error(w, r, wimro.Errorf(wimro.EINVALID, "cannot read the request body: %v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h := sha256.New()
		fmt.Fprintf(h, "%s\n%s\n%s\n", r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"))
		h.Write(body)
		fp := h.Sum(nil)
		principal := tokenID(r)
		held, claimed, err := a.eng.ClaimIdempotencyKey(r.Context(), principal, key, fp)
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		if !claimed {
			switch {
			case !bytes.Equal(held.Fingerprint, fp):
				a.srv.Error(w, r, &statusError{status: http.StatusUnprocessableEntity, field: IdempotencyKeyHeader,
					msg: fmt.Sprintf("%s %q was used with another request (method, path or body): use a new key", IdempotencyKeyHeader, key)})
			case held.Status == 0:
				w.Header().Set("Retry-After", "1")
				a.srv.Error(w, r, &statusError{status: http.StatusConflict, field: IdempotencyKeyHeader,
					msg: fmt.Sprintf("a request with %s %q is still running: retry later to get its answer", IdempotencyKeyHeader, key)})
			default:
				for _, v := range held.Warnings {
					w.Header().Add("Warning", v)
				}
				w.Header().Set("Content-Type", held.ContentType)
				w.Header().Set(replayedHeader, "true")
				w.WriteHeader(held.Status)
				w.Write(held.Body)
			}
			return
		}
		rec := &recorder{ResponseWriter: w}
		next(rec, r)
		// The answer is sent: what is left must land even if the client
		// has gone.
		ctx := context.WithoutCancel(r.Context())
		if rec.status == http.StatusOK {
			err = a.eng.StoreIdempotentAnswer(ctx, principal, key, engine.IdempotentAnswer{Status: rec.status,
				ContentType: rec.Header().Get("Content-Type"), Body: rec.body.Bytes(), Warnings: rec.Header().Values("Warning")})
		} else {
			err = a.eng.ReleaseIdempotencyKey(ctx, principal, key)
		}
		if err != nil {
			// The key stays pending: its retries are answered 409 until it
			// is taken over as stale.
			a.srv.logger.Error("idempotency key not settled", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
		}
	}
}

// recorder passes an answer through and keeps a copy of its status and
// body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
