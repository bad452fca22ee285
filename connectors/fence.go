package connectors

import "context"

// fenceKey is the context key of WithFence.
type fenceKey struct{}

// WithFence returns ctx carrying check, which is run right before each
// call that changes the controller (Fence): wimd's workers give every
// action one that fails once the process can no longer prove it holds
// the action's account lease and claim (wimthread/doc.go, "What a lease
// guarantees"). check must be cheap and safe to call from any goroutine;
// it may cancel ctx.
func WithFence(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, check)
}

// Fence runs the check ctx carries (WithFence); nil when it carries none.
// It runs where a change could still be stopped: in the account's
// connector wrapper before each create, edit or delete (wimthread), when
// the rest client's Do starts a POST, PUT, PATCH or DELETE, and, last and
// decisive, in the Write of the connection as that request's first byte
// is about to leave (connectors/rest), after whatever the request waited
// for (a pooled connection, a dial, a TLS handshake, a proxy). A change
// to a controller sent any other way must be fenced as closely. Nothing
// is sent when it fails.
func Fence(ctx context.Context) error {
	if check, ok := ctx.Value(fenceKey{}).(func() error); ok && check != nil {
		return check()
	}
	return nil
}
