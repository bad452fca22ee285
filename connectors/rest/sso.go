package rest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/connectors"
)

// AuthCrosswork is setting auth's value for Cisco Crosswork's single
// sign-on: the account's user and password buy a ticket-granting ticket
// (POST /crosswork/sso/v1/tickets), the ticket a JWT (POST
// /crosswork/sso/v2/tickets/jwt), and the JWT is every request's bearer
// token. Crosswork answers an expired or refused JWT with 401 or 403: the
// request is then sent once more with a fresh one.
const AuthCrosswork = "crosswork"

// sso holds the Crosswork tickets of one client.
type sso struct {
	origin string // scheme://host:port of the WIM URL

	mu       sync.Mutex
	tgt, jwt string
}

func newSSO(base string) *sso {
	u, _ := url.Parse(base) // New checked it
	return &sso{origin: u.Scheme + "://" + u.Host}
}

// secrets are the tickets held, to mask in error texts.
func (s *sso) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, x := range []string{s.tgt, s.jwt} {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// token returns the JWT, asking Crosswork for one when none is held;
// stale is one a server refused, dropped first (with its ticket when it
// was already fresh: the ticket has expired too).
func (s *sso) token(ctx context.Context, c *Client, op, stale string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stale != "" && s.jwt == stale {
		s.jwt = ""
	}
	if s.jwt != "" {
		return s.jwt, nil
	}
	for attempt := 0; ; attempt++ {
		if s.tgt == "" {
			tgt, err := s.post(ctx, c, op, "/crosswork/sso/v1/tickets", url.Values{"username": {c.user}, "password": {c.password}})
			if err != nil {
				return "", err
			}
			s.tgt = tgt
		}
		jwt, err := s.post(ctx, c, op, "/crosswork/sso/v2/tickets/jwt", url.Values{"tgt": {s.tgt}, "service": {s.origin + "/app-dashboard"}})
		if err == nil {
			s.jwt = jwt
			return jwt, nil
		}
		// An expired ticket is refused: one new ticket is worth a try.
		s.tgt = ""
		if attempt > 0 || connectors.KindOf(err) != connectors.KindUnauthorized {
			return "", err
		}
	}
}

// post sends one SSO form and returns the ticket the text answer is. It
// changes nothing on the controller: it is not fenced.
func (s *sso) post(ctx context.Context, c *Client, op, path string, form url.Values) (string, error) {
	op += ": crosswork sso"
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.origin+path, strings.NewReader(form.Encode()))
	if err != nil {
		return "", connectors.Errorf(connectors.KindPermanent, "%s %s: building the request: %v", c.name, op, err)
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "text/plain")
	hr.Header.Set("User-Agent", c.agent)
	resp, err := c.http.Do(hr)
	if err != nil {
		return "", connectors.Errorf(connectors.KindOf(err), "%s %s: POST %s: %v", c.name, op, path, stripURL(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxReply))
	if err != nil {
		return "", connectors.Errorf(connectors.KindOf(err), "%s %s: reading the reply: %v", c.name, op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// s.mu is held: the tickets are masked here, not by c.mask.
		detail := Snippet([]byte(c.maskWith(string(b), s.tgt, s.jwt)))
		e := connectors.HTTPError(resp.StatusCode, "%s %s: POST %s: HTTP %d: %s", c.name, op, path, resp.StatusCode, detail)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			e.RetryAfter = RetryAfter(resp.Header, time.Now())
		}
		return "", e
	}
	ticket := strings.TrimSpace(string(b))
	if ticket == "" || strings.ContainsAny(ticket, " \t\r\n<>{}\"") {
		return "", connectors.Errorf(connectors.KindPermanent, "%s %s: POST %s: HTTP %d without a ticket: not a Crosswork SSO", c.name, op, path, resp.StatusCode)
	}
	return ticket, nil
}
