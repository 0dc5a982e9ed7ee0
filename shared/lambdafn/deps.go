package lambdafn

import (
	"context"
	"io"

	"github.com/s3q/s3q/shared/config"
)

// DepsFromConfig builds the Deps of a function from its configuration: the
// store and queue it describes and a JSON logger writing to w (os.Stdout
// in Lambda, where CloudWatch Logs picks it up). Sweep and Tick are left
// for the caller to wire.
func DepsFromConfig(ctx context.Context, c config.Config, w io.Writer) (Deps, error) {
	s, q, err := c.Open(ctx)
	if err != nil {
		return Deps{}, err
	}
	return Deps{Queue: q, Store: s, Logger: c.Logger(w)}, nil
}
