package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/secret"
)

// Secrets besides account passwords: the password in a wim_url's user
// info and the connector settings of secret.ConfigKeys (bearer_token), in
// WIM and account configs. They are sealed with the engine's box when
// written, shown as Masked in every answer, and opened only for the
// settings check and by accountconn (for the workers, the credentials
// check and reconcile). A value sent back as Masked keeps
// the stored one. Values stored in clear by an older wimd are used as is
// and sealed on the next write of their row.

// refuseSealed refuses secrets a client sends already sealed (the wim_url
// password, the secret settings of config). Only wimd seals: a sealed
// value copied from another row would otherwise be opened and handed to
// the controller this body names, another WIM's secret included.
func refuseSealed(prefix string, url *string, cfg map[string]any) error {
	if url != nil {
		if pw, ok := secret.URLPassword(*url); ok && secret.IsSealed(pw) {
			return wimro.FieldErrorf(prefix+"wim_url", "%swim_url: the password is a sealed value, which only wimd writes: send the password itself", prefix)
		}
	}
	for _, k := range secret.ConfigKeys {
		if v, ok := cfg[k].(string); ok && secret.IsSealed(v) {
			return wimro.FieldErrorf(prefix+"config."+k, "%sconfig.%s is a sealed value, which only wimd writes: send the secret itself", prefix, k)
		}
	}
	return nil
}

// maskWIM returns w as answers show it: its secrets masked.
func maskWIM(w wimro.WIM) wimro.WIM {
	w.URL = secret.MaskURL(w.URL)
	w.Config = secret.MaskConfig(w.Config)
	return w
}

// sealWIM seals the secrets of w.
func (e *Engine) sealWIM(w *wimro.WIM) error {
	u, err := e.box.SealURL(w.URL)
	if err != nil {
		return fmt.Errorf("seal wim_url: %w", err)
	}
	cfg, err := e.box.SealConfig(w.Config)
	if err != nil {
		return fmt.Errorf("seal WIM config: %w", err)
	}
	w.URL, w.Config = u, cfg
	return nil
}

// openSecrets returns w and accountConfig with their secrets opened, for
// the settings check of what is written (accountconn opens those of
// stored accounts).
func (e *Engine) openSecrets(w wimro.WIM, accountConfig map[string]any) (wimro.WIM, map[string]any, error) {
	var err error
	w.URL, w.Config, accountConfig, err = e.box.OpenConnector(w.URL, w.Config, accountConfig)
	return w, accountConfig, err
}

// ErrSecretKeyMismatch means the secret key does not open the secrets the
// database holds: every password, bearer token and wim_url password would
// be unreadable, so wimd refuses to start rather than run with them lost.
var ErrSecretKeyMismatch = errors.New("the secret key does not open the secrets stored in the database")

// CheckSecretKey opens one stored account password and one other stored
// secret with the engine's keys, and checks that every key id the stored
// secrets name is one the engine holds (a key retired before every secret
// was re-sealed away from it would leave them unreadable). A database
// with no secrets passes.
func (e *Engine) CheckSecretKey(ctx context.Context) error {
	password, sealed, err := e.db.SealedSamples(ctx, secret.SealedPrefix)
	if err != nil {
		return err
	}
	if len(password) > 0 {
		if _, err := e.box.Open(password); err != nil {
			return fmt.Errorf("%w (an account password: %v)", ErrSecretKeyMismatch, err)
		}
	}
	if sealed != "" {
		if _, err := e.box.OpenString(sealed); err != nil {
			return fmt.Errorf("%w (a WIM or account setting: %v)", ErrSecretKeyMismatch, err)
		}
	}
	counts, err := e.SealedCounts(ctx)
	if err != nil {
		return err
	}
	for id, n := range counts {
		if id != Unsealed && id != secret.Legacy && !slices.Contains(e.box.KeyIDs(), id) {
			return fmt.Errorf("%w (%d sealed with key %s; this process holds %s)", ErrSecretKeyMismatch, n, id, strings.Join(e.box.KeyIDs(), ", "))
		}
	}
	return nil
}
