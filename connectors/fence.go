package connectors

import "context"

// fenceKey is the context key of WithFence.
type fenceKey struct{}

// WithFence returns ctx carrying check, which a connector runs right
// before each call that changes the controller (Fence): wimd's workers
// give every action one that fails once the process can no longer prove
// it holds the action's account lease and claim (wimthread/doc.go, "What
// a lease guarantees"). check must be cheap; it may cancel ctx.
func WithFence(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, check)
}

// Fence runs the check ctx carries (WithFence); nil when it carries none.
// A connector calls it right before every request that changes the
// controller, and sends nothing when it fails.
func Fence(ctx context.Context) error {
	if check, ok := ctx.Value(fenceKey{}).(func() error); ok && check != nil {
		return check()
	}
	return nil
}
