package dispatch

import (
	"fmt"
	"net/url"
)

// Validate checks a target: exactly one of lambda and url; a url that is
// absolute https:// (http:// too when allowHTTP, in s3q dev) with a host
// and a secret; no secret on a Lambda target. Errors name the field
// (target.lambda, target.url, target.secret).
func (t Target) Validate(allowHTTP bool) error {
	switch {
	case t.Lambda == "" && t.URL == "":
		return fmt.Errorf("dispatch: target: one of lambda and url is required")
	case t.Lambda != "" && t.URL != "":
		return fmt.Errorf("dispatch: target.url: give lambda or url, not both")
	case t.Lambda != "":
		if len(t.Lambda) > 170 {
			return fmt.Errorf("dispatch: target.lambda: longer than 170 characters")
		}
		if t.Secret != "" {
			return fmt.Errorf("dispatch: target.secret: only a url target is signed")
		}
		return nil
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("dispatch: target.url: not an absolute URL: %q", t.URL)
	}
	if u.Scheme != "https" && !(allowHTTP && u.Scheme == "http") {
		return fmt.Errorf("dispatch: target.url: must be https:// (http:// only in s3q dev)")
	}
	if u.User != nil {
		return fmt.Errorf("dispatch: target.url: must not carry credentials")
	}
	if t.Secret == "" {
		return fmt.Errorf("dispatch: target.secret: the SSM parameter holding the signing key is required")
	}
	return nil
}
